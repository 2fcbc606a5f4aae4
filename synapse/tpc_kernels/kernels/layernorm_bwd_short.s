// layernorm_bwd_short.s: layernorm_bwd.s for rows that fit in registers (BERT's 768: 12 f32
// vectors). The two-pass kernel reads grad, x and gamma twice; here they are read once: dxhat
// (= grad [* gamma]) and xhat stay in registers from the first pass to the second. Same
// operations in the same order as layernorm_bwd.s: bit-identical results.
//
// Tensors, SRF and the prelude's LN_GAMMA / OUT_T as layernorm_bwd.s. The prelude also defines,
// for the row's vectors (I3 walks the row; register lists in the glue, layernorm_bwd_row_macros):
//   ROW_LOAD   dxhat = grad [* gamma], x = X's row;
//   ROW_ACC    xhat = (x - mean) * rstd; V10/V20 = 0 + dxhat ...; V18/V28 = 0 + dxhat * xhat ...;
//   ROW_STORE  dx = rstd * ((dxhat - a) - xhat * b).
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
        ROW_LOAD
        ROW_ACC
        COMBINE add.f32, V10, V20
        COMBINE add.f32, V18, V28
        reduce.add.f32 V10, V10
        reduce.add.f32 V18, V18
        div.f32 V10, V10, S1
        div.f32 V18, V18, S1
        shuffle.f32 V30, V10, V8
        shuffle.f32 V31, V18, V8
        ROW_STORE
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
