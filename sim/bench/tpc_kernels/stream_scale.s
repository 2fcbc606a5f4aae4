// STREAM SCALE for `hpusim bench tpc`: B[i] = s * A[i], f32, over this core's slice of dim 0.
//
// Tensors: 0 = A, 1 = B (1-D f32); S0 = s (f32 bits). The slice size must be a positive
// multiple of GROUP (2048 elements = 32 vectors of 64 lanes); the bench partitions with that
// granule.
//
// Schedule (software pipelined, as stream_binary.s): a group of 32 vectors lives in V0..V31. The
// loop body scales the current group in place, stores each product two vectors later and, in the
// same bundle, reloads the register with the next group. Those loads find their data in the
// prefetch buffer: I4 runs AHEAD vectors in front of the loads (I2), so about AHEAD + 32 reads
// are in flight per TPC: the bench sets AHEAD so that they fill the preset's prefetch buffer (96
// for 128 entries). Every access is one 256-byte vector. I2, I3 (stores) and I4 take
// one iadd each per vector, so three bundles per vector.
.equ LANES 64
.equ GROUP 2048
.equ AHEAD 96                            // prefetch distance in vectors (set by the bench)

// Store vector \j (scaled four bundles ago) and reload it with the next group; the VPU slot
// scales vector \n of the current group.
.macro STEP j, n
        mul.f32 V\n, V\n, S0; st_tnsr I3, 1, V\j; ld_tnsr V\j, I2, 0; iadd_dim I3, LANES dim=0
        prefetch I4, 0; iadd_dim I2, LANES dim=0
        iadd_dim I4, LANES dim=0
.endm
.macro TAIL j
        st_tnsr I3, 1, V\j; ld_tnsr V\j, I2, 0; iadd_dim I3, LANES dim=0
        prefetch I4, 0; iadd_dim I2, LANES dim=0
        iadd_dim I4, LANES dim=0
.endm
.macro LOAD j
        ld_tnsr V\j, I2, 0; iadd_dim I2, LANES dim=0
        prefetch I4, 0; iadd_dim I4, LANES dim=0
.endm
// Epilogue: scale vector \n of the last group and store vector \j (scaled four bundles ago).
.macro LAST n, j
        mul.f32 V\n, V\n, S0; st_tnsr I3, 1, V\j; iadd_dim I3, LANES dim=0
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
prefetched: prefetch I4, 0; iadd_dim I4, LANES dim=0
        LOAD 0
        LOAD 1
        LOAD 2
        LOAD 3
        LOAD 4
        LOAD 5
        LOAD 6
        LOAD 7
        LOAD 8
        LOAD 9
        LOAD 10
        LOAD 11
        LOAD 12
        LOAD 13
        LOAD 14
        LOAD 15
        LOAD 16
        LOAD 17
        LOAD 18
        LOAD 19
        LOAD 20
        LOAD 21
        LOAD 22
        LOAD 23
        LOAD 24
        LOAD 25
        LOAD 26
        LOAD 27
        LOAD 28
        LOAD 29
        LOAD 30
        LOAD 31
        loop S20, S21, group_end
        mul.f32 V0, V0, S0
        nop
        mul.f32 V1, V1, S0
        nop
        STEP 0, 2
        STEP 1, 3
        STEP 2, 4
        STEP 3, 5
        STEP 4, 6
        STEP 5, 7
        STEP 6, 8
        STEP 7, 9
        STEP 8, 10
        STEP 9, 11
        STEP 10, 12
        STEP 11, 13
        STEP 12, 14
        STEP 13, 15
        STEP 14, 16
        STEP 15, 17
        STEP 16, 18
        STEP 17, 19
        STEP 18, 20
        STEP 19, 21
        STEP 20, 22
        STEP 21, 23
        STEP 22, 24
        STEP 23, 25
        STEP 24, 26
        STEP 25, 27
        STEP 26, 28
        STEP 27, 29
        STEP 28, 30
        STEP 29, 31
        TAIL 30
        st_tnsr I3, 1, V31; ld_tnsr V31, I2, 0; iadd_dim I3, LANES dim=0
        prefetch I4, 0; iadd_dim I2, LANES dim=0
group_end: iadd_dim I4, LANES dim=0
        // The last group: scale and store without reloading.
        mul.f32 V0, V0, S0
        mul.f32 V1, V1, S0
        mul.f32 V2, V2, S0
        mul.f32 V3, V3, S0
        LAST 4, 0
        LAST 5, 1
        LAST 6, 2
        LAST 7, 3
        LAST 8, 4
        LAST 9, 5
        LAST 10, 6
        LAST 11, 7
        LAST 12, 8
        LAST 13, 9
        LAST 14, 10
        LAST 15, 11
        LAST 16, 12
        LAST 17, 13
        LAST 18, 14
        LAST 19, 15
        LAST 20, 16
        LAST 21, 17
        LAST 22, 18
        LAST 23, 19
        LAST 24, 20
        LAST 25, 21
        LAST 26, 22
        LAST 27, 23
        LAST 28, 24
        LAST 29, 25
        LAST 30, 26
        LAST 31, 27
        st_tnsr I3, 1, V28; iadd_dim I3, LANES dim=0
        st_tnsr I3, 1, V29; iadd_dim I3, LANES dim=0
        st_tnsr I3, 1, V30; iadd_dim I3, LANES dim=0
        st_tnsr I3, 1, V31
        halt
