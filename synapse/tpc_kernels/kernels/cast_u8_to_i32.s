// cast_u8_to_i32.s: Y (i32) = X (u8), exactly (zero-extended).
//
// Tensors: 0 X (u8), 1 Y (i32). An index-space step covers LANES elements (one u8 vector, 256
// with 2048-bit vectors): its four quarters widen (convert part=0..3) into four i32 vectors,
// stored at c, c + F32_LANES, c + 2 F32_LANES, c + 3 F32_LANES. The glue's prelude defines LANES
// (u8 lanes) and F32_LANES.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I3, I2
        convert.u8.i32 V2, V1 part=0
        convert.u8.i32 V3, V1 part=1; st_tnsr I2, 1, V2; iadd_dim I3, F32_LANES dim=0
        convert.u8.i32 V2, V1 part=2; st_tnsr I3, 1, V3; iadd_dim I3, F32_LANES dim=0
        convert.u8.i32 V3, V1 part=3; st_tnsr I3, 1, V2; iadd_dim I3, F32_LANES dim=0
end_d0: st_tnsr I3, 1, V3; iadd_dim I2, LANES dim=0
        NEST_END
