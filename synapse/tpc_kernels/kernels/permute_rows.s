// permute_rows.s: permute_view.s for rows of one vector (dim 0 of Y fits one vector, as in BERT's
// heads permute [64, S, H, B]). A row-at-a-time nest would pay its row set-up and a prefetch
// start for every vector; here the innermost loop walks dim 1 instead, one vector per pass, and
// the prefetch pointer I7 runs ROWS_AHEAD rows ahead, wrapping from the end of this core's dim-1
// range to the next dim-2 coordinate, so reads stay in flight across rows and dim-2 steps.
//
// Tensors: 0 X (the permuted view), 1 Y. The prelude defines ROWS_AHEAD.
// Registers: I2 the current vector, I7 the prefetch coordinates; S16 scratch, SP3 the wrap.
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
nest_d4:
        cmp.ge.i32 SP1, S20, S21
        jmp nest_done @SP1
        imov_dim I2, S20 dim=4; ld_smov S24, S22
        loop S24, S23, end_d3
        imov_dim I2, S24 dim=3; ld_smov S27, S25
        imov I7, I2
        imov_dim I7, S25 dim=2
        imov_dim I7, S28 dim=1; ld_smov S17, 0
warm:   cmp.ge.i32 SP2, S17, ROWS_AHEAD
        jmp warm_done @SP2
        prefetch I7, 0; iadd_dim I7, 1 dim=1
        iget_dim S16, I7 dim=1
        WRAP_I7
        add.i32 S17, S17, 1
        jmp warm
warm_done:
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
nest_done:
        halt
