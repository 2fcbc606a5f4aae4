// nll_loss_fwd.s: negative log-likelihood loss, reduction mean, computed in f32.
//
// Tensors: 0 logp [C, N] (dim 0 = classes; padding NaN), 1 target (i32, N elements), 2 loss,
// 3 total_weight (one element each). The index space is {1}: one core walks the N samples in
// order: for each sample whose target is not ignore_index, sum -= logp[target, n] and
// count += 1 (f32 scalars); then loss = sum / count, total_weight = count. A target outside
// 0 .. C-1 reads the padding NaN, so the loss is NaN; all samples ignored give 0 / 0 = NaN
// (PyTorch's mean). SRF: S0 = N (i32), S1 = ignore_index (i32), S2 = 1 if ignore_index is given.
        mov S10, 0.0
        mov S11, 0.0
        cmp.ne.i32 SP4, S2, 0
        imov I3, 0
        imov I4, 0; ld_smov S17, 0
lp:     cmp.ge.i32 SP2, S17, S0
        jmp lp_done @SP2
        imov_dim I3, S17 dim=0
        ld_tnsr_s S18, I3, 1
        imov_dim I4, S18 dim=0
        imov_dim I4, S17 dim=1
        ld_tnsr_s S19, I4, 0
        cmp.eq.i32 SP3, S18, S1
        pand SP3, SP3, SP4
        sub.f32 S10, S10, S19 @!SP3
        add.f32 S11, S11, 1.0 @!SP3
        add.i32 S17, S17, 1
        jmp lp
lp_done:
        div.f32 S12, S10, S11
        imov I3, 0
        st_tnsr_s I3, 2, S12
        st_tnsr_s I3, 3, S11
        halt
