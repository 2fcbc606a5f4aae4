// scale_by_tensor.s: Y = X * s, s one f32 element of tensor 1 (element S0 of it, described as
// [1, M]), read once per core. Tensors: 0 X, 1 the scale's tensor, 2 Y (X's shape).
.macro ROW_SETUP
.endm
.include "nest.inc"

        imov I3, 0
        imov_dim I3, S0 dim=1
        ld_tnsr_s S16, I3, 1
        NEST_BEGIN
        ld_tnsr V10, I2, 0
        mul.f32 V10, V10, S16
end_d0: st_tnsr I2, 2, V10; iadd_dim I2, LANES dim=0
        NEST_END
