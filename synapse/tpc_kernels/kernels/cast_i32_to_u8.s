// cast_i32_to_u8.s: Y (u8) = X (i32) saturated to 0 .. 255 (negative to 0, above 255 to 255: the
// ISA's convert). PyTorch's int -> uint8 keeps the low 8 bits instead; the two agree on 0 .. 255.
//
// Tensors: 0 X (i32), 1 Y (u8). An index-space step covers LANES elements (one u8 vector): four
// i32 vectors convert into its four quarters (part 0..3), as cast_f32_to_u8.s.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I3, I2
        iadd_dim I3, F32_LANES dim=0
        ld_tnsr V2, I3, 0; convert.i32.u8 V5, V1 part=0; iadd_dim I3, F32_LANES dim=0
        ld_tnsr V3, I3, 0; convert.i32.u8 V5, V2 part=1; iadd_dim I3, F32_LANES dim=0
        ld_tnsr V4, I3, 0; convert.i32.u8 V5, V3 part=2
        convert.i32.u8 V5, V4 part=3
end_d0: st_tnsr I2, 1, V5; iadd_dim I2, LANES dim=0
        NEST_END
