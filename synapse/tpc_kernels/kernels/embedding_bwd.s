// embedding_bwd.s: grad_weight = 0, then grad_weight[:, idx[n]] += grad[:, n] for every n in the
// indices' memory order (dim 0 fastest), accumulated in f32 in VLM and rounded once to the
// dtype on the way out (bf16: one rounding per element).
//
// Tensors: 0 grad [D, indices' shape...], 1 indices (i32, up to 4-D), 2 grad_weight [D, V].
// The index space is {ceil(D / LANES), ceil(V / ROWS)}: a step owns one dim-0 vector (a slice of
// the embedding dim) of a chunk of ROWS rows of grad_weight, so no two cores touch one element
// and each element's additions happen in index order on one core. The step zeroes its chunk's
// accumulators in VLM (ROWB bytes per row: one f32 vector, two for bf16), walks the indices
// (software loops over their dims 3..0), adds grad's vector into the accumulator of each index
// that falls in the chunk, then writes the chunk out with st_tnsr. grad_weight is only written,
// never read back (no read-after-write through global memory). An index outside 0 .. V-1, or
// equal to padding_idx (when given), adds nothing.
// SRF: S0 = V, S1 = padding_idx, S2 = 1 if padding_idx is given, S4..S7 = the indices' sizes of
// dims 0..3 (1 past its rank). The prelude defines LANES, ROWS, ROWB, INDICES_AHEAD (AHEAD times
// `prefetch I6, 1; iadd_dim I6, 1 dim=1`) and
// VLD lo, hi, addr / VST addr, lo, hi (the row's accumulator at VLM byte address addr; S18 scratch).
// The indices are viewed as [1, their dims...], so a read at (0, n, ...) is index n alone: the walk
// prefetches the index AHEAD on along their dim 0 (I6), and each index load takes it from the
// prefetch buffer instead of waiting a memory latency.
.macro ROW_SETUP
.endm
.include "nest.inc"

        cmp.ne.i32 SP4, S2, 0
        mov.f32 V30, 0.0
        NEST_BEGIN
        iget_dim S14, I2 dim=1
        mul.i32 S14, S14, ROWS          // the chunk's first row
        add.i32 S15, S14, ROWS
        min.i32 S15, S15, S0            // its end
        sub.i32 S15, S15, S14           // its row count
        mul.i32 S16, S15, ROWB          // its accumulators' bytes
        ld_smov S8, 0
z:      cmp.ge.i32 SP2, S8, S16
        jmp z_done @SP2
        st_vlm S8, V30
        add.i32 S8, S8, VECTOR_BYTES
        jmp z
z_done:
        imov I4, I2; ld_smov S9, 0
        imov_dim I4, 0 dim=1
        imov I5, 0
r4:     cmp.ge.i32 SP2, S9, S7
        jmp r4_done @SP2
        imov_dim I4, S9 dim=4
        imov_dim I5, S9 dim=4; ld_smov S10, 0
r3:     cmp.ge.i32 SP2, S10, S6
        jmp r3_done @SP2
        imov_dim I4, S10 dim=3
        imov_dim I5, S10 dim=3; ld_smov S11, 0
r2:     cmp.ge.i32 SP2, S11, S5
        jmp r2_done @SP2
        imov_dim I4, S11 dim=2
        imov_dim I5, S11 dim=2; ld_smov S12, 0
        imov I6, I5
        imov_dim I6, 0 dim=1
        INDICES_AHEAD                   // the row's first indices (no fifth hardware loop)
r1:     cmp.ge.i32 SP2, S12, S4
        jmp r1_done @SP2
        imov_dim I4, S12 dim=1
        imov_dim I5, S12 dim=1
        ld_tnsr_s S13, I5, 1
        prefetch I6, 1; iadd_dim I6, 1 dim=1
        cmp.eq.i32 SP3, S13, S1
        pand SP3, SP3, SP4              // padding_idx
        sub.i32 S17, S13, S14           // the row within the chunk
        cmp.ge.u32 SP5, S17, S15        // outside the chunk (negative rows wrap to large)
        por SP3, SP3, SP5
        jmp r1_next @SP3
        mul.i32 S17, S17, ROWB
        VLD V10, V20, S17
        LDW V11, V21, I4, 0
        EACH3 add.f32, V10, V10, V11, V20, V20, V21
        VST S17, V10, V20
r1_next:
        add.i32 S12, S12, 1
        jmp r1
r1_done:
        add.i32 S11, S11, 1
        jmp r2
r2_done:
        add.i32 S10, S10, 1
        jmp r3
r3_done:
        add.i32 S9, S9, 1
        jmp r4
r4_done:
        imov I3, I2; ld_smov S8, 0
w:      cmp.ge.i32 SP2, S8, S15
        jmp w_done @SP2
        mul.i32 S17, S8, ROWB
        VLD V10, V20, S17
        add.i32 S16, S14, S8
        imov_dim I3, S16 dim=1
        NARROW V10, V20
        st_tnsr I3, 2, V9
        add.i32 S8, S8, 1
        jmp w
w_done:
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
