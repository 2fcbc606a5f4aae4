// fill.s: Y = the scalar parameter S0 (an f32 value; bf16 outputs get it rounded to nearest even).
//
// Tensors: 0 Y (output). The prelude defines LANES, an empty ROW_SETUP and `.macro OP d`
// (FILL f32 / FILL bf16 of ops.inc), then includes this file.
.include "nest.inc"
.include "ops.inc"

        OP V3                           // the vector is the same for every step
        NEST_BEGIN
end_d0: st_tnsr I2, 0, V3; iadd_dim I2, LANES dim=0
        NEST_END
