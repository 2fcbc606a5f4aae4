// nll_loss_fwd.s: negative log-likelihood loss, reduction mean, computed in f32.
//
// Tensors: 0 logp [C, N] (dim 0 = classes; padding NaN), 1 target (i32, N elements), 2 loss,
// 3 total_weight (one element each). The index space is {1}: one core walks the N samples in
// order: for each sample whose target is not ignore_index, sum -= logp[target, n] and
// count += 1 (f32 scalars); then loss = sum / count, total_weight = count. A target outside
// 0 .. C-1 reads the padding NaN, so the loss is NaN; all samples ignored give 0 / 0 = NaN
// (PyTorch's mean). SRF: S0 = N (i32), S1 = ignore_index (i32), S2 = 1 if ignore_index is given.
// Four samples a group: their four target loads, then their four logp loads, are in flight
// together (each sample's two loads depend on each other; the samples do not); the sums still
// run in sample order. The samples past the last group of four go one at a time.
.macro ACC t, v
        cmp.eq.i32 SP3, \t, S1
        pand SP3, SP3, SP4
        sub.f32 S10, S10, \v @!SP3
        add.f32 S11, S11, 1.0 @!SP3
.endm
        mov S10, 0.0
        mov S11, 0.0
        cmp.ne.i32 SP4, S2, 0
        imov I0, 0
        imov I1, 0
        imov I2, 0
        imov I3, 0
        imov I5, 0
        imov I6, 0
        imov I7, 0
        imov I4, 0; ld_smov S17, 0
        sub.i32 S9, S0, 3               // a group of four starts below N - 3
lp4:    cmp.ge.i32 SP2, S17, S9
        jmp lp @SP2
        add.i32 S13, S17, 1
        add.i32 S14, S17, 2
        add.i32 S15, S17, 3
        imov_dim I3, S17 dim=0
        imov_dim I5, S13 dim=0
        imov_dim I6, S14 dim=0
        imov_dim I7, S15 dim=0
        ld_tnsr_s S18, I3, 1
        ld_tnsr_s S20, I5, 1
        ld_tnsr_s S22, I6, 1
        ld_tnsr_s S24, I7, 1
        imov_dim I4, S18 dim=0
        imov_dim I4, S17 dim=1
        imov_dim I0, S20 dim=0
        imov_dim I0, S13 dim=1
        imov_dim I1, S22 dim=0
        imov_dim I1, S14 dim=1
        imov_dim I2, S24 dim=0
        imov_dim I2, S15 dim=1
        ld_tnsr_s S19, I4, 0
        ld_tnsr_s S21, I0, 0
        ld_tnsr_s S23, I1, 0
        ld_tnsr_s S25, I2, 0
        ACC S18, S19
        ACC S20, S21
        ACC S22, S23
        ACC S24, S25
        add.i32 S17, S17, 4
        jmp lp4
lp:     cmp.ge.i32 SP2, S17, S0
        jmp lp_done @SP2
        imov_dim I3, S17 dim=0
        ld_tnsr_s S18, I3, 1
        imov_dim I4, S18 dim=0
        imov_dim I4, S17 dim=1
        ld_tnsr_s S19, I4, 0
        ACC S18, S19
        add.i32 S17, S17, 1
        jmp lp
lp_done:
        div.f32 S12, S10, S11
        imov I3, 0
        st_tnsr_s I3, 2, S12
        st_tnsr_s I3, 3, S11
        halt
