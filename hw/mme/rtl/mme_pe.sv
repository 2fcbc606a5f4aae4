// One processing element of the output-stationary array: a binary32 MAC into a registered
// accumulator (multiply, then add; two roundings) and the registers that pass A right and B down.
// While draining, the accumulator takes the value of the PE below, so results shift up one row
// per cycle.
module mme_pe
  import mme_pkg::*;
(
  input  logic         clk,
  input  logic         rst,
  input  row_operand_t a_in,
  input  logic [31:0]  b_in,
  input  logic         drain,
  input  logic [31:0]  acc_from_below,
  output row_operand_t a_out,
  output logic [31:0]  b_out,
  output logic [31:0]  acc
);

  logic [31:0] product;
  logic [31:0] acc_before;
  logic [31:0] acc_after;

  fp32_mul u_mul (.x(a_in.value), .y(b_in), .product(product));
  assign acc_before = a_in.first ? 32'd0 : acc;
  fp32_add u_add (.x(acc_before), .y(product), .sum(acc_after));

  always_ff @(posedge clk) begin
    if (rst) begin
      a_out <= '0;
    end else begin
      a_out <= a_in;
    end
    b_out <= b_in;
    if (drain) begin
      acc <= acc_from_below;
    end else if (a_in.valid) begin
      acc <= acc_after;
    end
  end

endmodule
