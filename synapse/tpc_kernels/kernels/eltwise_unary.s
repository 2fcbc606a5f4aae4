// eltwise_unary.s: Y = OP(X) elementwise over tensors of one shape.
//
// Tensors: 0 X (input), 1 Y (output). An index-space step is two vectors (LANES covers both):
// the first at I2, the second at I4 = I2 + LANES / 2 (eltwise_binary.s). The glue's prelude
// defines LANES, an empty ROW_SETUP and `.macro OP d, a` (ops.inc), then includes this file.
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0; imov I4, I2
        iadd_dim I4, (LANES / 2) dim=0
        ld_tnsr V11, I4, 0
        OP V3, V1
        OP V13, V11
        st_tnsr I2, 1, V3
end_d0: st_tnsr I4, 1, V13; iadd_dim I2, LANES dim=0
        NEST_END
