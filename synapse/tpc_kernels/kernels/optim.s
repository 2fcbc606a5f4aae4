// optim.s: one optimizer step, elementwise in f32, in place (the runtime passes each updated
// tensor's address as both its input and its output; an element is read and written by the same
// index-space step only).
//
// An index-space step is two vectors (LANES = 2 x F32_LANES elements of dim 0): bank A at I2 and
// bank B at I3 = I2 + LANES / 2 (optim_ops.inc), so the two vectors' dependent chains interleave;
// a second vector past the tensor's end reads padding and stores nothing.
//
// Tensors: 0 param, 1 grad, 2 .. NIN-1 the state tensors; outputs NIN = param, NIN+1 .. the
// states, in the inputs' order. Registers: bank A param V10, grad V11, states V12, V13; bank B
// V14, V15, V16, V17. The glue's prelude defines: .equ LANES, .equ NIN, .macro PRE_NEST (once per
// core: the first-step predicate, or the step-dependent values read from the state tensor of the
// tensor-list kernels), .macro WD_GRAD / DECOUPLED_WD (both banks), .macro LOAD_STATES (both
// banks), .macro OPT_STEP (optim_ops.inc), .macro STORE_STATES (all state stores but bank B's
// last), .macro STORE_LAST (that store and the dim-0 step, one bundle).
.macro ROW_SETUP
.endm
.include "nest.inc"
.include "optim_ops.inc"

        PRE_NEST
        NEST_BEGIN
        ld_tnsr V10, I2, 0; imov I3, I2
        ld_tnsr V11, I2, 1; iadd_dim I3, (LANES / 2) dim=0
        ld_tnsr V14, I3, 0
        ld_tnsr V15, I3, 1
        LOAD_STATES
        OPT_STEP
        st_tnsr I2, NIN, V10
        st_tnsr I3, NIN, V14
        STORE_STATES
end_d0: STORE_LAST
        NEST_END
