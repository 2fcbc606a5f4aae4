// eltwise_binary.s: C = OP(A, B) elementwise, with numpy broadcasting of A and B.
//
// Tensors: 0 A, 1 B (inputs), 2 C (output). The glue gives an input that is broadcast along a
// dim >= 1 a descriptor with C's size and stride 0 there, so the loads below need no special
// case. A broadcast along dim 0 (size 1 there, C larger) is a kernel variant: ROW_SETUP loads the
// row's one element with ld_tnsr_s and broadcasts it with mov, and LOAD_A / LOAD_B is empty.
//
// The glue's prelude defines, then includes this file:
//   .equ LANES       64 (f32) or 128 (bf16)
//   .macro OP d, a, b    the operation (ops.inc), e.g. OP_ADD f32, \d, \a, \b
//   .macro LOAD_A v / LOAD_B v   ld_tnsr \v, I2, 0 (1), or empty for a dim-0 broadcast
//   .macro ROW_SETUP     empty, or BCAST_ROW V1, 0, f32 (BCAST_ROW V2, 1, ... for B)
// Also used by the backward kernels (A = the incoming gradient, B = the forward input or output).
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        LOAD_A V1
        LOAD_B V2
        OP V3, V1, V2
end_d0: st_tnsr I2, 2, V3; iadd_dim I2, LANES dim=0
        NEST_END
