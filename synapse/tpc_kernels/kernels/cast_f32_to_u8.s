// cast_f32_to_u8.s: Y (u8) = X (f32) rounded toward zero, saturating to 0 .. 255, NaN to 0 (the
// ISA's convert; C's float -> unsigned char is undefined out of range, PyTorch's CPU cast wraps
// there).
//
// Tensors: 0 X (f32), 1 Y (u8). An index-space step covers LANES elements (one u8 vector, 256 with
// 2048-bit vectors): four f32 vectors at c, c + F32_LANES, c + 2 F32_LANES, c + 3 F32_LANES
// convert into the four quarters (part 0..3) of one u8 vector. The accessors pad past X's size and
// drop Y's lanes past its size. The glue's prelude defines LANES (u8 lanes) and F32_LANES.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I3, I2
        iadd_dim I3, F32_LANES dim=0
        ld_tnsr V2, I3, 0; convert.f32.u8 V5, V1 rnd=rz part=0; iadd_dim I3, F32_LANES dim=0
        ld_tnsr V3, I3, 0; convert.f32.u8 V5, V2 rnd=rz part=1; iadd_dim I3, F32_LANES dim=0
        ld_tnsr V4, I3, 0; convert.f32.u8 V5, V3 rnd=rz part=2
        convert.f32.u8 V5, V4 rnd=rz part=3
end_d0: st_tnsr I2, 1, V5; iadd_dim I2, LANES dim=0
        NEST_END
