// eltwise_binary.s: C = OP(A, B) elementwise, with numpy broadcasting of A and B.
//
// Tensors: 0 A, 1 B (inputs), 2 C (output). The glue gives an input that is broadcast along a
// dim >= 1 a descriptor with C's size and stride 0 there, so the loads below need no special
// case. A broadcast along dim 0 (size 1 there, C larger) is a kernel variant: ROW_SETUP loads the
// row's one element with ld_tnsr_s and broadcasts it with mov into both vectors' registers, and
// LOAD_A / LOAD_B is empty.
//
// An index-space step is two vectors (LANES covers both): the first at I2, the second at
// I4 = I2 + LANES / 2, so the second's loads and operation issue while the first's wait; a second
// vector past the tensor's end reads padding and stores nothing.
//
// The glue's prelude defines, then includes this file:
//   .equ LANES       2 vectors: 128 (f32, i32) or 256 (bf16)
//   .macro OP d, a, b    the operation (ops.inc), e.g. OP_ADD f32, \d, \a, \b
//   .macro LOAD_A v, i / LOAD_B v, i   ld_tnsr \v, \i, 0 (1), or empty for a dim-0 broadcast
//   .macro ROW_SETUP     empty, or BCAST_ROW V1, 0, f32 and mov.f32 V11, V1 (V2 / V12 for B)
//   .macro KERNEL_SETUP  empty, or for an input of one element (a scalar tensor) its load into
//                        both registers, once per core (its LOAD and ROW_SETUP are then empty)
// Registers: first vector A V1, B V2, C V3; second A V11, B V12, C V13.
// Also used by the backward kernels (A = the incoming gradient, B = the forward input or output).
.include "nest.inc"
.include "ops.inc"

        KERNEL_SETUP
        NEST_BEGIN
        imov I4, I2
        LOAD_A V1, I2
        LOAD_B V2, I2
        iadd_dim I4, (LANES / 2) dim=0
        LOAD_A V11, I4
        LOAD_B V12, I4
        OP V3, V1, V2
        OP V13, V11, V12
        st_tnsr I2, 2, V3
end_d0: st_tnsr I4, 2, V13; iadd_dim I2, LANES dim=0
        NEST_END
