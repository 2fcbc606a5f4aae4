// softmax_bwd.s: the backward of softmax / log_softmax over dim 0, computed in f32.
//
// Tensors: 0 grad (dL/dy), 1 y (the forward output), 2 dx. One row per index-space step, two
// software passes: (1) s = sum over the row of SMB_ACC (g * y for softmax, g for log_softmax;
// the padding is 0), broadcast to V15; (2) dx = SMB_OUT(g, y): y * (g - s) (PyTorch's
// softmax_backward_data), or g - exp(y) * s (log_softmax_backward_data). SRF: S0 = N0.
//
// The glue's prelude defines: LANES, the io include, .macro SMB_ACC acc, g, y,
// .macro SMB_OUT d, g, y (scratch V4).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0
        mov.f32 V8, 0.0
        imov I3, I2; ld_smov S17, 0
p1:     cmp.ge.i32 SP2, S17, S0
        jmp p1_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        LDW V12, V22, I3, 1
        EACH3 SMB_ACC, V10, V11, V12, V20, V21, V22
        add.i32 S17, S17, LANES
        jmp p1
p1_done:
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        shuffle.f32 V15, V10, V8
        ld_smov S17, 0
        PREFETCH_ROW
p3:     cmp.ge.i32 SP2, S17, S0
        jmp p3_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        LDW V12, V22, I3, 1
        EACH3 SMB_OUT, V13, V11, V12, V23, V21, V22
        NARROW V13, V23
        st_tnsr I3, 2, V9
        add.i32 S17, S17, LANES
        jmp p3
p3_done:
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
