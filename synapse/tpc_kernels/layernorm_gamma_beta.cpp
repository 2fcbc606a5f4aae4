// The layernorm_bwd_gamma_beta kernels' list-scheduled bodies. layernorm_bwd_gb.s's single row
// took about 44 cycles a vector on hl225 (25 bundles in one chain: its scalar loads, sub, mul, mul
// and the accumulations wait for each other), and each step's walk down the rows started cold,
// waiting a full memory latency for its first row (about 900 cycles, a run of 64 rows).
// - f32 (layernorm_gamma_beta_columns): a step owns several column vectors, so a row's statistics
//   are loaded once for all of them, their chains fill each other's latency, and a core walks the
//   rows a few times instead of once per vector.
// - bf16 (layernorm_gamma_beta_block, the .s file's ROW_BLOCK): four rows list-scheduled at once.
// In both, the accumulations stay a chain in row order: every element sums the same values in the
// same order as the single row's body (same bits).
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

#include <array>
#include <sstream>
#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

// Row k's registers: grad (lo, hi), x then its products (lo, hi), mean and rstd, and the scratch
// of a bf16 load (V9 in io_bf16.inc). V10 / V20 and V18 / V28 are the accumulators.
struct RowRegisters {
  const char *grad, *grad_hi, *x, *x_hi, *mean, *rstd, *load_scratch;
};
constexpr std::array<RowRegisters, 4> kRows = {{{"V11", "V21", "V12", "V22", "S12", "S13", "V9"},
                                                {"V13", "V23", "V14", "V24", "S16", "S17", "V30"},
                                                {"V15", "V25", "V16", "V26", "S18", "S19", "V31"},
                                                {"V17", "V27", "V19", "V29", "S0", "S1", "V32"}}};

}  // namespace

std::string layernorm_gamma_beta_block(const std::string& io_definitions) {
  std::vector<std::string> lines;
  for (const RowRegisters& r : kRows) {
    const std::string g = r.grad, gh = r.grad_hi, x = r.x, xh = r.x_hi, m = r.mean, s = r.rstd;
    // The row 16 ahead, as PREFETCH_ROW_AT.
    for (const char* p : {"prefetch I7, 0", "prefetch I7, 1", "prefetch I6, 2", "prefetch I6, 3",
                          "iadd_dim I7, 1 dim=1", "iadd_dim I6, 1 dim=1"})
      lines.push_back(p);
    lines.push_back("ld_tnsr_s " + m + ", I4, 2");
    lines.push_back("ld_tnsr_s " + s + ", I4, 3");
    std::vector<std::string> row;
    for (const std::string& call :
         {"LDW " + g + ", " + gh + ", I3, 0", "LDW " + x + ", " + xh + ", I3, 1",
          "EACH3 sub.f32, " + x + ", " + x + ", " + m + ", " + xh + ", " + xh + ", " + m,
          "EACH3 mul.f32, " + x + ", " + x + ", " + s + ", " + xh + ", " + xh + ", " + s,
          "EACH3 mul.f32, " + x + ", " + g + ", " + x + ", " + xh + ", " + gh + ", " + xh,
          "EACH3 add.f32, V10, V10, " + x + ", V20, V20, " + xh, "EACH3 add.f32, V18, V18, " + g + ", V28, V28, " + gh}) {
      const auto expanded = schedule::expand_macro(io_definitions, call);
      if (!expanded) return "";
      for (const std::string& line : *expanded) row.push_back(schedule::rename_registers(line, {{"V9", r.load_scratch}}));
    }
    lines.insert(lines.end(), row.begin(), row.end());
    lines.push_back("iadd_dim I3, 1 dim=1");
    lines.push_back("iadd_dim I4, 1 dim=1");
  }
  std::string text = ".macro ROW_BLOCK\n";
  for (const std::string& bundle : schedule::list_schedule(lines, "", schedule::kPrefetchHitLatency))
    text += "        " + bundle + "\n";
  return text + ".endm\n";
}

