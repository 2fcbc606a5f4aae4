// cast_bf16_to_f32.s: Y (f32) = X (bf16), exactly.
//
// Tensors: 0 X (bf16), 1 Y (f32). An index-space step covers LANES elements (bf16 lanes, 128
// with 2048-bit vectors): one bf16 vector widens into two f32 vectors (parts 0 and 1), stored at
// c and c + F32_LANES. The glue's prelude defines LANES and F32_LANES.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I3, I2
        convert.bf16.f32 V2, V1 part=0; iadd_dim I3, F32_LANES dim=0
        convert.bf16.f32 V3, V1 part=1; st_tnsr I2, 1, V2
end_d0: st_tnsr I3, 1, V3; iadd_dim I2, LANES dim=0
        NEST_END
