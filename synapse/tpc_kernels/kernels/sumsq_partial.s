// sumsq_partial.s: the first pass of a tensor-list norm. X (tensor 0) is read flat, in C chunks
// of S0 vectors each (S0 a multiple of 4; vectors past X's end read 0); chunk c's sum of squares
// goes to element S1 + c of the partials (tensor 1, described as [1, M]: a store there writes
// lane 0 only). The index space is the C chunks. X is prefetched AHEAD vectors (the glue's .equ)
// ahead of the loads: a chunk's first AHEAD vectors at its start (those the chunk before on this
// core already asked for send nothing), then four more each pass; without it every pass waited
// a memory latency for its loads.
        ispace_offset I0
        ispace_size I1
        iget_dim S20, I0 dim=0
        iget_dim S21, I1 dim=0
        add.i32 S21, S21, S20
        imov I2, 0
        imov I3, 0
        loop S20, S21, chunk_end
        mov.f32 V10, 0.0
        mul.i32 S22, S20, S0
        add.i32 S23, S22, S0
        mul.i32 S24, S22, LANES
        imov I4, 0
        imov_dim I4, S24 dim=0
        mov S26, 0
        mov S27, AHEAD
        loop S26, S27, ahead_end
ahead_end: prefetch I4, 0; iadd_dim I4, LANES dim=0
        loop S22, S23, vec_end step=4
        mul.i32 S24, S22, LANES
        imov_dim I2, S24 dim=0
        prefetch I4, 0; iadd_dim I4, LANES dim=0
        prefetch I4, 0; iadd_dim I4, LANES dim=0
        prefetch I4, 0; iadd_dim I4, LANES dim=0
        prefetch I4, 0; iadd_dim I4, LANES dim=0
        ld_tnsr V11, I2, 0; iadd_dim I2, LANES dim=0
        ld_tnsr V12, I2, 0; iadd_dim I2, LANES dim=0
        ld_tnsr V13, I2, 0; iadd_dim I2, LANES dim=0
        ld_tnsr V14, I2, 0
        mul.f32 V11, V11, V11
        add.f32 V10, V10, V11
        mul.f32 V12, V12, V12
        add.f32 V10, V10, V12
        mul.f32 V13, V13, V13
        add.f32 V10, V10, V13
        mul.f32 V14, V14, V14
vec_end: add.f32 V10, V10, V14
        reduce.add.f32 V10, V10
        add.i32 S25, S20, S1
        imov_dim I3, S25 dim=1
chunk_end: st_tnsr I3, 1, V10
        halt
