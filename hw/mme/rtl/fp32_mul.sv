// binary32 multiplier (fp32_mul_pkg::multiply), combinational.
module fp32_mul (
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] product
);

  assign product = fp32_mul_pkg::multiply(x, y);

endmodule
