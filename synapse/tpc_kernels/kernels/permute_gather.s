// permute_gather.s: Y = X permuted, for permutations that move dim 0 (Y's dim 0 is X's dim
// XDIM0 = perm[0] != 0, not contiguous in X): one element per index-space step, moved with
// ld_tnsr_s / st_tnsr_s. Correct for any permutation, but slow: two bundles and a global load
// latency per element. The library uses it for bf16; 32-bit elements go by tiles
// (tile_transpose.cpp; see README.md).
//
// Tensors: 0 X, 1 Y, both described with the unsigned integer type of the element's width (u32 /
// u16), so the scalar moves keep every bit (NaN payloads included). The prelude defines
// `.equ LANES 1` (the index space is Y's shape in elements), `.equ XDIM0 perm[0]` and ROW_SETUP,
// which sets I3 to X's coordinates of Y's element I2 (Y's dim d is X's dim perm[d]); along the
// row, Y's dim 0 and X's dim XDIM0 step together.
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr_s S17, I3, 0; iadd_dim I3, 1 dim=XDIM0
end_d0: st_tnsr_s I2, 1, S17; iadd_dim I2, LANES dim=0
        NEST_END
