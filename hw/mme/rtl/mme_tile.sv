// An output-stationary systolic tile of ROWS x COLS binary32 MAC PEs computing C = A * B for an
// active rows x cols corner (rows <= ROWS, cols <= COLS, ROWS and COLS at most 255).
//
// Feeding: on the start cycle and the K-1 cycles after it, a_col carries column k of A (element i
// at bits [32i+31:32i]) and b_row row k of B (element j likewise), unskewed. Internal delay lines
// skew row i of A by i cycles and column j of B by j cycles; operands then move one PE right
// (A) or down (B) per cycle, so PE(i,j) does its k-th MAC at cycle k+i+j after start.
// Draining: after the last MAC, c_row shows one result row per cycle, row 0 first, flagged by
// c_valid and c_row_index; done is high with the last row. Lanes outside the active corner must
// be fed (any) values and their results are unspecified.
module mme_tile
  import mme_pkg::*;
#(
  parameter int ROWS = 8,
  parameter int COLS = 8
) (
  input  logic               clk,
  input  logic               rst,
  input  logic               start,
  input  logic [15:0]        k_len,
  input  logic [7:0]         active_rows,
  input  logic [7:0]         active_cols,
  input  logic [ROWS*32-1:0] a_col,
  input  logic [COLS*32-1:0] b_row,
  output logic               c_valid,
  output logic [7:0]         c_row_index,
  output logic [COLS*32-1:0] c_row,
  output logic               done
);

  logic feed_valid;
  logic feed_first;
  logic drain;

  mme_tile_sequencer u_sequencer (
    .clk, .rst, .start, .k_len, .active_rows, .active_cols,
    .feed_valid, .feed_first, .drain, .c_valid, .c_row_index, .done
  );

  // a_bus[i][j] enters PE(i,j) from the left, b_bus[i][j] from the top, acc_bus[i][j] is its
  // accumulator. The last column of a_bus and row of b_bus leave the array unused; the extra row
  // of acc_bus is what the bottom PEs take while draining.
  /* verilator lint_off UNUSEDSIGNAL */
  row_operand_t a_bus [ROWS][COLS+1];
  logic [31:0] b_bus [ROWS+1][COLS];
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0] acc_bus [ROWS+1][COLS];

  for (genvar i = 0; i < ROWS; i++) begin : g_row_skew
    mme_delay_line #(.WIDTH($bits(row_operand_t)), .DEPTH(i)) u_skew (
      .clk, .rst,
      .in(row_operand_t'{first: feed_first, valid: feed_valid, value: a_col[32*i +: 32]}),
      .out(a_bus[i][0])
    );
  end

  for (genvar j = 0; j < COLS; j++) begin : g_col_skew
    mme_delay_line #(.WIDTH(32), .DEPTH(j)) u_skew (
      .clk, .rst, .in(b_row[32*j +: 32]), .out(b_bus[0][j])
    );
    assign acc_bus[ROWS][j] = 32'd0;
  end

  for (genvar i = 0; i < ROWS; i++) begin : g_pe_row
    for (genvar j = 0; j < COLS; j++) begin : g_pe_col
      mme_pe u_pe (
        .clk, .rst,
        .a_in(a_bus[i][j]), .b_in(b_bus[i][j]),
        .drain, .acc_from_below(acc_bus[i+1][j]),
        .a_out(a_bus[i][j+1]), .b_out(b_bus[i+1][j]), .acc(acc_bus[i][j])
      );
    end
  end

  always_ff @(posedge clk) begin
    if (drain) begin
      for (int j = 0; j < COLS; j++) c_row[32*j +: 32] <= acc_bus[0][j];
    end
  end

endmodule
