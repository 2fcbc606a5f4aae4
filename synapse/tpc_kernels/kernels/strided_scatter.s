// strided_scatter.s: the element variant of strided_insert (stride[0] != 1 and S.size[0] > 1):
// Y[sum_d c[d] * stride[d]] = S[c], one element per index-space step, moved with ld_tnsr_s /
// st_tnsr_s. The index space is S's shape in elements (`LANES` 1). Y's elements outside the view
// are not written (Y is X's memory: the runtime passes X's address as Y's, an in-place update).
//
// Tensors: 0 X (not read: an input so that the graph orders the insert after X's writers), 1 S,
// 2 Y described in S's coordinates (size[d] = S's and stride[d] = the given stride for d >= 1;
// dim 0 contiguous, size (S.size[0] - 1) * stride[0] + 1). S and Y are typed with the unsigned
// type of the element's width (u32 / u16 / u8): raw bits. Y's coordinate I3 is S's I2 with dim 0
// scaled by stride[0] (S0): set per row one stride early and stepped in the load's bundle, so the
// store of element c0 sees c0 * stride[0] (a bundle reads its operands before it writes).
// Where two elements of S land on one element of Y (an overlapping view), the store issued last
// (index-space order on one core) leaves its value; across cores the result is unspecified.
.macro ROW_SETUP
        mul.i32 S16, S34, S0            // the row's first element: c0 * stride[0]
        sub.i32 S16, S16, S0
        imov I3, I2
        imov_dim I3, S16 dim=0
.endm
.include "nest.inc"

        NEST_BEGIN
        ld_tnsr_s S17, I2, 1; iadd_dim I3, S0 dim=0
end_d0: st_tnsr_s I3, 2, S17; iadd_dim I2, LANES dim=0
        NEST_END
