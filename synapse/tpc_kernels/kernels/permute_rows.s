// permute_rows.s: permute_view.s for rows of one vector (dim 0 of Y fits one vector, as in BERT's
// heads permute [64, S, H, B]). A row-at-a-time nest would pay its row set-up and a prefetch
// start for every vector; here the innermost loop walks dim 1 instead, one vector per pass, and
// the reads are prefetched ahead in one of two ways, chosen once by the rows of a dim-3 pass
// (this core's dim-1 range x its dim-2 range):
// - Pass ahead (a pass of at most ROWS_AHEAD rows, as when the cores split BERT's 128 tokens:
//   6 x 12 rows): each row prefetches the same row of the next dim-3 pass (none on the last), and
//   the first pass of a dim-4 step is prefetched before it starts. Three bundles a row, no wrap.
// - Rows ahead (longer passes): the prefetch pointer I7 runs ROWS_AHEAD rows ahead, wrapping from
//   the end of this core's dim-1 range to the next dim-2 coordinate, so reads stay in flight
//   across rows and dim-2 steps; each dim-3 pass starts by prefetching its first rows.
//
// Tensors: 0 X (the permuted view), 1 Y. The prelude defines ROWS_AHEAD.
// Registers: I2 the current vector, I7 the prefetch coordinates; S16 scratch, S17 S18 the warm-up
// count (S18 first the rows of a pass), S19 scratch; SP2 the mode, SP3 the wrap, SP4 a next pass.
.macro RANGE dim, start, end
        iget_dim \start, I0 dim=\dim
        iget_dim \end, I1 dim=\dim
        add.i32 \end, \end, \start
.endm

// I7 one row on, to the next dim-2 coordinate past the range's end (after `iadd_dim I7, 1 dim=1`
// and a bundle whose SPU slot reads I7's dim 1 into S16).
.macro WRAP_I7
        cmp.ge.i32 SP3, S16, S29
        imov_dim I7, S28 dim=1 @SP3
        iadd_dim I7, 1 dim=2 @SP3
.endm

        ispace_offset I0
        ispace_size I1
        RANGE 4, S20, S21
        RANGE 3, S22, S23
        RANGE 2, S25, S26
        RANGE 1, S28, S29
        iget_dim S31, I0 dim=0
        mul.i32 S34, S31, LANES
        imov I2, 0
        imov_dim I2, S34 dim=0
        sub.i32 S18, S29, S28
        sub.i32 S19, S26, S25
        mul.i32 S18, S18, S19
        cmp.le.i32 SP2, S18, ROWS_AHEAD
        jmp pass_d4 @SP2
        ld_smov S18, ROWS_AHEAD
nest_d4:
        cmp.ge.i32 SP1, S20, S21
        jmp nest_done @SP1
        imov_dim I2, S20 dim=4; ld_smov S24, S22
        loop S24, S23, end_d3
        imov_dim I2, S24 dim=3; ld_smov S27, S25
        imov I7, I2
        imov_dim I7, S25 dim=2
        imov_dim I7, S28 dim=1; ld_smov S17, 0
        loop S17, S18, warm_end
        prefetch I7, 0; iadd_dim I7, 1 dim=1
        iget_dim S16, I7 dim=1
        cmp.ge.i32 SP3, S16, S29
        imov_dim I7, S28 dim=1 @SP3
warm_end: iadd_dim I7, 1 dim=2 @SP3
        loop S27, S26, end_d2
        imov_dim I2, S27 dim=2; ld_smov S30, S28
        imov_dim I2, S28 dim=1
        loop S30, S29, end_d1
        prefetch I7, 0; iadd_dim I7, 1 dim=1
        ld_tnsr V1, I2, 0; iget_dim S16, I7 dim=1
        WRAP_I7
end_d1: st_tnsr I2, 1, V1; iadd_dim I2, 1 dim=1
end_d2: nop
end_d3: nop
        add.i32 S20, S20, 1
        jmp nest_d4

pass_d4:
        cmp.ge.i32 SP1, S20, S21
        jmp nest_done @SP1
        imov_dim I2, S20 dim=4; ld_smov S24, S22
        imov I7, I2
        imov_dim I7, S22 dim=3; ld_smov S27, S25
        loop S27, S26, first_d2
        imov_dim I7, S27 dim=2; ld_smov S30, S28
        loop S30, S29, first_d1
        imov_dim I7, S30 dim=1
first_d1: prefetch I7, 0
first_d2: nop
        loop S24, S23, pass_d3
        imov_dim I2, S24 dim=3; ld_smov S27, S25
        add.i32 S19, S24, 1
        cmp.lt.i32 SP4, S19, S23
        loop S27, S26, pass_d2
        imov_dim I2, S27 dim=2; ld_smov S30, S28
        imov_dim I2, S28 dim=1
        imov I7, I2
        iadd_dim I7, 1 dim=3
        loop S30, S29, pass_d1
        prefetch I7, 0 @SP4; iadd_dim I7, 1 dim=1
        ld_tnsr V1, I2, 0
pass_d1: st_tnsr I2, 1, V1; iadd_dim I2, 1 dim=1
pass_d2: nop
pass_d3: nop
        add.i32 S20, S20, 1
        jmp pass_d4
nest_done:
        halt
