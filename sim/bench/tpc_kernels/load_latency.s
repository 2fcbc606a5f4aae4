// Global-load round trip for `hpusim bench tpc`: dependent 256-byte loads, one at a time.
//
// Tensors: 0 = A (1-D f32, read), 1 = B (1-D f32; the last vector loaded, doubled, goes to
// B[start .. start + 63]). Each loop pass loads the next vector of the slice and adds it to itself:
// the add waits at issue until the load's response arrives, so a pass takes the load latency
// plus one cycle and nothing else is in flight.
.equ LANES 64

        ispace_offset I0
        ispace_size I1
        iget_dim S22, I0 dim=0                   // first element of the slice
        iget_dim S21, I1 dim=0
        div.i32 S21, S21, LANES                  // vectors in the slice
        mov S20, 0
        imov I2, 0
        imov_dim I2, S22 dim=0
        imov I3, I2
        loop S20, S21, pass_end
        ld_tnsr V1, I2, 0; iadd_dim I2, LANES dim=0
pass_end: add.f32 V2, V1, V1
        st_tnsr I3, 1, V2
        halt
