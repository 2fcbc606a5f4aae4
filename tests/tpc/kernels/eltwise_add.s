// eltwise_add.s: C = A + B in f32, over this core's slice of a 5-D index space.
//
// Tensors 0 (A), 1 (B) and 2 (C) have the same shape. The index space is in elements; dim 0
// advances one vector (64 f32 lanes) per step, and the tensor accessors pad the lanes past A's
// and B's dim-0 size and do not write C's. Hardware loops nest 4 deep, so dim 4 is a software
// loop (cmp + jmp) around four hardware loops.
//
// Scalars: per dim d, the range start..end of this core's slice (S20..S32) and an iterator.
.include "tensors.inc"

// \start = offset[\dim], \end = offset[\dim] + size[\dim]
.macro RANGE dim, start, end
        iget_dim \start, I0 dim=\dim
        iget_dim \end, I1 dim=\dim
        add.i32 \end, \end, \start
.endm

        ispace_offset I0
        ispace_size I1
        RANGE 4, S20, S21               // dim 4 iterates in S20 itself
        RANGE 3, S22, S23
        RANGE 2, S25, S26
        RANGE 1, S28, S29
        RANGE 0, S31, S32
        imov I2, 0                      // the coordinates of the current vector

next_d4:
        cmp.ge.i32 SP1, S20, S21
        jmp done @SP1
        imov_dim I2, S20 dim=4; ld_smov S24, S22         // the Load slot's mover resets d3
        loop S24, S23, end_d3
        imov_dim I2, S24 dim=3; ld_smov S27, S25
        loop S27, S26, end_d2
        imov_dim I2, S27 dim=2; ld_smov S30, S28
        loop S30, S29, end_d1
        imov_dim I2, S30 dim=1; ld_smov S33, S31
        loop S33, S32, end_d0 step=F32_LANES
        imov_dim I2, S33 dim=0
        ld_tnsr V1, I2, TENSOR_A
        ld_tnsr V2, I2, TENSOR_B
        add.f32 V3, V1, V2
end_d0: st_tnsr I2, TENSOR_C, V3
end_d1: nop
end_d2: nop
end_d3: nop
        add.i32 S20, S20, 1
        jmp next_d4
done:   halt
