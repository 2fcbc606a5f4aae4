// nll_loss_bwd.s: the gradient of nll_loss (reduction mean) with respect to logp, in f32.
//
// Tensors: 0 grad (dL/dloss, one element), 1 target (i32, N elements), 2 total_weight (one
// element), 3 dx [C, N]. The index space is dx's ({ceil(C / LANES), N}): per row n (ROW_SETUP)
// the target t and the value v = -(grad / total_weight), 0 if t is ignore_index; per vector
// dx = v in the lane of class t, 0 elsewhere (lane ids V16 = 0 .. F32_LANES-1, V17 = the next
// F32_LANES, against t - the vector's first class). SRF: S0 = ignore_index (i32), S1 = 1 if it is given.
// The target is viewed as [1, N], so that a vector read at (0, n) reads target n alone: each row
// prefetches the target AHEAD (the glue's .equ) rows on, and the core's first AHEAD rows are
// prefetched before the nest, so a row's target load finds its data in the prefetch buffer
// instead of waiting a memory latency.
.macro ROW_SETUP
        iget_dim S18, I2 dim=1
        imov_dim I3, S18 dim=1
        ld_tnsr_s S19, I3, 1
        imov I6, I3
        iadd_dim I6, AHEAD dim=1
        prefetch I6, 1
        cmp.eq.i32 SP3, S19, S0
        pand SP3, SP3, SP4
        mov S13, S12
        mov S13, 0.0 @SP3
.endm
.include "nest.inc"

        lane_id.i32 V16
        add.i32 V17, V16, F32_LANES
        cmp.ne.i32 SP4, S1, 0
        imov I3, 0
        ispace_offset I5
        imov_dim I5, 0 dim=0
        mov S16, 0
        mov S15, AHEAD
        loop S16, S15, prefetch_first
prefetch_first: prefetch I5, 1; iadd_dim I5, 1 dim=1
        ld_tnsr_s S10, I3, 0
        ld_tnsr_s S11, I3, 2
        div.f32 S12, S10, S11
        neg.f32 S12, S12
        NEST_BEGIN
        iget_dim S18, I2 dim=0
        sub.i32 S18, S19, S18
        cmp.eq.i32 VP2, V16, S18
        cmp.eq.i32 VP3, V17, S18
        mov.f32 V13, 0.0
        mov.f32 V23, 0.0
        mov.f32 V13, S13 @VP2
        mov.f32 V23, S13 @VP3
        NARROW V13, V23
end_d0: st_tnsr I2, 3, V9; iadd_dim I2, LANES dim=0
        NEST_END
