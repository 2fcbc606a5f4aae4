// nll_loss_fwd.s: negative log-likelihood loss, reduction mean, computed in f32.
//
// Tensors: 0 logp [C, N] (dim 0 = classes; padding NaN), 1 target (i32, N elements, viewed as
// [1, N] so that a vector read at (0, n) reads target n alone), 2 loss, 3 total_weight (one
// element each). The index space is {1}: one core walks the N samples in order: for each sample
// whose target is not ignore_index, sum -= logp[target, n] and count += 1 (f32 scalars); then
// loss = sum / count, total_weight = count. A target outside 0 .. C-1 reads the padding NaN, so
// the loss is NaN; all samples ignored give 0 / 0 = NaN (PyTorch's mean). SRF: S0 = N (i32),
// S1 = ignore_index (i32), S2 = 1 if ignore_index is given.
// Eight samples a group, software-pipelined: a group's eight logp loads go out together with the
// next group's eight target loads (each sample's two loads depend on each other; the samples do
// not). The sums still run in sample order. The samples past the last group of eight go one at
// a time. Each group prefetches the target and the logp row of the samples AHEAD (the glue's
// .equ) on, so its loads find their data in the prefetch buffer instead of waiting a memory
// latency a group (a row of logp is one read, which the load of its target's element takes).
// Registers: S10 sum, S11 count, S17 the group's first sample, S18..S25 its targets, S26..S33
// their logp values; SP5..SP12 "sample ignored" of the group (taken before the next targets land);
// I5 the next sample to prefetch.
.macro IGNORED p, t
        cmp.eq.i32 \p, \t, S1
        pand \p, \p, SP4
.endm
.macro ACC p, v
        sub.f32 S10, S10, \v @!\p
        add.f32 S11, S11, 1.0 @!\p
.endm
// The targets of samples S17 .. S17 + 7 into S18..S25 (I3 walks them).
.macro TARGETS8
        imov_dim I3, S17 dim=1
        ld_tnsr_s S18, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S19, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S20, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S21, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S22, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S23, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S24, I3, 1; iadd_dim I3, 1 dim=1
        ld_tnsr_s S25, I3, 1
.endm
// The target and the logp row of sample I5, then I5 one sample on.
.macro PREFETCH_SAMPLE
        prefetch I5, 1
        prefetch I5, 0; iadd_dim I5, 1 dim=1
.endm
.macro PREFETCH8
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
        PREFETCH_SAMPLE
.endm
// logp[target, sample] of one sample into \v (I4 at the sample's column).
.macro LOGP t, v
        imov_dim I4, \t dim=0
        ld_tnsr_s \v, I4, 0; iadd_dim I4, 1 dim=1
.endm
        mov S10, 0.0
        mov S11, 0.0
        cmp.ne.i32 SP4, S2, 0
        imov I3, 0
        imov I4, 0
        imov I5, 0
        mov S16, 0                      // the first AHEAD samples (each group prefetches AHEAD on)
        mov S15, AHEAD
        loop S16, S15, prefetch_first
        prefetch I5, 1
prefetch_first: prefetch I5, 0; iadd_dim I5, 1 dim=1
        ld_smov S17, 0
        sub.i32 S9, S0, 7               // a group of eight starts below N - 7
        cmp.ge.i32 SP2, S17, S9
        jmp lp @SP2
        TARGETS8
lp8:    imov_dim I4, S17 dim=1
        PREFETCH8
        LOGP S18, S26
        LOGP S19, S27
        LOGP S20, S28
        LOGP S21, S29
        LOGP S22, S30
        LOGP S23, S31
        LOGP S24, S32
        LOGP S25, S33
        IGNORED SP5, S18
        IGNORED SP6, S19
        IGNORED SP7, S20
        IGNORED SP8, S21
        IGNORED SP9, S22
        IGNORED SP10, S23
        IGNORED SP11, S24
        IGNORED SP12, S25
        add.i32 S17, S17, 8
        cmp.ge.i32 SP2, S17, S9
        jmp acc8 @SP2
        TARGETS8
acc8:   ACC SP5, S26
        ACC SP6, S27
        ACC SP7, S28
        ACC SP8, S29
        ACC SP9, S30
        ACC SP10, S31
        ACC SP11, S32
        ACC SP12, S33
        jmp lp8 @!SP2
lp:     cmp.ge.i32 SP2, S17, S0
        jmp lp_done @SP2
        imov_dim I3, S17 dim=1
        ld_tnsr_s S18, I3, 1
        imov_dim I4, S18 dim=0
        imov_dim I4, S17 dim=1
        ld_tnsr_s S19, I4, 0
        IGNORED SP3, S18
        ACC SP3, S19
        add.i32 S17, S17, 1
        jmp lp
lp_done:
        div.f32 S12, S10, S11
        imov I3, 0
        st_tnsr_s I3, 2, S12
        st_tnsr_s I3, 3, S11
        halt
