// reduce_dim0.s: Y = reduction of X over dim 0 (the innermost), computed in f32.
//
// Tensors: 0 X, 1 Y (size 1 in dim 0). The index space is {1, Y's dims 1..4}: each step reduces
// one row. A software loop adds (or maxes) the row's vectors into a vector accumulator, lane by
// lane, starting from RINIT; the descriptor's padding (0 for sum / mean, -inf for max) fills the
// lanes past the row's end. bf16: lo and hi accumulators are combined lane-wise (COMBINE), then
// RLANES (reduce.add: ISA.md's pairwise tree; reduce.max) puts the row's result in lane 0, and
// the store writes lane 0 only (Y's dim 0 has size 1).
// SRF: S0 = the row length N0 (i32), S1 = N0 as f32 (mean).
//
// The glue's prelude defines: LANES, the io include, .equ RINIT, .macro RACC d, a, b,
// .macro RLANES d, a, .macro RFINISH d, a.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        mov.f32 V10, RINIT
        mov.f32 V20, RINIT
        imov I3, I2; ld_smov S17, 0
red:    cmp.ge.i32 SP2, S17, S0
        jmp red_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH3 RACC, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, LANES
        jmp red
red_done:
        COMBINE RACC, V10, V20
        RLANES V10, V10
        RFINISH V10, V10
        NARROW V10, V10
end_d0: st_tnsr I2, 1, V9; iadd_dim I2, LANES dim=0
        NEST_END
