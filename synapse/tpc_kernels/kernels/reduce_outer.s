// reduce_outer.s: Y = reduction of X over dim RDIM >= 1 (sum, mean, max), computed in f32.
//
// Tensors: 0 X, 1 Y (X's shape with size 1 at RDIM). The index space is Y's: each step makes one
// output vector by accumulating the N = S0 vectors of X along RDIM in order (k = 0 .. N-1,
// starting from RINIT), a software loop inside the nest (the nest holds all 4 hardware loops).
// With io_f32x2.inc (f32) a step makes two output vectors, each with its own accumulator (lo, hi),
// so the loop's overhead is shared and every column keeps its order. Rows go four at a time (their
// loads in flight together, the accumulations still in row order), the last N mod 4 one at a time.
// SRF: S0 = N (i32), S1 = N as f32 (mean).
//
// The glue's prelude defines: LANES, the io include, .equ RDIM, .equ RAHEAD (rows prefetched
// ahead: a multiple of 16, the prefetch budget over the vectors of a row), .equ RINIT (0.0 or -inf),
// .macro RACC d, a, b (add.f32 / max.f32), .macro RFINISH d, a (mean: divide by S1; else empty),
// .macro RLANES d, a (unused here).
.macro ROW_SETUP
.endm
.include "nest.inc"

// The column's first RAHEAD vectors along RDIM (of each of the step's columns) are prefetched
// before its loop, then each step prefetches the vector RAHEAD ahead: about the HBM latency of
// iterations (16 was a third of it). Over the column's last RAHEAD rows the stream goes on into
// the next step's column where that is the next one along dim 0 in this row (S19 its dim-0
// coordinate), so that step starts warm instead of waiting a memory latency for its first rows
// (a split's chunks are 16 to 64 rows: most of a step was that wait).
.macro PREFETCH_ALONG
        PREFETCH_VECTORS I7, 0
        iadd_dim I7, 1 dim=RDIM
.endm
.macro PREFETCH_ALONG_4
        PREFETCH_ALONG
        PREFETCH_ALONG
        PREFETCH_ALONG
        PREFETCH_ALONG
.endm
.macro PREFETCH_ALONG_16
        PREFETCH_ALONG_4
        PREFETCH_ALONG_4
        PREFETCH_ALONG_4
        PREFETCH_ALONG_4
.endm
.macro PREFETCH_COLUMN
        imov I7, I2; ld_smov S18, 0
column: PREFETCH_ALONG_16
        add.i32 S18, S18, 16
        cmp.lt.i32 SP3, S18, RAHEAD
        jmp column @SP3
.endm
// Four rows from S17 on, their loads in flight together (bf16: widened after all four are
// issued), the accumulations in row order.
.macro GROUP4
        imov_dim I3, S17 dim=RDIM
        PREFETCH_ALONG_4
        LD_RAW V11, V21, I3, 0
        iadd_dim I3, 1 dim=RDIM
        LD_RAW V12, V22, I3, 0
        iadd_dim I3, 1 dim=RDIM
        LD_RAW V13, V23, I3, 0
        iadd_dim I3, 1 dim=RDIM
        LD_RAW V14, V24, I3, 0
        WIDEN V11, V21
        WIDEN V12, V22
        WIDEN V13, V23
        WIDEN V14, V24
        EACH3 RACC, V10, V10, V11, V20, V20, V21
        EACH3 RACC, V10, V10, V12, V20, V20, V22
        EACH3 RACC, V10, V10, V13, V20, V20, V23
        EACH3 RACC, V10, V10, V14, V20, V20, V24
        add.i32 S17, S17, 4
.endm

        ld_smov S19, -1                 // no stream has gone on into a column yet
        NEST_BEGIN
        mov.f32 V10, RINIT
        mov.f32 V20, RINIT
        imov I3, I2; ld_smov S17, 0
        iget_dim S16, I2 dim=0
        cmp.eq.i32 SP4, S16, S19        // the last step's stream went on into this column
        jmp warm @SP4
        PREFETCH_COLUMN
warm:   add.i32 S19, S16, LANES         // the next step's column, if it is the next in this row
        sub.i32 S18, S0, 3              // a group of four rows starts below N - 3
        sub.i32 S16, S0, RAHEAD         // ... and keeps the stream in this column below N - RAHEAD
        min.i32 S16, S16, S18
red4:   cmp.ge.i32 SP2, S17, S16
        jmp next @SP2
        GROUP4
        jmp red4
next:   imov I7, I2                     // the stream goes on into the next column, from its first row
        iadd_dim I7, LANES dim=0
red4n:  cmp.ge.i32 SP2, S17, S18
        jmp red @SP2
        GROUP4
        jmp red4n
red:    cmp.ge.i32 SP2, S17, S0
        jmp red_done @SP2
        imov_dim I3, S17 dim=RDIM
        PREFETCH_ALONG
        LDW V11, V21, I3, 0
        EACH3 RACC, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, 1
        jmp red
red_done:
        EACH2 RFINISH, V10, V10, V20, V20
        STW_BODY V10, V20, 1
end_d0: STW_LAST V10, V20, 1
        NEST_END
