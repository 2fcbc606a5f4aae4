// embedding_fwd.s: Y[:, n] = W[:, idx[n]] (embedding gather). Elements move as raw bits.
//
// Tensors: 0 W [D, V] (dim 0 = the embedding dim; padding 0), 1 indices (i32, up to 4-D),
// 2 Y [D, indices' shape...]. The index space is Y's: {ceil(D / LANES), the indices' dims}.
// Per row (ROW_SETUP) the index idx = indices[c1, c2, c3, c4] (Y's dims 1..4 are the indices'
// dims 0..3) and I4 = (the row's first vector, idx); per vector a copy W -> Y. An index outside
// 0 .. V-1 (negative included) addresses no element of W: the loads read the padding, so that
// row of Y is zeros (no fault, no memory access).
.macro ROW_SETUP
        imov I3, 0
        iget_dim S16, I2 dim=1
        imov_dim I3, S16 dim=0
        iget_dim S16, I2 dim=2
        imov_dim I3, S16 dim=1
        iget_dim S16, I2 dim=3
        imov_dim I3, S16 dim=2
        iget_dim S16, I2 dim=4
        imov_dim I3, S16 dim=3
        ld_tnsr_s S17, I3, 1
        imov I4, 0
        imov_dim I4, S17 dim=1
        imov_dim I4, S34 dim=0
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I4, 0; iadd_dim I4, LANES dim=0
end_d0: st_tnsr I2, 2, V1; iadd_dim I2, LANES dim=0
        NEST_END
