// Types shared by the MME tile's modules.
package mme_pkg;

  // An A operand on its way along a PE row. It carries the MAC control with it, so every PE does
  // its k-th MAC exactly when the k-th A and B operands meet there.
  typedef struct packed {
    logic        first;   // k = 0: the accumulator restarts from +0
    logic        valid;   // a MAC happens in this cycle
    logic [31:0] value;   // binary32 bit pattern
  } row_operand_t;

endpackage
