// A long mac chain for `hpusim bench tpc` (compute bound): Y[i] = X[i] after K in-place steps
// X[i] = X[i] + X[i] * s (K non-fused macs per element, so Y = X (1 + s)^K with K roundings).
//
// Tensors: 0 = X, 1 = Y (1-D, dtype T); S0 = s (f32 bits; rounded to bf16 for T = bf16), S1 = K
// (at least 2). The slice size must be a positive multiple of 16 vectors (16 * LANES elements).
// The file defines macros only: the bench appends the call, "MAC_CHAIN f32, 64" or
// "MAC_CHAIN bf16, 128" (type suffix, lanes of a 2048-bit vector).
//
// Schedule: two groups of 8 vectors, G in V0..V7 and H in V8..V15, take turns. A phase runs the
// K macs of one group round-robin (eight independent chains, dependency distance 8 >=
// vpu_latency, so one mac issues every cycle); during its first 16 bundles it stores the other
// group (finished in the previous phase) and reloads it with the next 8 vectors, whose loads
// then have 8 K cycles to arrive. Rounds 3..K run in a hardware loop (no cost per iteration);
// each phase is 8 K + 1 bundles, the extra one being the inner loop bundle.

// A phase computing H while storing and reloading G. \last labels its final bundle.
.macro PHASE_H T, LANES, last
        mac.\T V8, V8, S0; st_tnsr I3, 1, V0; iadd_dim I3, \LANES dim=0; ld_smov S30, S32
        mac.\T V9, V9, S0; st_tnsr I3, 1, V1; iadd_dim I3, \LANES dim=0
        mac.\T V10, V10, S0; st_tnsr I3, 1, V2; iadd_dim I3, \LANES dim=0
        mac.\T V11, V11, S0; st_tnsr I3, 1, V3; iadd_dim I3, \LANES dim=0
        mac.\T V12, V12, S0; st_tnsr I3, 1, V4; iadd_dim I3, \LANES dim=0
        mac.\T V13, V13, S0; st_tnsr I3, 1, V5; iadd_dim I3, \LANES dim=0
        mac.\T V14, V14, S0; st_tnsr I3, 1, V6; iadd_dim I3, \LANES dim=0
        mac.\T V15, V15, S0; st_tnsr I3, 1, V7; iadd_dim I3, \LANES dim=0
        mac.\T V8, V8, S0; ld_tnsr V0, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V9, V9, S0; ld_tnsr V1, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V10, V10, S0; ld_tnsr V2, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V11, V11, S0; ld_tnsr V3, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V12, V12, S0; ld_tnsr V4, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V13, V13, S0; ld_tnsr V5, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V14, V14, S0; ld_tnsr V6, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V15, V15, S0; ld_tnsr V7, I2, 0; iadd_dim I2, \LANES dim=0
        ROUNDS_H \T, \last
.endm

// A phase computing G while storing and reloading H.
.macro PHASE_G T, LANES, last
        mac.\T V0, V0, S0; st_tnsr I3, 1, V8; iadd_dim I3, \LANES dim=0; ld_smov S30, S32
        mac.\T V1, V1, S0; st_tnsr I3, 1, V9; iadd_dim I3, \LANES dim=0
        mac.\T V2, V2, S0; st_tnsr I3, 1, V10; iadd_dim I3, \LANES dim=0
        mac.\T V3, V3, S0; st_tnsr I3, 1, V11; iadd_dim I3, \LANES dim=0
        mac.\T V4, V4, S0; st_tnsr I3, 1, V12; iadd_dim I3, \LANES dim=0
        mac.\T V5, V5, S0; st_tnsr I3, 1, V13; iadd_dim I3, \LANES dim=0
        mac.\T V6, V6, S0; st_tnsr I3, 1, V14; iadd_dim I3, \LANES dim=0
        mac.\T V7, V7, S0; st_tnsr I3, 1, V15; iadd_dim I3, \LANES dim=0
        mac.\T V0, V0, S0; ld_tnsr V8, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V1, V1, S0; ld_tnsr V9, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V2, V2, S0; ld_tnsr V10, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V3, V3, S0; ld_tnsr V11, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V4, V4, S0; ld_tnsr V12, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V5, V5, S0; ld_tnsr V13, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V6, V6, S0; ld_tnsr V14, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V7, V7, S0; ld_tnsr V15, I2, 0; iadd_dim I2, \LANES dim=0
        ROUNDS_G \T, \last
.endm

