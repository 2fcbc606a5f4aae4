// optim_step_count.s: a fused optimizer's step counter, run after its updates: element 0 of the
// state tensor (steps taken, f32) goes up by one; element 1 (lr) stays. Tensors: 0 the state,
// 1 the same state (in place). The index space is one step.
        imov I3, 0
        ld_tnsr_s S16, I3, 0
        add.f32 S16, S16, 1.0
        st_tnsr_s I3, 1, S16
        halt
