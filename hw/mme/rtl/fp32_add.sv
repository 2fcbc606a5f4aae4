// binary32 adder (fp32_add_pkg::add), combinational.
module fp32_add (
  input  logic [31:0] x,
  input  logic [31:0] y,
  output logic [31:0] sum
);

  assign sum = fp32_add_pkg::add(x, y);

endmodule
