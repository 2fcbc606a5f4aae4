// layernorm_fwd_short.s: layernorm_fwd.s for rows that fit in registers (BERT's 768: 12 f32
// vectors). The three-pass kernel reads X three times and waits for memory at each pass's start;
// here the row is loaded once (ROW_LOAD), pass 2 turns it into x - mean in place (the value pass 3
// needs) and pass 3 scales it. Same operations in the same order as layernorm_fwd.s:
// bit-identical results.
//
// Tensors, SRF and the prelude's LN_AFFINE / OUT_Y as layernorm_fwd.s. The prelude also defines,
// for the row's vectors (x in V24.. lo / V30.. hi; I3 walks the row):
//   ROW_LOAD  x = X's row;  ROW_SUM  V10/V20 = 0 + x0 + x1 ...;
//   ROW_VAR   x = x - mean, V10/V20 = 0 + the masked squares;  ROW_STORE  Y = x * rstd [affine].
.macro ROW_SETUP
.endm
.include "nest.inc"

        lane_id.i32 V16
        add.i32 V17, V16, F32_LANES
        mov.f32 V8, 0.0
        NEST_BEGIN
        ROW_LOAD
        ROW_SUM
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        div.f32 V10, V10, S1
        shuffle.f32 V14, V10, V8
        ROW_VAR
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        div.f32 V10, V10, S1
        add.f32 V10, V10, S2
        special.rsqrt.f32 V10, V10
        shuffle.f32 V15, V10, V8
        imov I3, I2
        imov_dim I3, 0 dim=0
        st_tnsr I3, OUT_Y + 1, V14
        st_tnsr I3, OUT_Y + 2, V15
        ROW_STORE
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
