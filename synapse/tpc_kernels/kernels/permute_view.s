// permute_view.s: Y = X permuted, for permutations that keep dim 0 in place (a copy through a
// view). The glue gives X's descriptor in Y's coordinates: size[d] = Y's size[d] and
// stride[d] = X's stride[perm[d]], so the kernel is a vector copy over Y's index space (dim 0 in
// vectors of LANES). Elements move as raw bits.
//
// Tensors: 0 X (the permuted view), 1 Y. The prelude defines LANES and an empty ROW_SETUP.
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, 0
end_d0: st_tnsr I2, 1, V1; iadd_dim I2, LANES dim=0
        NEST_END
