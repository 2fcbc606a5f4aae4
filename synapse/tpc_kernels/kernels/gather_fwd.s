// gather_fwd.s: Y[c] = X[c'] with c'[GDIM] = index[c] and c'[d] = c[d] otherwise (PyTorch's
// gather along dim GDIM; Y has index's shape). One element per index-space step, moved with
// ld_tnsr_s / st_tnsr_s: the index space is Y's shape in elements (`LANES` 1).
//
// Tensors: 0 X, 1 index (i32, Y's shape), 2 Y. X and Y are described with the unsigned type of
// the element's width (u32 / u16), so the scalar moves keep every bit. An index outside
// 0 .. X.size(GDIM)-1 (negative included) addresses no element of X: the load reads the
// descriptor's padding (0) without a memory access. The glue checks index.size(d) <= X.size(d)
// for d != GDIM, so the other coordinates are always inside X. Slow like permute_gather.s (two
// dependent global loads per element); see README.md.
// The prelude defines `.equ LANES 1` and `.equ GDIM dim`.
.macro ROW_SETUP
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr_s S17, I2, 1; imov I3, I2
        imov_dim I3, S17 dim=GDIM
        ld_tnsr_s S18, I3, 0
end_d0: st_tnsr_s I2, 2, S18; iadd_dim I2, LANES dim=0
        NEST_END
