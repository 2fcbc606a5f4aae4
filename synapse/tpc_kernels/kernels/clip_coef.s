// clip_coef.s: the second pass of a tensor-list norm and the clipping coefficient. Tensors:
// 0 the partial sums of squares (flat, S0 vectors of them), 1 the total norm ([1]: lane 0),
// 2 the partials' tensor as [1, M] (the coefficient goes to element S2 there, lane 0 only).
//   norm = sqrt(sum of the partials);  coef = min(max_norm / (norm + 1e-6), 1)   (S1 = max_norm)
// The index space is one step.
        imov I2, 0
        imov I3, 0
        mov.f32 V10, 0.0
        ld_smov S20, 0
        loop S20, S0, sum_end
        mul.i32 S21, S20, LANES
        imov_dim I2, S21 dim=0
        ld_tnsr V11, I2, 0
sum_end: add.f32 V10, V10, V11
        reduce.add.f32 V10, V10
        special.sqrt.f32 V10, V10
        st_tnsr I3, 1, V10
        add.f32 V11, V10, 1e-6
        mov.f32 V12, S1
        div.f32 V12, V12, V11
        min.f32 V12, V12, 1.0
        imov_dim I3, S2 dim=1
        st_tnsr I3, 2, V12
        halt
