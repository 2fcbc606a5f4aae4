// binary32 addition, round to nearest-even, full IEEE-754 semantics (subnormals in and out,
// overflow to infinity, inf - inf = NaN, exact cancellation gives +0, (-0) + (-0) = -0). Every NaN
// result is the canonical quiet NaN.
package fp32_add_pkg;
  import fp32_pkg::*;

  function automatic logic [31:0] add(input logic [31:0] x, input logic [31:0] y);
    // Not inlined: one C++ function shared by every PE instead of a copy of this body per PE
    // keeps the verilated model small and quick to compile.
    /*verilator no_inline_task*/
    logic [31:0] larger;   // by magnitude: a non-zero result has its sign
    logic [31:0] smaller;
    sig_t larger_significand;
    sig_t smaller_aligned;
    sig_t exact_sum;
    logic [31:0] sum;
    larger = y[30:0] > x[30:0] ? y : x;
    smaller = y[30:0] > x[30:0] ? x : y;
    // Significands sit at bits [49:26]: bit 50 takes the carry, bits below 26 keep the shifted-out
    // part of smaller exactly up to a shift of 26, and jammed beyond.
    larger_significand = {1'b0, significand(larger), 26'd0};
    smaller_aligned = shift_right_jam({1'b0, significand(smaller), 26'd0},
                                      int'(exponent(larger)) - int'(exponent(smaller)));
    exact_sum = larger[31] == smaller[31] ? larger_significand + smaller_aligned
                                          : larger_significand - smaller_aligned;
    if (is_nan(x) || is_nan(y) || (is_inf(x) && is_inf(y) && x[31] != y[31])) begin
      sum = CANONICAL_NAN;
    end else if (is_inf(larger)) begin
      sum = larger;
    end else if (exact_sum == '0) begin
      // Only two zeros of the same sign keep that sign; x + (-x) is +0 when rounding to nearest.
      sum = {x[31] & y[31], 31'd0};
    end else begin
      // Bit 49 has weight 2^(exponent(larger) - 127), so round_pack's top bit 50 has one more.
      sum = round_pack(larger[31], exponent(larger) + exp_t'(1), exact_sum);
    end
    return sum;
  endfunction

endpackage
