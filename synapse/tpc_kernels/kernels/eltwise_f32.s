// eltwise_f32.s: OUT = OP(A [, B [, C]]) elementwise, computed in f32 (bf16 tensors widen on load
// and round once on store, io_bf16.inc). Used by the backward kernels, gelu and addcmul / addcdiv.
//
// Tensors: 0 .. OUT_T-1 the inputs, OUT_T the output. Inputs broadcast along dims >= 1 through
// stride-0 descriptors (the glue); an input broadcast along dim 0 is loaded once per row by
// ROW_SETUP (BCAST_ROW into its lo register, copied to hi) and its LOAD_k is empty.
//
// The glue's prelude defines, then includes this file:
//   .equ LANES 64 (f32) / 128 (bf16);  .include "io_f32.inc" or "io_bf16.inc"
//   .equ OUT_T                          the output's tensor number (= the input count)
//   .macro OP d, a, b, c                an ops.inc macro with dtype f32 (unused operands ignored)
//   .macro LOAD_0 / LOAD_1 / LOAD_2     LDW V1k, V2k, I2, k, or empty
//   .macro ROW_SETUP                    the dim-0 broadcasts, or empty
// Registers: inputs V10..V12 (lo) / V20..V22 (hi), result V13 / V23.
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        LOAD_0
        LOAD_1
        LOAD_2
        EACH4 OP, V13, V10, V11, V12, V23, V20, V21, V22
        NARROW V13, V23
end_d0: st_tnsr I2, OUT_T, V9; iadd_dim I2, LANES dim=0
        NEST_END
