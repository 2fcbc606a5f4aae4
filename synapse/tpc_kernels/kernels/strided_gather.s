// strided_gather.s: the element variant of strided_view (stride[0] != 1 and Y.size[0] > 1):
// Y[c] = X[sum_d c[d] * stride[d]], one element per index-space step, moved with ld_tnsr_s /
// st_tnsr_s (as permute_gather.s). The index space is Y's shape in elements (`LANES` 1).
//
// Tensors: 0 X described in Y's coordinates (size[d] = Y's and stride[d] = the given stride for
// d >= 1; dim 0 contiguous, size (Y.size[0] - 1) * stride[0] + 1), 1 Y; both typed with the
// unsigned type of the element's width (u32 / u16 / u8), so the scalar moves keep every bit (NaN
// payloads included). X's coordinate I3 is Y's I2 with dim 0 scaled by stride[0] (S0, from the
// glue): set per row, stepped by S0 with each element. S0 = 0 (a broadcast read) works.
// Slow: two bundles and a global load latency per element (see README.md).
.macro ROW_SETUP
        mul.i32 S16, S34, S0            // the row's first element: c0 * stride[0]
        imov I3, I2
        imov_dim I3, S16 dim=0
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr_s S17, I3, 0; iadd_dim I3, S0 dim=0
end_d0: st_tnsr_s I2, 1, S17; iadd_dim I2, LANES dim=0
        NEST_END
