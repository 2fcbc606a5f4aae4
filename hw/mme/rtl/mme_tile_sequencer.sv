// Control of one tile operation. The start cycle and the K-1 cycles after it feed operands; the
// last MAC (PE(rows-1, cols-1), k = K-1) happens (rows-1) + (cols-1) cycles after the last feed;
// then `rows` drain cycles each output one result row, row 0 first. done comes with the last row.
// Start cycle to done: (rows-1) + (cols-1) + K + rows clock cycles.
module mme_tile_sequencer (
  input  logic        clk,
  input  logic        rst,
  input  logic        start,        // taken only while idle
  input  logic [15:0] k_len,        // K >= 1
  input  logic [7:0]  active_rows,  // 1..ROWS
  input  logic [7:0]  active_cols,  // 1..COLS
  output logic        feed_valid,   // this cycle's operands enter the array
  output logic        feed_first,   // ...and they are k = 0
  output logic        drain,        // the accumulators shift up one row at the next edge
  output logic        c_valid,      // c_row_index names the row on the tile's c_row output
  output logic [7:0]  c_row_index,
  output logic        done
);

  typedef enum logic [1:0] {IDLE, COMPUTE, DRAIN} state_t;

  state_t state;
  logic [15:0] feeds_left;         // operand vectors still to come after this cycle's
  logic [17:0] compute_edges_left; // MAC clock edges still to come after the start edge
  logic [7:0] drain_rows;
  logic [7:0] next_row;
  logic [17:0] last_mac_edge;      // counted from the start edge (edge 0)

  assign feed_first = state == IDLE && start;
  assign feed_valid = feed_first || feeds_left != 16'd0;
  assign drain = state == DRAIN;
  assign last_mac_edge = 18'(k_len) + 18'(active_rows) + 18'(active_cols) - 18'd3;

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= IDLE;
      feeds_left <= '0;
      compute_edges_left <= '0;
      drain_rows <= '0;
      next_row <= '0;
      c_valid <= 1'b0;
      c_row_index <= '0;
      done <= 1'b0;
    end else begin
      c_valid <= 1'b0;
      done <= 1'b0;
      if (feeds_left != 16'd0) feeds_left <= feeds_left - 16'd1;
      case (state)
        IDLE: begin
          if (start) begin
            feeds_left <= k_len - 16'd1;
            compute_edges_left <= last_mac_edge;
            drain_rows <= active_rows;
            next_row <= '0;
            state <= last_mac_edge == 18'd0 ? DRAIN : COMPUTE;
          end
        end
        COMPUTE: begin
          compute_edges_left <= compute_edges_left - 18'd1;
          if (compute_edges_left == 18'd1) state <= DRAIN;
        end
        DRAIN: begin
          c_valid <= 1'b1;
          c_row_index <= next_row;
          next_row <= next_row + 8'd1;
          if (next_row + 8'd1 == drain_rows) begin
            done <= 1'b1;
            state <= IDLE;
          end
        end
        default: state <= IDLE;
      endcase
    end
  end

endmodule
