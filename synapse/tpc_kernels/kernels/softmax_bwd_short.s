// softmax_bwd_short.s: softmax_bwd.s for rows of at most four vectors: grad and y are loaded once
// and stay in registers (one read of each instead of two passes). Same operations in the same
// order as softmax_bwd.s: bit-identical results.
//
// Tensors: 0 grad, 1 y, 2 dx. One row per index-space step.
// Registers: g in V30..V33 (lo) / V34..V37 (hi), y in V22..V25 / V26..V29, accumulator V10 / V20,
// s in V15, zero index V8, scratch V4.
// The glue's prelude defines: LANES, the io include, .macro SMB_ACC acc, g, y and
// .macro SMB_OUT d, g, y (softmax_bwd.s's), and for the row's vectors (I3 walks them):
//   ROW_LOAD  g, y = the rows;  ROW_ACC  V10/V20 = 0 + SMB_ACC over the row;
//   ROW_STORE  dx = SMB_OUT(g, y).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        mov.f32 V8, 0.0
        ROW_LOAD
        ROW_ACC
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        shuffle.f32 V15, V10, V8
        ROW_STORE
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
