// cast_f32_to_i32.s: Y (i32) = X (f32) rounded toward zero (C's and PyTorch's float -> int),
// saturating at the i32 range, NaN to 0 (the ISA's convert).
//
// Tensors: 0 X (f32), 1 Y (i32). An index-space step covers LANES elements (one vector of either).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0
        convert.f32.i32 V2, V1 rnd=rz
end_d0: st_tnsr I2, 1, V2; iadd_dim I2, LANES dim=0
        NEST_END
