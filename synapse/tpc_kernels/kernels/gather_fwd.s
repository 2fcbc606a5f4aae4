// gather_fwd.s: Y[c] = X[c'] with c'[GDIM] = index[c] and c'[d] = c[d] otherwise (PyTorch's
// gather along dim GDIM; Y has index's shape). LANES elements of dim 0 a step, moved with
// ld_tnsr_s / st_tnsr_s: the index space is Y's shape, dim 0 in steps of LANES.
//
// Tensors: 0 X, 1 index (i32, Y's shape), 2 Y. X and Y are described with the unsigned type of
// the element's width (u32 / u16), so the scalar moves keep every bit. An index outside
// 0 .. X.size(GDIM)-1 (negative included) addresses no element of X: the load reads the
// descriptor's padding (0) without a memory access. The glue checks index.size(d) <= X.size(d)
// for d != GDIM, so the other coordinates are always inside X; elements past the row's end read
// index padding (0) and are not stored.
// The prelude defines `.equ LANES n`, `.equ GDIM dim`, ROW_SETUP (the row's first step's indices
// into S0..S(n-1)) and GATHER_STEP (embedding_rows.cpp's gather_step: the step's elements loaded
// at those indices into S8.., the next step's indices loaded, the elements stored), so a step
// waits about one memory latency (its elements), its indices having arrived during the step before.
.include "nest.inc"

        NEST_BEGIN
        GATHER_STEP
end_d0: iadd_dim I2, LANES dim=0
        NEST_END
