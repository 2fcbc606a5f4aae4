// strided_copy.s: the vector variant of strided_view / strided_insert (stride[0] == 1, or a view
// of size 1 in dim 0): a vector copy over the index space of the strided side (strided_view: Y,
// strided_insert: S), dim 0 in vectors of LANES. The glue describes the flat tensor (X of
// strided_view, Y of strided_insert) in that side's coordinates: size[d] = the view's, stride[d]
// = the given strides (elements; dim 0 contiguous), so both descriptors are read / written at the
// same coordinates I2. Elements move as raw bits.
//
// The prelude defines LANES, SRC and DST (the tensor numbers: view 0 -> 1, insert 1 -> 2) and an
// empty ROW_SETUP.
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr V1, I2, SRC
end_d0: st_tnsr I2, DST, V1; iadd_dim I2, LANES dim=0
        NEST_END
