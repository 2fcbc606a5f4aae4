// layernorm_bwd_gb.s: dgamma and dbeta of layer normalization over dim 0, computed in f32.
//
// Tensors: 0 grad, 1 x, 2 mean, 3 rstd (as layernorm_bwd.s), 4 dgamma, 5 dbeta ([N0]). The index
// space is {ceil(N0 / LANES)}: each step owns one vector of dgamma / dbeta and walks every row
// (software loops over dims 4..1, dim 1 fastest, i.e. the rows in memory order), accumulating
// dgamma += g * ((x - mean) * rstd) and dbeta += g in f32; no two cores write the same element.
// Split across cores (the glue's row chunks): dim 4 is the chunk, in the index space too, and a
// step walks its own chunk's rows (S7 = 1), its sums going to that chunk's partials.
// SRF: S4..S7 = the sizes of dims 1..4 (i32); dim 4 runs from the step's own coordinate.
// The glue's STORE_SUMS and STORE_LAST (end_d0's bundle) store the sums: rounded to the dtype (NARROW),
// or for a bf16 split's partials in f32 (both halves, the hi one F32_LANES on).
// Rows go four at a time while four remain: the glue's ROW_BLOCK (layernorm_gamma_beta.cpp), the
// four rows' bodies below list-scheduled into one block (I3 / I4 at its first row, stepped a row
// at a time), the same operations in the same order per element as the single row's; the rest
// one at a time.
.macro ROW_SETUP
.endm
.include "nest.inc"

// Prefetching along the rows: before a run of rows (dim 1) its first 16 rows' grad and x vectors
// and their mean and rstd are prefetched (I7: the vectors, I6: the statistics), then each row
// prefetches the row 16 ahead (past the run's end: nothing is read).
.macro PREFETCH_ROW_AT
        prefetch I7, 0
        prefetch I7, 1
        prefetch I6, 2
        prefetch I6, 3; iadd_dim I7, 1 dim=1
        iadd_dim I6, 1 dim=1
.endm
.macro PREFETCH_ROWS_4
        PREFETCH_ROW_AT
        PREFETCH_ROW_AT
        PREFETCH_ROW_AT
        PREFETCH_ROW_AT
.endm
.macro PREFETCH_ROWS
        imov I7, I3
        imov_dim I7, 0 dim=1
        imov I6, I7
        imov_dim I6, 0 dim=0
        PREFETCH_ROWS_4
        PREFETCH_ROWS_4
        PREFETCH_ROWS_4
        PREFETCH_ROWS_4
.endm
.macro PREFETCH_NEXT_ROW
        PREFETCH_ROW_AT
.endm

        NEST_BEGIN
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0
        mov.f32 V18, 0.0
        mov.f32 V28, 0.0
        imov I3, I2
        iget_dim S8, I2 dim=4
        add.i32 S14, S8, S7
r4:     cmp.ge.i32 SP2, S8, S14
        jmp r4_done @SP2
        imov_dim I3, S8 dim=4; ld_smov S9, 0
r3:     cmp.ge.i32 SP2, S9, S6
        jmp r3_done @SP2
        imov_dim I3, S9 dim=3; ld_smov S10, 0
r2:     cmp.ge.i32 SP2, S10, S5
        jmp r2_done @SP2
        imov_dim I3, S10 dim=2; ld_smov S11, 0
        PREFETCH_ROWS
        sub.i32 S15, S4, 3
r1x4:   cmp.ge.i32 SP2, S11, S15
        jmp r1 @SP2
        imov_dim I3, S11 dim=1
        imov I4, I3
        imov_dim I4, 0 dim=0
        ROW_BLOCK
        add.i32 S11, S11, 4
        jmp r1x4
r1:     cmp.ge.i32 SP2, S11, S4
        jmp r1_done @SP2
        imov_dim I3, S11 dim=1
        PREFETCH_NEXT_ROW
        imov I4, I3
        imov_dim I4, 0 dim=0
        ld_tnsr_s S12, I4, 2
        ld_tnsr_s S13, I4, 3
        mov.f32 V14, S12
        mov.f32 V15, S13
        LDW V11, V21, I3, 0
        LDW V12, V22, I3, 1
        EACH3 sub.f32, V12, V12, V14, V22, V22, V14
        EACH3 mul.f32, V12, V12, V15, V22, V22, V15
        EACH3 mul.f32, V12, V11, V12, V22, V21, V22
        EACH3 add.f32, V10, V10, V12, V20, V20, V22
        EACH3 add.f32, V18, V18, V11, V28, V28, V21
        add.i32 S11, S11, 1
        jmp r1
r1_done:
        add.i32 S10, S10, 1
        jmp r2
r2_done:
        add.i32 S9, S9, 1
        jmp r3
r3_done:
        add.i32 S8, S8, 1
        jmp r4
r4_done:
        STORE_SUMS
end_d0: STORE_LAST
        NEST_END
