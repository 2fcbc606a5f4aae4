// optim.s: one optimizer step, elementwise in f32, in place (the runtime passes each updated
// tensor's address as both its input and its output; an element is read and written by the same
// index-space step only).
//
// Tensors: 0 param, 1 grad, 2 .. NIN-1 the state tensors; outputs NIN = param, NIN+1 .. the
// states, in the inputs' order. Registers: param V10, grad V11, states V12, V13; scratch V4..V7.
// The glue's prelude defines: .equ LANES 64, .equ NIN, .macro PRE_NEST (once per core: the
// first-step predicate, or the step-dependent values read from the state tensor of the tensor-list
// kernels), .macro LOAD_STATES, .macro OPT_STEP (optim_ops.inc), .macro STORE_STATES (all but the
// last state's store), .macro STORE_LAST (the last store and the dim-0 step, one bundle).
.macro ROW_SETUP
.endm
.include "nest.inc"
.include "optim_ops.inc"

        PRE_NEST
        NEST_BEGIN
        ld_tnsr V10, I2, 0
        ld_tnsr V11, I2, 1
        LOAD_STATES
        OPT_STEP
        st_tnsr I2, NIN, V10
        STORE_STATES
end_d0: STORE_LAST
        NEST_END
