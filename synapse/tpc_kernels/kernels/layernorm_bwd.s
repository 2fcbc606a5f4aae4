// layernorm_bwd.s: dx of layer normalization over dim 0, computed in f32.
//
// Tensors: 0 grad (dL/dy), 1 x, 2 mean, 3 rstd (f32, size 1 in dim 0: the forward's), then
// (AFFINE) 4 gamma ([N0], repeated along dims 1..4 by stride-0 descriptors), OUT_T = dx.
// One row per index-space step, two software passes. With xhat = (x - mean) * rstd and
// dxhat = g [* gamma]: (1) a = sum(dxhat) / N0, b = sum(dxhat * xhat) / N0 (grad's padding is 0,
// so lanes past the row add 0); (2) dx = rstd * ((dxhat - a) - xhat * b).
// SRF: S0 = N0 (i32), S1 = N0 (f32).
//
// The glue's prelude defines: LANES, the io include, .equ OUT_T, .macro LN_GAMMA d, D
// (dxhat = d * gamma into d / D; empty without gamma).
.macro ROW_SETUP
.endm
.include "nest.inc"

        mov.f32 V8, 0.0
        NEST_BEGIN
        imov I3, I2
        imov_dim I3, 0 dim=0
        ld_tnsr_s S18, I3, 2
        ld_tnsr_s S19, I3, 3
        mov.f32 V14, S18
        mov.f32 V15, S19
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0
        mov.f32 V18, 0.0
        mov.f32 V28, 0.0; ld_smov S17, 0
p1:     cmp.ge.i32 SP2, S17, S0
        jmp p1_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        LDW V12, V22, I3, 1
        LN_GAMMA V11, V21
        EACH3 sub.f32, V12, V12, V14, V22, V22, V14
        EACH3 mul.f32, V12, V12, V15, V22, V22, V15
        EACH3 add.f32, V10, V10, V11, V20, V20, V21
        EACH3 mul.f32, V12, V12, V11, V22, V22, V21
        EACH3 add.f32, V18, V18, V12, V28, V28, V22
        add.i32 S17, S17, LANES
        jmp p1
p1_done:
        COMBINE add.f32, V10, V20
        COMBINE add.f32, V18, V28
        reduce.add.f32 V10, V10
        reduce.add.f32 V18, V18
        div.f32 V10, V10, S1
        div.f32 V18, V18, S1
        shuffle.f32 V30, V10, V8
        shuffle.f32 V31, V18, V8
        ld_smov S17, 0
        PREFETCH_ROW
p2:     cmp.ge.i32 SP2, S17, S0
        jmp p2_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        LDW V12, V22, I3, 1
        LN_GAMMA V11, V21
        EACH3 sub.f32, V12, V12, V14, V22, V22, V14
        EACH3 mul.f32, V12, V12, V15, V22, V22, V15
        EACH3 mul.f32, V12, V12, V31, V22, V22, V31
        EACH3 sub.f32, V11, V11, V30, V21, V21, V30
        EACH3 sub.f32, V11, V11, V12, V21, V21, V22
        EACH3 mul.f32, V13, V11, V15, V23, V21, V15
        NARROW V13, V23
        st_tnsr I3, OUT_T, V9
        add.i32 S17, S17, LANES
        jmp p2
p2_done:
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
