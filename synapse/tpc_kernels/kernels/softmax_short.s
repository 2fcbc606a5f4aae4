// softmax_short.s: softmax_fwd.s for rows of at most four vectors (BERT's attention rows: 128
// elements). The row is loaded once and stays in registers, so a row costs one read of X and
// one dependent chain (max, exp, sum, scale) instead of three passes, each a software loop with
// its own loads. Same operations in the same order as softmax_fwd.s: bit-identical results.
//
// Tensors: 0 X, 1 Y. One row per index-space step; X's padding is -inf (padded lanes add 0).
// Registers: x in V30..V33 (lo) / V34..V37 (hi), e = exp(x - m) in V22..V25 / V26..V29,
// accumulators V10 / V20, m in V14, s (or log s) in V15, zero index V8.
// The glue's prelude defines: LANES, the io include, .macro SM_ROW s, .macro SMS_OUT d, x, e
// (log_softmax: (x - m) - log s; softmax: e / s), and for the row's vectors (I3 walks them):
//   ROW_LOAD  x = X's row;  ROW_MAX  V10/V20 = lane-wise max of x;
//   ROW_EXP   e = exp(x - m), V10/V20 = 0 + e0 + e1 ...;  ROW_STORE  Y = SMS_OUT(x, e).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        mov.f32 V8, 0.0
        ROW_LOAD
        ROW_MAX
        COMBINE max.f32, V10, V20
        reduce.max.f32 V10, V10
        shuffle.f32 V14, V10, V8
        ROW_EXP
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        shuffle.f32 V15, V10, V8
        SM_ROW V15
        ROW_STORE
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
