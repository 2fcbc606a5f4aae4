// The multiplier and the adder side by side, combinational, so the units can be checked alone
// against the host's floating point.
module fp32_units (
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] product,
  output logic [31:0] sum
);

  fp32_mul u_mul (.x(x), .y(y), .product(product));
  fp32_add u_add (.x(x), .y(y), .sum(sum));

endmodule
