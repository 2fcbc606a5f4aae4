// A permute that moves dim 0 (Y's dim 0 is X's dim a = perm[0] != 0) for 32- or 16-bit elements,
// by L x L tiles (L = the lanes of the element width: 64 u32 or 128 u16 at 2048 bits): a step
// loads L vectors of X (rows a0 .. a0+L-1 along dim a,
// L elements of X's dim 0 each) and stores L vectors of Y (rows along Y's dim q = inv[0], L
// elements of Y's dim 0 each), the tile transposed in registers in between.
//
// The transpose swaps bit k of the row number with bit k of the lane number for every k. One
// stage (bit s = 2^k) pairs rows r and r + s (r without bit s) and swaps the lanes with bit s of
// a with those without it of b, with one shuffle (lane i takes lane i ^ s) and three selects
// (VPk: lane i has bit s):
//   t = VPk ? a : b;  t = shuffle(t, i ^ s);  a = VPk ? t : a;  b = VPk ? b : t.
// The stages commute. All but the top two pair rows within a quarter (Q = L/4 rows), so a step
// runs one copy of the quarter code four times: Q rows of X into registers, those stages, the
// rows to VLM. Then groups of four rows r, r+Q, r+2Q, r+3Q come back from VLM for the top two
// stages and go to Y, one copy of the code for four groups run Q/4 times. Both loops keep a
// step's code inside the instruction cache (about 220 bundles at 64 lanes, 420 at 128 in a 16 KB
// cache of 512; a step's loop larger than the cache misses every line of it, LRU). At 128 lanes
// the quarter's 32 rows, six temporaries and two shuffle indexes take all 40 registers. Values
// move as raw bits (u32 / u16): NaN payloads are kept.
//
// VLM: the shuffle indexes i ^ 2^k at vector k (set once, before the nest), then the tile's rows.
// Each part is list-scheduled (body_schedule.h).
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

std::string vreg(unsigned n) { return "V" + std::to_string(n); }

}  // namespace

