// layernorm_fwd.s: layer normalization over dim 0 (the innermost), computed in f32.
//
// Tensors: 0 X, then (AFFINE) 1 gamma, 2 beta (shape [N0], read through descriptors that repeat
// them along dims 1..4 with stride 0), then OUT_Y = Y (X's shape), OUT_Y+1 mean, OUT_Y+2 rstd
// (f32, X's shape with size 1 in dim 0). One row per index-space step, three software passes:
// (1) mean = sum(x) / N0; (2) var = sum((x - mean)^2) / N0, the lanes past the row's end masked
// to 0 (lane index >= N0 - start); rstd = rsqrt(var + eps); (3) y = (x - mean) * rstd [* gamma
// + beta]. Sums: vector accumulators (bf16: lo and hi added lane-wise), then reduce.add's tree.
// SRF: S0 = N0 (i32), S1 = N0 (f32), S2 = eps.
//
// The glue's prelude defines: LANES, the io include, .equ OUT_Y, .macro LN_AFFINE d, D (empty
// without gamma / beta).
.macro ROW_SETUP
.endm
.include "nest.inc"

        lane_id.i32 V16
        add.i32 V17, V16, F32_LANES
        mov.f32 V8, 0.0
        NEST_BEGIN
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0
        imov I3, I2; ld_smov S17, 0
p1:     cmp.ge.i32 SP2, S17, S0
        jmp p1_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH3 add.f32, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, LANES
        jmp p1
p1_done:
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        div.f32 V10, V10, S1
        shuffle.f32 V14, V10, V8
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0; ld_smov S17, 0
        PREFETCH_ROW
p2:     cmp.ge.i32 SP2, S17, S0
        jmp p2_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        sub.i32 S18, S0, S17
        cmp.lt.i32 VP2, V16, S18
        cmp.lt.i32 VP3, V17, S18
        EACH3 sub.f32, V11, V11, V14, V21, V21, V14
        EACH3 mul.f32, V11, V11, V11, V21, V21, V21
        EACH4 sel.f32, V11, V11, 0.0, VP2, V21, V21, 0.0, VP3
        EACH3 add.f32, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, LANES
        jmp p2
p2_done:
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        div.f32 V10, V10, S1
        add.f32 V10, V10, S2
        special.rsqrt.f32 V10, V10
        shuffle.f32 V15, V10, V8
        imov_dim I3, 0 dim=0
        st_tnsr I3, OUT_Y + 1, V14
        st_tnsr I3, OUT_Y + 2, V15
        ld_smov S17, 0
        PREFETCH_ROW
p3:     cmp.ge.i32 SP2, S17, S0
        jmp p3_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH3 sub.f32, V11, V11, V14, V21, V21, V14
        EACH3 mul.f32, V13, V11, V15, V23, V21, V15
        LN_AFFINE V13, V23
        NARROW V13, V23
        st_tnsr I3, OUT_Y, V9
        add.i32 S17, S17, LANES
        jmp p3
p3_done:
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