std::string layernorm_gamma_beta_columns(unsigned columns, unsigned rows_ahead, bool bf16, bool f32_sums) {
  if (columns == 0 || columns > kMaxGammaBetaColumns || rows_ahead == 0 || (bf16 && columns % 2 != 0)) return "";
  // A load's vector: one column (f32) or two (bf16, widened into the two columns' registers).
  const unsigned per_load = bf16 ? 2 : 1;
  const std::string load_step = bf16 ? "(2 * F32_LANES)" : "F32_LANES";
  const auto v = [](unsigned r) { return "V" + std::to_string(r); };
  // Column k: accumulators dgamma V10+k and dbeta V20+k; grad V30+k, x then its products V0+k
  // (a pair's second row: V34+k, V4+k). S2: the step's first column (dim 0), S11: the row,
  // S12 / S13 its mean and rstd (the second row's S16 / S17).
  std::vector<std::string> prefetch_row;   // the row at I7 / I6 (every column), then one on
  for (unsigned k = 0; k < columns; k += per_load) {
    if (k != 0) prefetch_row.push_back("iadd_dim I7, " + load_step + " dim=0");
    prefetch_row.push_back("prefetch I7, 0");
    prefetch_row.push_back("prefetch I7, 1");
  }
  for (const char* line : {"imov_dim I7, S2 dim=0", "iadd_dim I7, 1 dim=1", "prefetch I6, 2", "prefetch I6, 3",
                           "iadd_dim I6, 1 dim=1"})
    prefetch_row.push_back(line);

  // One row: the row rows_ahead on prefetched, then this one's (at I3 / I4) loaded and summed;
  // `second` picks the registers of a pair's second row (V4.., V34..), so that two rows interleave.
  const auto row_lines = [&](bool second) {
    std::vector<std::string> row = prefetch_row;
    const std::string mean = second ? "S16" : "S12", rstd = second ? "S17" : "S13";
    row.push_back("ld_tnsr_s " + mean + ", I4, 2");
    row.push_back("ld_tnsr_s " + rstd + ", I4, 3");
    const auto g_of = [&](unsigned k) { return v((second ? 30 + kMaxGammaBetaColumns : 30) + k); };
    const auto x_of = [&](unsigned k) { return v((second ? kMaxGammaBetaColumns : 0) + k); };
    for (unsigned k = 0; k < columns; k += per_load) {
      if (k != 0) row.push_back("iadd_dim I3, " + load_step + " dim=0");
      if (bf16) {   // into the second column's register, then widened in place (the first from it first)
        for (unsigned tensor = 0; tensor < 2; ++tensor) {
          const std::string lo = tensor == 0 ? g_of(k) : x_of(k), hi = tensor == 0 ? g_of(k + 1) : x_of(k + 1);
          row.push_back("ld_tnsr " + hi + ", I3, " + std::to_string(tensor));
          row.push_back("convert.bf16.f32 " + lo + ", " + hi + " part=0");
          row.push_back("convert.bf16.f32 " + hi + ", " + hi + " part=1");
        }
      } else {
        row.push_back("ld_tnsr " + g_of(k) + ", I3, 0");
        row.push_back("ld_tnsr " + x_of(k) + ", I3, 1");
      }
    }
    for (unsigned k = 0; k < columns; ++k) {
      const std::string g = g_of(k), x = x_of(k);
      row.push_back("sub.f32 " + x + ", " + x + ", " + mean);
      row.push_back("mul.f32 " + x + ", " + x + ", " + rstd);
      row.push_back("mul.f32 " + x + ", " + g + ", " + x);
      row.push_back("add.f32 " + v(10 + k) + ", " + v(10 + k) + ", " + x);
      row.push_back("add.f32 " + v(20 + k) + ", " + v(20 + k) + ", " + g);
    }
    for (const char* line : {"imov_dim I3, S2 dim=0", "iadd_dim I3, 1 dim=1", "iadd_dim I4, 1 dim=1", "add.i32 S11, S11, 1"})
      row.push_back(line);
    return row;
  };
  std::vector<std::string> pair = row_lines(false), second = row_lines(true);
  pair.insert(pair.end(), second.begin(), second.end());
  pair.push_back("cmp.lt.i32 SP2, S11, S15");
  const std::vector<std::string> single = row_lines(false);

  std::vector<std::string> first_rows;   // a run's first rows_ahead rows, before its first row
  for (unsigned r = 0; r < rows_ahead; ++r) first_rows.insert(first_rows.end(), prefetch_row.begin(), prefetch_row.end());

  std::ostringstream src;
  src << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        NEST_BEGIN\n";
  for (unsigned k = 0; k < columns; ++k) src << "        mov.f32 " << v(10 + k) << ", 0.0\n        mov.f32 " << v(20 + k) << ", 0.0\n";
  // Dims 4..1 as layernorm_bwd_gb.s walks them; a run is the rows of dim 1.
  // The step: index-space dim 4 counts (row chunk, column step) pairs, S3 column steps a chunk
  // (a split's, so that its steps spread on one dim; 1 otherwise: dim 0 is the column step).
  // I2 becomes the outputs' coordinates (the step's first column, its chunk) and dim 4 runs from
  // the chunk (S7 chunks: 1 in a split).
  src << "        iget_dim S0, I2 dim=4\n        div.i32 S8, S0, S3\n        mul.i32 S1, S8, S3\n"
      << "        sub.i32 S1, S0, S1\n        mul.i32 S1, S1, LANES\n        iget_dim S2, I2 dim=0\n"
      << "        add.i32 S2, S2, S1\n        imov_dim I2, S2 dim=0\n        imov_dim I2, S8 dim=4\n"
      << "        imov I3, I2\n        add.i32 S14, S8, S7\n"
      << "r4:     cmp.ge.i32 SP2, S8, S14\n        jmp r4_done @SP2\n        imov_dim I3, S8 dim=4; ld_smov S9, 0\n"
      << "r3:     cmp.ge.i32 SP2, S9, S6\n        jmp r3_done @SP2\n        imov_dim I3, S9 dim=3; ld_smov S10, 0\n"
      << "r2:     cmp.ge.i32 SP2, S10, S5\n        jmp r2_done @SP2\n        imov_dim I3, S10 dim=2; ld_smov S11, 0\n"
      << "        imov_dim I3, 0 dim=1\n        imov I7, I3\n        imov I4, I3\n        imov_dim I4, 0 dim=0\n"
      << "        imov I6, I4\n";
  for (const std::string& bundle : schedule::list_schedule(first_rows)) src << "        " << bundle << "\n";
  // Rows in pairs while two remain (S15 = S4 - 1), then the last one if S4 is odd.
  src << "        sub.i32 S15, S4, 1\n        cmp.ge.i32 SP2, S11, S15\n        jmp r1_last @SP2\nr1:\n";
  for (const std::string& bundle : schedule::list_schedule(pair, "", schedule::kPrefetchHitLatency))
    src << "        " << bundle << "\n";
  src << "        jmp r1 @SP2\nr1_last:\n        cmp.ge.i32 SP2, S11, S4\n        jmp r1_done @SP2\n";
  for (const std::string& bundle : schedule::list_schedule(single, "", schedule::kPrefetchHitLatency))
    src << "        " << bundle << "\n";
  src << "r1_done:\n        add.i32 S10, S10, 1\n        jmp r2\nr2_done:\n        add.i32 S9, S9, 1\n"
      << "        jmp r3\nr3_done:\n        add.i32 S8, S8, 1\n        jmp r4\nr4_done:\n        imov I5, I2\n";
  if (bf16 && !f32_sums) {   // each pair of columns rounded once into a bf16 vector (V9)
    for (unsigned k = 0; k < columns; k += 2) {
      if (k != 0) src << "        iadd_dim I5, (2 * F32_LANES) dim=0\n";
      for (unsigned out = 0; out < 2; ++out) {
        const unsigned acc = out == 0 ? 10 : 20;
        src << "        convert.f32.bf16 V9, " << v(acc + k) << " part=0\n        convert.f32.bf16 V9, " << v(acc + k + 1)
            << " part=1\n";
        const bool last = k + 2 == columns && out == 1;
        src << (last ? "end_d0: " : "        ") << "st_tnsr I5, " << 4 + out << ", V9"
            << (last ? "; iadd_dim I2, LANES dim=0" : "") << "\n";
      }
    }
    return src.str() + "        NEST_END\n";
  }
  for (unsigned k = 0; k < columns; ++k) {
    if (k != 0) src << "        iadd_dim I5, F32_LANES dim=0\n";
    src << "        st_tnsr I5, 4, " << v(10 + k) << "\n";
    src << (k + 1 == columns ? "end_d0: " : "        ") << "st_tnsr I5, 5, " << v(20 + k)
        << (k + 1 == columns ? "; iadd_dim I2, LANES dim=0" : "") << "\n";
  }
  return src.str() + "        NEST_END\n";
}

}  // namespace hpusim::synapse::tpc_kernels::glue