// The first phase: G was loaded by the prologue; nothing to store yet; loads H.
.macro PHASE_G_FIRST T, LANES, last
        mac.\T V0, V0, S0; ld_smov S30, S32
        mac.\T V1, V1, S0
        mac.\T V2, V2, S0
        mac.\T V3, V3, S0
        mac.\T V4, V4, S0
        mac.\T V5, V5, S0
        mac.\T V6, V6, S0
        mac.\T V7, V7, S0
        mac.\T V0, V0, S0; ld_tnsr V8, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V1, V1, S0; ld_tnsr V9, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V2, V2, S0; ld_tnsr V10, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V3, V3, S0; ld_tnsr V11, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V4, V4, S0; ld_tnsr V12, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V5, V5, S0; ld_tnsr V13, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V6, V6, S0; ld_tnsr V14, I2, 0; iadd_dim I2, \LANES dim=0
        mac.\T V7, V7, S0; ld_tnsr V15, I2, 0; iadd_dim I2, \LANES dim=0
        ROUNDS_G \T, \last
.endm

// The last phase: computes H and stores G, loads nothing.
.macro PHASE_H_LAST T, LANES, last
        mac.\T V8, V8, S0; st_tnsr I3, 1, V0; iadd_dim I3, \LANES dim=0; ld_smov S30, S32
        mac.\T V9, V9, S0; st_tnsr I3, 1, V1; iadd_dim I3, \LANES dim=0
        mac.\T V10, V10, S0; st_tnsr I3, 1, V2; iadd_dim I3, \LANES dim=0
        mac.\T V11, V11, S0; st_tnsr I3, 1, V3; iadd_dim I3, \LANES dim=0
        mac.\T V12, V12, S0; st_tnsr I3, 1, V4; iadd_dim I3, \LANES dim=0
        mac.\T V13, V13, S0; st_tnsr I3, 1, V5; iadd_dim I3, \LANES dim=0
        mac.\T V14, V14, S0; st_tnsr I3, 1, V6; iadd_dim I3, \LANES dim=0
        mac.\T V15, V15, S0; st_tnsr I3, 1, V7; iadd_dim I3, \LANES dim=0
        mac.\T V8, V8, S0
        mac.\T V9, V9, S0
        mac.\T V10, V10, S0
        mac.\T V11, V11, S0
        mac.\T V12, V12, S0
        mac.\T V13, V13, S0
        mac.\T V14, V14, S0
        mac.\T V15, V15, S0
        ROUNDS_H \T, \last
.endm

// Rounds 3..K of a group: S30 counts them (set to 0 by the phase's first bundle), S31 = K - 2.
.macro ROUNDS_H T, last
        loop S30, S31, \last
        mac.\T V8, V8, S0
        mac.\T V9, V9, S0
        mac.\T V10, V10, S0
        mac.\T V11, V11, S0
        mac.\T V12, V12, S0
        mac.\T V13, V13, S0
        mac.\T V14, V14, S0
\last:  mac.\T V15, V15, S0
.endm
.macro ROUNDS_G T, last
        loop S30, S31, \last
        mac.\T V0, V0, S0
        mac.\T V1, V1, S0
        mac.\T V2, V2, S0
        mac.\T V3, V3, S0
        mac.\T V4, V4, S0
        mac.\T V5, V5, S0
        mac.\T V6, V6, S0
\last:  mac.\T V7, V7, S0
.endm

// The kernel: T is the type suffix, LANES the lanes of one vector of T.
.macro MAC_CHAIN T, LANES
        ispace_offset I0
        ispace_size I1
        iget_dim S22, I0 dim=0                   // first element of the slice
        iget_dim S21, I1 dim=0
        div.i32 S21, S21, 16 * \LANES            // pairs of groups (G, H) in the slice
        sub.i32 S21, S21, 1                      // the loop stops before the last pair
        mov S20, 0
        sub.i32 S31, S1, 2                       // rounds in the inner loops
        imov I2, 0
        imov_dim I2, S22 dim=0
        imov I3, I2
        ld_tnsr V0, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V1, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V2, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V3, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V4, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V5, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V6, I2, 0; iadd_dim I2, \LANES dim=0
        ld_tnsr V7, I2, 0; iadd_dim I2, \LANES dim=0
        PHASE_G_FIRST \T, \LANES, first_end
        loop S20, S21, pair_end
        PHASE_H \T, \LANES, h_end
        PHASE_G \T, \LANES, pair_end
        PHASE_H_LAST \T, \LANES, last_end
        st_tnsr I3, 1, V8; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V9; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V10; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V11; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V12; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V13; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V14; iadd_dim I3, \LANES dim=0
        st_tnsr I3, 1, V15
        halt
.endm
