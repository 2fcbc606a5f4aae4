// cast_i32_to_f32.s: Y (f32) = X (i32) rounded to nearest even (exact up to 2^24 in magnitude).
//
// Tensors: 0 X (i32), 1 Y (f32). An index-space step covers LANES elements (one vector of either).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0
        convert.i32.f32 V2, V1
end_d0: st_tnsr I2, 1, V2; iadd_dim I2, LANES dim=0
        NEST_END
