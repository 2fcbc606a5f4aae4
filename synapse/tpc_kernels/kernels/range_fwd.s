// range_fwd.s: Y[i] = i < H ? start + step * i : end - step * (n - 1 - i), i = the element's index
// in Y's dense order (dim 0 fastest), n = Y's element count (PyTorch's linspace rule; arange
// passes H = n). f32: i and n - 1 - i are exact in f32 (the glue checks n <= 2^24), each product
// is rounded, then the sum (difference). i32: integer arithmetic, wrapping.
//
// Tensors: 0 Y. An index-space step is one vector of Y (LANES elements).
// SRF: S0 start, S1 step, S2 end (f32 bits or i32), S3 H (i32, ceil(halfway) clamped to 0 .. n),
// S4 n - 1 (i32), S5..S8 the sizes of Y's dims 0..3.
// The glue's prelude defines LANES and `.macro VALUES d` (RANGE_VALUES f32, convert.i32.f32, \d
// or RANGE_VALUES i32, mov.i32, \d).

// \d = the values of the lanes whose index is V1 (i32) and V2 = n - 1 - V1, VP2 = V1 < H.
// \cvt makes an index a number of type \t. V18 = end in every lane.
.macro RANGE_VALUES t, cvt, d
        \cvt V3, V1
        mul.\t V3, V3, S1
        add.\t V3, V3, S0
        \cvt V4, V2
        mul.\t V4, V4, S1
        sub.\t V4, V18, V4
        sel.\t \d, V3, V4, VP2
.endm
// S9 = the dense index of the element at (0, I2's dims 1..4). Scratch: S10.
.macro ROW_SETUP
        iget_dim S9, I2 dim=4
        mul.i32 S9, S9, S8
        iget_dim S10, I2 dim=3
        add.i32 S9, S9, S10
        mul.i32 S9, S9, S7
        iget_dim S10, I2 dim=2
        add.i32 S9, S9, S10
        mul.i32 S9, S9, S6
        iget_dim S10, I2 dim=1
        add.i32 S9, S9, S10
        mul.i32 S9, S9, S5
.endm
.include "nest.inc"

        lane_id.i32 V16
        mov.i32 V17, S4
        mov.i32 V18, S2
        NEST_BEGIN
        iget_dim S10, I2 dim=0
        add.i32 S10, S10, S9
        add.i32 V1, V16, S10
        sub.i32 V2, V17, V1
        cmp.lt.i32 VP2, V1, S3
        VALUES V5
end_d0: st_tnsr I2, 0, V5; iadd_dim I2, LANES dim=0
        NEST_END
