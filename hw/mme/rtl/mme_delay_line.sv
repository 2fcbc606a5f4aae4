// DEPTH registers in a chain (DEPTH = 0 is a wire); all bits reset to zero.
module mme_delay_line #(
  parameter int WIDTH = 32,
  parameter int DEPTH = 1
) (
  // A zero-depth line has no registers, so it leaves the clock and reset unused.
  /* verilator lint_off UNUSEDSIGNAL */
  input  logic             clk,
  input  logic             rst,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic [WIDTH-1:0] in,
  output logic [WIDTH-1:0] out
);

  if (DEPTH == 0) begin : g_wire
    assign out = in;
  end else begin : g_registers
    logic [WIDTH-1:0] stage [DEPTH];
    always_ff @(posedge clk) begin
      if (rst) begin
        for (int i = 0; i < DEPTH; i++) stage[i] <= '0;
      end else begin
        stage[0] <= in;
        for (int i = 1; i < DEPTH; i++) stage[i] <= stage[i-1];
      end
    end
    assign out = stage[DEPTH-1];
  end

endmodule
