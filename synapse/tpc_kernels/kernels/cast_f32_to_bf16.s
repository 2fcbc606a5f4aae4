// cast_f32_to_bf16.s: Y (bf16) = X (f32) rounded to nearest even.
//
// Tensors: 0 X (f32), 1 Y (bf16). An index-space step covers LANES elements (one bf16 vector,
// 128 with 2048-bit vectors): two f32 vectors at c and c + F32_LANES convert into the low and high
// halves (part 0 / 1) of one bf16 vector. The accessors pad past X's size and drop Y's lanes past
// its size. The glue's prelude defines LANES (bf16 lanes) and F32_LANES.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I3, I2
        iadd_dim I3, F32_LANES dim=0
        ld_tnsr V2, I3, 0; convert.f32.bf16 V3, V1 part=0
        convert.f32.bf16 V3, V2 part=1
end_d0: st_tnsr I2, 1, V3; iadd_dim I2, LANES dim=0
        NEST_END
