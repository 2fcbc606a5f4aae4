// softmax_fwd.s: softmax / log_softmax of X over dim 0 (the innermost), computed in f32.
//
// Tensors: 0 X, 1 Y (X's shape). The index space is {1, dims 1..4}: each step is one row, in
// three software passes over its vectors: (1) m = max of the row; (2) s = sum of exp(x - m)
// (reduce.add, ISA.md's tree); (3) Y = SM_OUT(x): exp(x - m) / s, or (x - m) - log(s). X's
// padding is -inf, so the lanes past the row's end add exp(-inf) = 0. m and s are broadcast to
// every lane with a shuffle by a zero index vector (V8). SRF: S0 = the row length N0.
//
// The glue's prelude defines: LANES, the io include, .macro SM_ROW s (log_softmax: s = log(s)),
// .macro SM_OUT d, a (uses V14 = m, V15 = s or log(s); scratch V4).
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        mov.f32 V10, 0xFF800000
        mov.f32 V20, 0xFF800000
        mov.f32 V8, 0.0
        imov I3, I2; ld_smov S17, 0
p1:     cmp.ge.i32 SP2, S17, S0
        jmp p1_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH3 max.f32, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, LANES
        jmp p1
p1_done:
        COMBINE max.f32, V10, V20
        reduce.max.f32 V10, V10
        shuffle.f32 V14, V10, V8
        mov.f32 V10, 0.0
        mov.f32 V20, 0.0; ld_smov S17, 0
        PREFETCH_ROW
p2:     cmp.ge.i32 SP2, S17, S0
        jmp p2_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH3 sub.f32, V11, V11, V14, V21, V21, V14
        EACH2 special.exp.f32, V11, V11, V21, V21
        EACH3 add.f32, V10, V10, V11, V20, V20, V21
        add.i32 S17, S17, LANES
        jmp p2
p2_done:
        COMBINE add.f32, V10, V20
        reduce.add.f32 V10, V10
        shuffle.f32 V15, V10, V8
        SM_ROW V15
        ld_smov S17, 0
        PREFETCH_ROW
p3:     cmp.ge.i32 SP2, S17, S0
        jmp p3_done @SP2
        imov_dim I3, S17 dim=0
        PREFETCH_STEP I7
        LDW V11, V21, I3, 0
        EACH2 SM_OUT, V13, V11, V23, V21
        NARROW V13, V23
        st_tnsr I3, 1, V9
        add.i32 S17, S17, LANES
        jmp p3
p3_done:
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
