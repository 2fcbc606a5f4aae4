// eltwise_f32.s: OUT = OP(A [, B [, C]]) elementwise, computed in f32 (bf16 tensors widen on load
// and round once on store, io_bf16.inc). Used by the backward kernels, gelu and addcmul / addcdiv.
//
// Tensors: 0 .. OUT_T-1 the inputs, OUT_T the output. Inputs broadcast along dims >= 1 through
// stride-0 descriptors (the glue); an input broadcast along dim 0 is loaded once per row by
// ROW_SETUP (BCAST_ROW into its lo register, copied to hi) and its LOAD_k is empty.
//
// The glue's prelude defines, then includes this file:
//   .equ LANES;  .include "io_f32x2.inc" (f32: two vectors a step), "io_bf16.inc" (one bf16
//   vector, two f32 halves) or "io_f32.inc" (one f32 vector: dropout's backward)
//   .equ OUT_T                          the output's tensor number (= the input count)
//   .macro OP d, a, b, c                an ops.inc macro with dtype f32 (unused operands ignored)
//   .macro OPS                          EACH4 OP on the lo and hi registers, or the op's _PAIR
//                                       form (ops.inc) on both at once
//   .macro LOAD_0 / LOAD_1 / LOAD_2     LDW V1k, V2k, I2, k, or empty
//   .macro ROW_SETUP                    the dim-0 broadcasts, or empty
// Registers: inputs V10..V12 (lo) / V20..V22 (hi), result V13 / V23.
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        LOAD_0
        LOAD_1
        LOAD_2
        OPS
        STW_BODY V13, V23, OUT_T
end_d0: STW_LAST V13, V23, OUT_T
        NEST_END
