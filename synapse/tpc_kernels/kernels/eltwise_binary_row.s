// eltwise_binary_row.s: C = OP(A, B) where one input is a single row broadcast over every outer
// dim (a bias: [N0] or [N0, 1, ...]) and a row fits in registers (N0 up to kBiasRowVectors
// vectors). eltwise_binary.s reads the bias row again for every row of the other input, half of
// its reads; here the row is loaded once per core (KERNEL_SETUP, into V16..) and an index-space
// step is one row of the other input and of C, software pipelined (ROW_BODY: a vector's load, the
// operation on the one before and the store of the one before that share the bundles).
//
// Tensors: 0, 1 the inputs, 2 C. The glue's prelude defines LANES (one vector), an empty
// ROW_SETUP, .macro OP d, a, b (ops.inc), KERNEL_SETUP and ROW_BODY (the row's vectors: loads at
// I4, stores at I5; the streamed input in V30..V33 and C in V34..V37, rotating).
.include "nest.inc"
.include "ops.inc"

        KERNEL_SETUP
        NEST_BEGIN
        ROW_BODY
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
