// eltwise_unary.s: Y = OP(X) elementwise over tensors of one shape.
//
// Tensors: 0 X (input), 1 Y (output). The glue's prelude defines LANES, an empty ROW_SETUP and
// `.macro OP d, a` (ops.inc), then includes this file.
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0
        OP V3, V1
end_d0: st_tnsr I2, 1, V3; iadd_dim I2, LANES dim=0
        NEST_END