std::string tile_transpose_kernel(const std::array<unsigned, kMaxDims>& perm, unsigned lanes, unsigned element_bits) {
  std::array<unsigned, kMaxDims> inv{};
  for (unsigned d = 0; d < kMaxDims; ++d) inv[perm[d]] = d;
  const unsigned a = perm[0], q = inv[0], quarter = lanes / 4;
  const unsigned groups_per_pass = std::min(4u, quarter), passes = quarter / groups_per_pass;
  unsigned stages = 0;
  while ((1u << stages) < lanes) ++stages;
  const unsigned vector_bytes = lanes * element_bits / 8;
  const std::string raw = element_bits == 16 ? ".u16 " : ".u32 ";   // the ops' raw-bits type
  const auto vlm = [&](unsigned vector) { return std::to_string(vector * vector_bytes); };
  const auto mask = [](unsigned k) { return "VP" + std::to_string(k + 1); };
  const auto dim = [](unsigned d) { return " dim=" + std::to_string(d); };
  const unsigned rows_base = stages;   // the tile's first row in VLM (vectors)
  std::vector<std::string> body;
  // One stage's swap of rows ra, rb (registers) for bit k, through the temporary t.
  const auto swap = [&](const std::string& ra, const std::string& rb, const std::string& t, unsigned k,
                        const std::string& index) {
    body.push_back("sel" + raw + t + ", " + ra + ", " + rb + ", " + mask(k));
    body.push_back("shuffle" + raw + t + ", " + t + ", " + index);
    body.push_back("sel" + raw + ra + ", " + t + ", " + ra + ", " + mask(k));
    body.push_back("sel" + raw + rb + ", " + rb + ", " + t + ", " + mask(k));
  };
  // The step's scalar state: S18 counts passes of a loop, S19 is where the quarters store in VLM.
  const auto reset_loop_state = [&] {
    body.push_back("ld_smov S18, 0");
    body.push_back("ld_smov S19, " + vlm(rows_base));
  };

  // Set-up of a row of steps (ROW_SETUP; I2 at its first step): X's coordinates of the tile's
  // first row (I3), Y's of its first output row (I4) and of row Q (I5), the next tile (one step
  // on along Y's dim 0 = X's dim a) prefetched from I7 as this one is read. A step leaves I3 and
  // I7 one tile on, and moves I4 and I5 there.
  for (unsigned d = 0; d < kMaxDims; ++d) {
    const std::string sd = "S" + std::to_string(8 + d);
    body.push_back("iget_dim " + sd + ", I2" + dim(d));
    if (d == q) body.push_back("mul.i32 " + sd + ", " + sd + ", LANES");
    body.push_back("imov_dim I3, " + sd + dim(perm[d]));
    body.push_back("imov_dim I4, " + sd + dim(d));
  }
  body.push_back("imov I5, I4");
  body.push_back("iadd_dim I5, " + std::to_string(quarter) + dim(q));
  body.push_back("imov I7, I3");
  body.push_back("iadd_dim I7, LANES" + dim(a));
  reset_loop_state();
  const std::vector<std::string> setup = schedule::list_schedule(body);
  body.clear();

  // A quarter of X's rows: into V0 .. V(Q-1), the stages that pair rows within a quarter (six
  // temporaries after the rows, two registers for the shuffle indexes), to VLM at S19.
  unsigned next_temp = 0, next_index = 0;
  for (unsigned r = 0; r < quarter; ++r) {
    body.push_back("prefetch I7, 0");
    body.push_back("iadd_dim I7, 1" + dim(a));
    body.push_back("ld_tnsr " + vreg(r) + ", I3, 0");
    body.push_back("iadd_dim I3, 1" + dim(a));
  }
  for (unsigned k = stages - 2; k-- > 0;) {
    const std::string index = vreg(quarter + 6 + next_index++ % 2);
    body.push_back("ld_vlm" + raw + index + ", " + vlm(k));
    for (unsigned r = 0; r < quarter; ++r)
      if ((r & (1u << k)) == 0) swap(vreg(r), vreg(r + (1u << k)), vreg(quarter + next_temp++ % 6), k, index);
  }
  for (unsigned r = 0; r < quarter; ++r) {
    body.push_back("st_vlm S19, " + vreg(r));
    body.push_back("add.i32 S19, S19, " + std::to_string(vector_bytes));
  }
  body.push_back("add.i32 S18, S18, 1");
  body.push_back("cmp.lt.i32 SP5, S18, 4");
  const std::vector<std::string> quarters = schedule::list_schedule(body);
  body.clear();

  // Before the groups: S0 .. S3 at rows 0, Q, 2Q, 3Q of the tile in VLM; S18 from 0.
  for (unsigned m = 0; m < 4; ++m) body.push_back("ld_smov S" + std::to_string(m) + ", " + vlm(rows_base + m * quarter));
  body.push_back("ld_smov S18, 0");
  const std::vector<std::string> before_groups = schedule::list_schedule(body);
  body.clear();

  // A pass over four groups (six registers each: four rows, two temporaries): rows r, r+Q, r+2Q,
  // r+3Q from VLM, the stages of bits Q and 2Q, the rows to Y (I4 writes rows r and r+2Q, I5
  // rows r+Q and r+3Q).
  const std::string index_q = vreg(38), index_2q = vreg(39);
  body.push_back("ld_vlm" + raw + index_q + ", " + vlm(stages - 2));
  body.push_back("ld_vlm" + raw + index_2q + ", " + vlm(stages - 1));
  for (unsigned g = 0; g < groups_per_pass; ++g) {
    const auto row = [&](unsigned m) { return vreg(6 * g + m); };
    for (unsigned m = 0; m < 4; ++m) {
      const std::string address = "S" + std::to_string(m);
      body.push_back("ld_vlm" + raw + row(m) + ", " + address);
      body.push_back("add.i32 " + address + ", " + address + ", " + std::to_string(vector_bytes));
    }
    swap(row(0), row(1), vreg(6 * g + 4), stages - 2, index_q);
    swap(row(2), row(3), vreg(6 * g + 5), stages - 2, index_q);
    swap(row(0), row(2), vreg(6 * g + 4), stages - 1, index_2q);
    swap(row(1), row(3), vreg(6 * g + 5), stages - 1, index_2q);
    const std::string up = std::to_string(2 * quarter), back = "-" + std::to_string(2 * quarter - 1);
    for (unsigned m = 0; m < 2; ++m) {
      const std::string y = m == 0 ? "I4" : "I5";
      body.push_back("st_tnsr " + y + ", 1, " + row(m));
      body.push_back("iadd_dim " + y + ", " + up + dim(q));
      body.push_back("st_tnsr " + y + ", 1, " + row(m + 2));
      body.push_back("iadd_dim " + y + ", " + back + dim(q));
    }
  }
  body.push_back("add.i32 S18, S18, 1");
  body.push_back("cmp.lt.i32 SP5, S18, " + std::to_string(passes));
  const std::vector<std::string> group_passes = schedule::list_schedule(body);
  body.clear();

  // The step's end: I4 and I5 back to the tile's first rows and one tile on along Y's dim 0.
  for (const char* y : {"I4", "I5"}) {
    body.push_back(std::string("iadd_dim ") + y + ", -" + std::to_string(quarter) + dim(q));
    body.push_back(std::string("iadd_dim ") + y + ", LANES dim=0");
  }
  reset_loop_state();
  const std::vector<std::string> step_end = schedule::list_schedule(body, "iadd_dim I2, LANES dim=0");

  std::string src = ".macro ROW_SETUP\n";
  for (const std::string& bundle : setup) src += "        " + bundle + "\n";
  src += ".endm\n.include \"nest.inc\"\n";
  // Before the nest: the stages' masks and shuffle indexes.
  src += "        lane_id" + raw + "V0\n";
  for (unsigned k = 0; k < stages; ++k) {
    const std::string s = std::to_string(1u << k);
    src += "        and" + raw + "V1, V0, " + s + "\n        cmp.ne" + raw + mask(k) + ", V1, 0\n";
    src += "        xor" + raw + "V1, V0, " + s + "\n        st_vlm " + vlm(k) + ", V1\n";
  }
  const auto emit = [&](const std::vector<std::string>& bundles, const std::string& first_label,
                        const std::string& last_label) {
    for (size_t i = 0; i < bundles.size(); ++i) {
      const std::string label = i == 0 && !first_label.empty() ? first_label + ": "
                                : i + 1 == bundles.size() && !last_label.empty() ? last_label + ": "
                                                                                 : "        ";
      src += label + bundles[i] + "\n";
    }
  };
  src += "        NEST_BEGIN\n";
  emit(quarters, "quarters", "");
  src += "        jmp quarters @SP5\n";
  emit(before_groups, "", "");
  emit(group_passes, "groups", "");
  src += "        jmp groups @SP5\n";
  emit(step_end, "", "end_d0");
  src += "        NEST_END\n";
  return src;
}

}  // namespace hpusim::synapse::tpc_kernels::glue
