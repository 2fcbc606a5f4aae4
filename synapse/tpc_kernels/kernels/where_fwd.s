// where_fwd.s: Y = cond ? A : B elementwise, numpy broadcasting of all three inputs (dim 0 included).
//
// Tensors: 0 cond (u8, nonzero = true), 1 A, 2 B, 3 Y. A, B and Y are described with the unsigned
// type of the element's width (u32 for f32 / i32, u16 for bf16: RAW), so the selection moves raw
// bits (NaN payloads, -0 kept). An index-space step is one vector of Y (LANES elements); the load
// of cond at the same coordinates reads a u8 vector (4x / 2x the lanes) whose first LANES lanes
// are the ones needed: `cmp.ne.u8` sets predicate bit j for u8 lane j, and `sel.RAW` reads bit j
// for its lane j, so no conversion is needed. Inputs broadcast along dims >= 1 through stride-0
// descriptors (the glue); an input broadcast along dim 0 is read once per row by ROW_SETUP
// (BCAST_ROW; cond's predicate computed there) and its LOAD_k is empty.
//
// The glue's prelude defines: LANES; .macro LOAD_C (ld_tnsr V1, I2, 0 + cmp.ne.u8 VP2, V1, 0, or
// empty); .macro LOAD_A / LOAD_B (ld_tnsr V2 / V3, or empty); .macro ROW_SETUP; .macro WHERE_SEL d
// (sel.RAW \d, V2, V3, VP2).
.include "nest.inc"
.include "ops.inc"

        NEST_BEGIN
        LOAD_C
        LOAD_A
        LOAD_B
        WHERE_SEL V4
end_d0: st_tnsr I2, 3, V4; iadd_dim I2, LANES dim=0
        NEST_END
