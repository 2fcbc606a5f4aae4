// random_fwd.s: Y = random numbers from the counter-based generator of rng.inc (dropout's):
// element i (its index in Y's dense order, dim 0 fastest) draws h = mix32(i ^ key), key =
// mix32(seed ^ 0x9e3779b9) (the glue's S2, or KEY_SETUP's V30 from the seed tensor). Computed in
// f32; bf16 rounds once on the store. It depends only on (seed, i): any split of the index space
// gives the same bits.
//   uniform: u = (h >> 8) * 2^-24 in [0, 1), Y = low + u * (high - low)      (S0 low, S1 high - low)
//   normal:  u = ((h >> 8) | 1) * 2^-24, an odd multiple of 2^-24 in (0, 1), symmetric about 1/2;
//            z = Wichura's PPND7 (AS 241, the single-precision variant) inverse normal CDF of u;
//            Y = mean + std * z                                              (S0 mean, S1 std)
// PPND7: q = u - 1/2; |q| <= 0.425: r = 0.180625 - q^2, z = q A(r) / B(r) (cubics); else
// s = sqrt(-log(min(u, 1 - u))) - 1.6, z = +-C(s) / D(s) (a cubic over a quadratic; the sign of
// q). Its r > 5 branch is never needed (u >= 2^-24 gives sqrt(-log u) < 4.1). Error: 5e-7 for
// the formula; in f32 (these ops) within 1e-6 of its double evaluation (README.md).
//
// Tensors: [0 seed (i32, one element),] Y_T Y. SRF: S0, S1 above, S2 key (u32), S3..S6 the sizes
// of Y's dims 0..3, S8 the row's dense index (ROW_SETUP). Registers: V16 / V17 lane ids of the
// lo / hi half (bf16), V11 / V21 indices then hashes, V13 / V23 values, scratch V4..V8, VP4.
// The glue's prelude defines: LANES, the io include, .equ Y_T, .macro KEY_SETUP, .macro XOR_KEY
// d, a (\d = \a ^ key), .macro DRAW d, h (DRAW_UNIFORM or DRAW_NORMAL).
.include "rng.inc"
.macro ROW_SETUP
        DENSE_ROW_BASE
.endm
.include "nest.inc"

// \d = mix32(\a ^ key).
.macro HASH d, a
        XOR_KEY \d, \a
        MIX32 \d
.endm
// \d (f32) = low + u * (high - low) from the hash \h (clobbered).
.macro DRAW_UNIFORM d, h
        shr.u32 \h, \h, 8
        convert.i32.f32 \d, \h
        mul.f32 \d, \d, 0x33800000
        mul.f32 \d, \d, S1
        add.f32 \d, \d, S0
.endm
// PPND7's coefficients.
.equ PPND_A0 3.3871327179
.equ PPND_A1 50.434271938
.equ PPND_A2 159.29113202
.equ PPND_A3 59.109374720
.equ PPND_B1 17.895169469
.equ PPND_B2 78.757757664
.equ PPND_B3 67.187563600
.equ PPND_C0 1.4234372777
.equ PPND_C1 2.7568153900
.equ PPND_C2 1.3067284816
.equ PPND_C3 0.17023821103
.equ PPND_D1 0.73700164250
.equ PPND_D2 0.12021132975
// \d (f32) = mean + std * z from the hash \h (clobbered). Both branches for every lane, then sel.
.macro DRAW_NORMAL d, h
        shr.u32 \h, \h, 8
        or.u32 \h, \h, 1
        convert.i32.f32 \d, \h
        mul.f32 \d, \d, 0x33800000
        sub.f32 V5, \d, 0.5
        // central: q A(r) / B(r), r = 0.180625 - q^2
        mul.f32 V6, V5, V5
        mov.f32 V7, 0.180625
        sub.f32 V6, V7, V6
        mul.f32 V7, V6, PPND_A3
        add.f32 V7, V7, PPND_A2
        mul.f32 V7, V7, V6
        add.f32 V7, V7, PPND_A1
        mul.f32 V7, V7, V6
        add.f32 V7, V7, PPND_A0
        mul.f32 V7, V7, V5
        mul.f32 V8, V6, PPND_B3
        add.f32 V8, V8, PPND_B2
        mul.f32 V8, V8, V6
        add.f32 V8, V8, PPND_B1
        mul.f32 V8, V8, V6
        add.f32 V8, V8, 1.0
        div.f32 V7, V7, V8
        // tails: C(s) / D(s), s = sqrt(-log(min(u, 1 - u))) - 1.6, negative below the median
        mov.f32 V6, 1.0
        sub.f32 V6, V6, \d
        min.f32 V6, V6, \d
        special.log.f32 V6, V6
        neg.f32 V6, V6
        special.sqrt.f32 V6, V6
        sub.f32 V6, V6, 1.6
        mul.f32 V8, V6, PPND_C3
        add.f32 V8, V8, PPND_C2
        mul.f32 V8, V8, V6
        add.f32 V8, V8, PPND_C1
        mul.f32 V8, V8, V6
        add.f32 V8, V8, PPND_C0
        mul.f32 \h, V6, PPND_D2
        add.f32 \h, \h, PPND_D1
        mul.f32 \h, \h, V6
        add.f32 \h, \h, 1.0
        div.f32 V8, V8, \h
        neg.f32 \h, V8
        cmp.lt.f32 VP4, V5, 0.0
        sel.f32 V8, \h, V8, VP4
        // pick the branch by |q| <= 0.425, then scale
        abs.f32 V6, V5
        cmp.le.f32 VP4, V6, 0.425
        sel.f32 \d, V7, V8, VP4
        mul.f32 \d, \d, S1
        add.f32 \d, \d, S0
.endm

        KEY_SETUP
        lane_id.i32 V16
        add.i32 V17, V16, F32_LANES
        NEST_BEGIN
        iget_dim S9, I2 dim=0
        add.i32 S9, S9, S8
        EACH3 add.i32, V11, V16, S9, V21, V17, S9
        EACH2 HASH, V11, V11, V21, V21
        EACH2 DRAW, V13, V11, V23, V21
        NARROW V13, V23
end_d0: st_tnsr I2, Y_T, V9; iadd_dim I2, LANES dim=0
        NEST_END
