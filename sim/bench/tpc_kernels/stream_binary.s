// STREAM ADD and TRIAD for `hpusim bench tpc`, f32, over this core's slice of dim 0:
//   ADD   C[i] = A[i] + B[i]          (COMPUTE Vd, Vb becomes add.f32 Vd, Vd, Vb)
//   TRIAD C[i] = A[i] + s * B[i]      (COMPUTE Vd, Vb becomes mac.f32 Vd, Vb, S0; not fused: ISA.md)
// The bench rewrites COMPUTE before assembling (sim/bench/tpc_bench.cpp); the schedule is shared.
//
// Tensors: 0 = A, 1 = B, 2 = C (1-D f32); TRIAD: S0 = s (f32 bits). The slice size must be a
// positive multiple of GROUP (1024 elements = 16 vectors of 64 lanes); the bench partitions with
// that granule.
//
// Schedule (software pipelined): a group of 16 vectors lives in V0..V15 (A) and V16..V31 (B).
// The loop body computes the current group in place, one COMPUTE per vector, stores each result
// two vectors later and, in the same bundle, reloads Vj and then V(16+j) with the next group.
// Those loads find their data in the prefetch buffer: I4 runs AHEAD vectors in front of the
// loads (I2) and prefetches A and B there, so about 2 x (AHEAD + 16) reads are in flight per TPC:
// the bench sets AHEAD so that they fill the preset's prefetch buffer (48 for 128 entries). Every
// access is one 256-byte vector; I2, I3 (stores) and I4 take one iadd each per vector.
.equ LANES 64
.equ GROUP 1024
.equ AHEAD 48                            // prefetch distance in vectors (2 entries each; set by the bench)

// Prefetch A and B at I4 and step I4 to the next vector.
.macro PREFETCH_AB
        prefetch I4, 0
        prefetch I4, 1; iadd_dim I4, LANES dim=0
.endm
// Store vector \j (computed two vectors ago), reload it and its B partner \bj with the next
// group; the VPU slot computes vector \n of the current group.
.macro STEP j, bj, n, bn
        COMPUTE V\n, V\bn; st_tnsr I3, 2, V\j; ld_tnsr V\j, I2, 0; iadd_dim I3, LANES dim=0
        ld_tnsr V\bj, I2, 1; iadd_dim I2, LANES dim=0
        PREFETCH_AB
.endm
// The same without a compute (the last two vectors of a group).
.macro TAIL j, bj
        st_tnsr I3, 2, V\j; ld_tnsr V\j, I2, 0; iadd_dim I3, LANES dim=0
        ld_tnsr V\bj, I2, 1; iadd_dim I2, LANES dim=0
        PREFETCH_AB
.endm
// Prologue: load vector \j of the first group.
.macro LOAD j, bj
        ld_tnsr V\j, I2, 0
        ld_tnsr V\bj, I2, 1; iadd_dim I2, LANES dim=0
        PREFETCH_AB
.endm
// Epilogue: compute vector \n of the last group and store vector \j (computed four bundles ago).
.macro LAST n, bn, j
        COMPUTE V\n, V\bn; st_tnsr I3, 2, V\j; iadd_dim I3, LANES dim=0
.endm

        ispace_offset I0
        ispace_size I1
        iget_dim S22, I0 dim=0                   // first element of the slice
        iget_dim S21, I1 dim=0
        div.i32 S21, S21, GROUP                  // groups in the slice
        sub.i32 S21, S21, 1                      // the loop stops before the last group
        mov S20, 0
        imov I2, 0
        imov_dim I2, S22 dim=0
        imov I3, I2
        imov I4, I2
        mov S18, 0
        mov S19, AHEAD
        loop S18, S19, prefetched                // prefetch the first AHEAD vectors
        prefetch I4, 0
prefetched: prefetch I4, 1; iadd_dim I4, LANES dim=0
        LOAD 0, 16
        LOAD 1, 17
        LOAD 2, 18
        LOAD 3, 19
        LOAD 4, 20
        LOAD 5, 21
        LOAD 6, 22
        LOAD 7, 23
        LOAD 8, 24
        LOAD 9, 25
        LOAD 10, 26
        LOAD 11, 27
        LOAD 12, 28
        LOAD 13, 29
        LOAD 14, 30
        LOAD 15, 31
        loop S20, S21, group_end
        COMPUTE V0, V16
        nop
        COMPUTE V1, V17
        nop
        STEP 0, 16, 2, 18
        STEP 1, 17, 3, 19
        STEP 2, 18, 4, 20
        STEP 3, 19, 5, 21
        STEP 4, 20, 6, 22
        STEP 5, 21, 7, 23
        STEP 6, 22, 8, 24
        STEP 7, 23, 9, 25
        STEP 8, 24, 10, 26
        STEP 9, 25, 11, 27
        STEP 10, 26, 12, 28
        STEP 11, 27, 13, 29
        STEP 12, 28, 14, 30
        STEP 13, 29, 15, 31
        TAIL 14, 30
        st_tnsr I3, 2, V15; ld_tnsr V15, I2, 0; iadd_dim I3, LANES dim=0
        ld_tnsr V31, I2, 1; iadd_dim I2, LANES dim=0
        prefetch I4, 0
group_end: prefetch I4, 1; iadd_dim I4, LANES dim=0
        // The last group: compute and store without reloading.
        COMPUTE V0, V16
        COMPUTE V1, V17
        COMPUTE V2, V18
        COMPUTE V3, V19
        LAST 4, 20, 0
        LAST 5, 21, 1
        LAST 6, 22, 2
        LAST 7, 23, 3
        LAST 8, 24, 4
        LAST 9, 25, 5
        LAST 10, 26, 6
        LAST 11, 27, 7
        LAST 12, 28, 8
        LAST 13, 29, 9
        LAST 14, 30, 10
        LAST 15, 31, 11
        st_tnsr I3, 2, V12; iadd_dim I3, LANES dim=0
        st_tnsr I3, 2, V13; iadd_dim I3, LANES dim=0
        st_tnsr I3, 2, V14; iadd_dim I3, LANES dim=0
        st_tnsr I3, 2, V15
        halt
