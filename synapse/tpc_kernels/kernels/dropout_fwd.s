// dropout_fwd.s: Y = X * mask * scale with a counter-based generator (rng.inc), computed in f32.
//
// Tensors: 0 X, [1 seed,] Y_T Y, MASK_T mask (X's shape and dtype; 1 kept, 0 dropped). The
// generator (README.md): element i (its index in X's dense order, 32-bit) draws h = mix32(i ^ key),
// mix32 the "lowbias32" integer hash (x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15;
// x *= 0x846ca68b; x ^= x >> 16), key = mix32(seed ^ 0x9e3779b9) (the glue's S2, or KEY_SETUP's
// V30 from the seed tensor; XOR_KEY applies it), u = (h >> 8) * 2^-24 in [0, 1);
// the element is kept when u >= p. It depends only on (seed, i), so any split of the index space
// gives the same mask. Y = (X * mask) * scale (PyTorch's order). The index math is done for both
// halves of a step (lo: lanes 0 .. F32_LANES-1, hi: the next F32_LANES): a bf16 vector's halves,
// or two f32 vectors (io_f32x2.inc). The glue's STORE_Y stores Y's pair leaving I2 as it was.
// SRF: S0 = p, S1 = scale = 1 / (1 - p) (0 when p = 1), S2 = key (u32), S3..S6 = sizes of dims 0..3.
.include "rng.inc"
// S8 = the dense index of the row's element at dim 0 = 0.
.macro ROW_SETUP
        DENSE_ROW_BASE
.endm
.include "nest.inc"

        KEY_SETUP
        lane_id.i32 V16
        add.i32 V17, V16, F32_LANES
        NEST_BEGIN
        iget_dim S9, I2 dim=0
        add.i32 S9, S9, S8
        add.i32 V11, V16, S9
        add.i32 V21, V17, S9
        XOR_KEY V11
        XOR_KEY V21
        MIX32_PAIR V11, V21
        shr.u32 V11, V11, 8
        shr.u32 V21, V21, 8
        convert.i32.f32 V11, V11
        convert.i32.f32 V21, V21
        mul.f32 V11, V11, 0x33800000
        mul.f32 V21, V21, 0x33800000
        cmp.ge.f32 VP2, V11, S0
        cmp.ge.f32 VP3, V21, S0
        mov.f32 V18, 0.0
        mov.f32 V28, 0.0
        mov.f32 V18, 1.0 @VP2
        mov.f32 V28, 1.0 @VP3
        LDW V12, V22, I2, 0
        EACH3 mul.f32, V13, V12, V18, V23, V22, V28
        EACH3 mul.f32, V13, V13, S1, V23, V23, S1
        STORE_Y V13, V23
        STW_BODY V18, V28, MASK_T
end_d0: STW_LAST V18, V28, MASK_T
        NEST_END
