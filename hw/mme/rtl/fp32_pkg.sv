// Shared pieces of the IEEE-754 binary32 units (fp32_mul_pkg, fp32_add_pkg): operand fields,
// specials, and the packer that rounds an exact (or sticky-compressed) result to nearest-even.
package fp32_pkg;

  // NaN results are always this quiet NaN.
  localparam logic [31:0] CANONICAL_NAN = 32'h7FC0_0000;

  // Working significand width of round_pack. The adder needs 1 carry bit + 24 significand bits +
  // 26 bits below them (so an alignment shift up to 26 loses nothing); the multiplier's 48-bit
  // product fits with 3 zero bits appended.
  localparam int SIG_W = 51;

  typedef logic [SIG_W-1:0] sig_t;
  typedef logic signed [11:0] exp_t;

  // The field helpers take whole binary32 words and read only the fields they need.
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic is_nan(input logic [31:0] x);
    return x[30:23] == 8'hFF && x[22:0] != 23'd0;
  endfunction

  function automatic logic is_inf(input logic [31:0] x);
    return x[30:0] == 31'h7F80_0000;
  endfunction

  function automatic logic is_zero(input logic [31:0] x);
    return x[30:0] == 31'd0;
  endfunction

  // The 24-bit significand: hidden bit set for normals, clear for subnormals.
  function automatic logic [23:0] significand(input logic [31:0] x);
    return {x[30:23] != 8'd0, x[22:0]};
  endfunction

  // The biased exponent that goes with significand(): subnormals scale like exponent field 1.
  function automatic exp_t exponent(input logic [31:0] x);
    return x[30:23] == 8'd0 ? exp_t'(1) : exp_t'({4'd0, x[30:23]});
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  function automatic int leading_zeros(input sig_t v);
    int count = SIG_W;
    for (int i = 0; i < SIG_W; i++) begin
      if (v[i]) count = SIG_W - 1 - i;
    end
    return count;
  endfunction

  // v >> amount, with every bit shifted out ORed into bit 0 ("jamming"). Rounding to a position at
  // least two bits above bit 0 is unaffected by the compression.
  function automatic sig_t shift_right_jam(input sig_t v, input int amount);
    sig_t shifted;
    if (amount >= SIG_W) begin
      shifted = sig_t'(v != '0);
    end else begin
      shifted = (v >> amount) | sig_t'((v & ~('1 << amount)) != '0);
    end
    return shifted;
  endfunction

  // Rounds (-1)^sign * sig / 2^(SIG_W-1) * 2^(exp-127) to the nearest binary32, ties to even, with
  // gradual underflow and overflow to infinity. sig must be non-zero; its bit 0 may be a jam bit.
  function automatic logic [31:0] round_pack(input logic sign, input exp_t exp, input sig_t sig);
    int lz;
    exp_t biased;
    sig_t norm;
    logic guard;
    logic sticky;
    logic round_up;
    logic [30:0] magnitude;
    lz = leading_zeros(sig);
    biased = exp - exp_t'(lz);
    norm = sig << lz;
    if (biased < exp_t'(1)) begin
      // Subnormal: shift to the fixed exponent of 2^-126; a carry out of rounding lands on the
      // smallest normal through the exponent field.
      norm = shift_right_jam(norm, 1 - int'(biased));
      biased = '0;
    end
    guard = norm[SIG_W-25];
    sticky = norm[SIG_W-26:0] != '0;
    round_up = guard && (sticky || norm[SIG_W-24]);
    // The hidden bit is carried by the exponent field; a rounding carry can reach infinity.
    magnitude = {biased[7:0], norm[SIG_W-2 -: 23]} + 31'(round_up);
    if (biased >= exp_t'(255)) magnitude = 31'h7F80_0000;
    return {sign, magnitude};
  endfunction

endpackage
