// binary32 multiplication, round to nearest-even, full IEEE-754 semantics (subnormals in and out,
// overflow to infinity, inf * 0 = NaN). Every NaN result is the canonical quiet NaN.
package fp32_mul_pkg;
  import fp32_pkg::*;

  function automatic logic [31:0] multiply(input logic [31:0] x, input logic [31:0] y);
    // Not inlined: one C++ function shared by every PE instead of a copy of this body per PE
    // keeps the verilated model small and quick to compile.
    /*verilator no_inline_task*/
    logic sign;
    logic [47:0] exact_significand;
    logic [31:0] product;
    sign = x[31] ^ y[31];
    exact_significand = significand(x) * significand(y);
    if (is_nan(x) || is_nan(y) || (is_inf(x) && is_zero(y)) || (is_zero(x) && is_inf(y))) begin
      product = CANONICAL_NAN;
    end else if (is_inf(x) || is_inf(y)) begin
      product = {sign, 31'h7F80_0000};
    end else if (is_zero(x) || is_zero(y)) begin
      product = {sign, 31'd0};
    end else begin
      // significand(x) * significand(y) * 2^(exponent(x) + exponent(y) - 254 - 46), in
      // round_pack's form: {exact_significand, 3'b0} / 2^50 * 2^((ex + ey - 126) - 127).
      product = round_pack(sign, exponent(x) + exponent(y) - exp_t'(126),
                           {exact_significand, 3'b000});
    end
    return product;
  endfunction

endpackage
