// scale_by_tensor.s: Y = X * s, s one f32 element of tensor 1 (element S0 of it, described as
// [1, M]), read once per core. Tensors: 0 X, 1 the scale's tensor, 2 Y (X's shape). An
// index-space step is two vectors (LANES covers both), the second at I4 = I2 + LANES / 2, so one
// vector's load is in flight while the other's product waits (one a step waited for each load).
.macro ROW_SETUP
.endm
.include "nest.inc"

        imov I3, 0
        imov_dim I3, S0 dim=1
        ld_tnsr_s S16, I3, 1
        NEST_BEGIN
        ld_tnsr V10, I2, 0; imov I4, I2
        iadd_dim I4, (LANES / 2) dim=0
        ld_tnsr V11, I4, 0
        mul.f32 V10, V10, S16
        mul.f32 V11, V11, S16
        st_tnsr I2, 2, V10
end_d0: st_tnsr I4, 2, V11; iadd_dim I2, LANES dim=0
        NEST_END
