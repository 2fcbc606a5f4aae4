// A permute that moves dim 0 (Y's dim 0 is X's dim a = perm[0] != 0) for 32-bit elements, by
// L x L tiles (L = the f32 lanes): a step loads L vectors of X (rows a0 .. a0+L-1 along dim a,
// L elements of X's dim 0 each) and stores L vectors of Y (rows along Y's dim q = inv[0], L
// elements of Y's dim 0 each), the tile transposed in registers in between.
//
// The transpose swaps bit k of the row number with bit k of the lane number for every k. One
// stage (bit s = 2^k) pairs rows r and r + s (r without bit s) and swaps the lanes with bit s of
// a with those without it of b, with one shuffle (lane i takes lane i ^ s) and three selects
// (VPk: lane i has bit s):
//   t = VPk ? a : b;  t = shuffle(t, i ^ s);  a = VPk ? t : a;  b = VPk ? b : t.
// The stages commute. All but the top one pair rows within a half (rows 0 .. L/2-1, or the rest),
// so each half of X's rows is loaded into L/2 registers, goes through those stages and waits in
// VLM (one copy of that code, run twice, so a step's code fits the instruction cache); the top
// stage then pairs row r with r + L/2 from VLM and stores both to Y. Values move as raw bits
// (u32): NaN payloads are kept.
//
// VLM: the shuffle indexes i ^ 2^k at vector k (set once, before the nest), then the two halves.
// Each part is list-scheduled (body_schedule.h).
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

std::string vreg(unsigned n) { return "V" + std::to_string(n); }

}  // namespace

std::string tile_transpose_kernel(const std::array<unsigned, kMaxDims>& perm, unsigned lanes) {
  std::array<unsigned, kMaxDims> inv{};
  for (unsigned d = 0; d < kMaxDims; ++d) inv[perm[d]] = d;
  const unsigned a = perm[0], q = inv[0], half = lanes / 2;
  unsigned stages = 0;
  while ((1u << stages) < lanes) ++stages;
  const unsigned vector_bytes = lanes * 4;
  const auto vlm = [&](unsigned vector) { return std::to_string(vector * vector_bytes); };
  const auto mask = [](unsigned k) { return "VP" + std::to_string(k + 1); };
  const auto dim = [](unsigned d) { return " dim=" + std::to_string(d); };
  unsigned next_temp = 0, next_index = 0;
  std::vector<std::string> body;
  // One stage's swap of rows ra, rb (registers) for bit k, through the temporary t.
  const auto swap = [&](const std::string& ra, const std::string& rb, const std::string& t, unsigned k,
                        const std::string& index) {
    body.push_back("sel.u32 " + t + ", " + ra + ", " + rb + ", " + mask(k));
    body.push_back("shuffle.u32 " + t + ", " + t + ", " + index);
    body.push_back("sel.u32 " + ra + ", " + t + ", " + ra + ", " + mask(k));
    body.push_back("sel.u32 " + rb + ", " + rb + ", " + t + ", " + mask(k));
  };
  // The shuffle index of stage k, alternating between two registers so stages overlap.
  const auto load_index = [&](unsigned k, unsigned first_register) {
    const std::string index = vreg(first_register + next_index++ % 2);
    body.push_back("ld_vlm.u32 " + index + ", " + vlm(k));
    return index;
  };

  // Set-up of a row of steps (ROW_SETUP; I2 at its first step): X's coordinates of the tile's
  // first row (I3), Y's of its first output row (I4) and of its middle one (I5), the next tile
  // (one step on along Y's dim 0 = X's dim a) prefetched from I7 as this one is read. A step
  // leaves I3 and I7 one tile on, and moves I4 and I5 there; S18 counts the halves.
  for (unsigned d = 0; d < kMaxDims; ++d) {
    const std::string sd = "S" + std::to_string(8 + d);
    body.push_back("iget_dim " + sd + ", I2" + dim(d));
    if (d == q) body.push_back("mul.i32 " + sd + ", " + sd + ", LANES");
    body.push_back("imov_dim I3, " + sd + dim(perm[d]));
    body.push_back("imov_dim I4, " + sd + dim(d));
  }
  body.push_back("imov I5, I4");
  body.push_back("iadd_dim I5, " + std::to_string(half) + dim(q));
  body.push_back("imov I7, I3");
  body.push_back("iadd_dim I7, LANES" + dim(a));
  body.push_back("ld_smov S18, 0");
  const std::vector<std::string> setup = schedule::list_schedule(body);
  body.clear();

  // Each half of X's rows (one copy of the code, run twice): its rows into V0 .. V(half-1), the
  // stages of every bit but the top one (they pair rows within a half), the rows to VLM.
  const unsigned temps = half;   // six temporaries after the rows, then two indexes
  for (unsigned r = 0; r < half; ++r) {
    body.push_back("prefetch I7, 0");
    body.push_back("iadd_dim I7, 1" + dim(a));
    body.push_back("ld_tnsr " + vreg(r) + ", I3, 0");
    body.push_back("iadd_dim I3, 1" + dim(a));
  }
  // The half's place in VLM, after the shuffle indexes.
  body.push_back("mul.i32 S19, S18, " + std::to_string(half * vector_bytes));
  body.push_back("add.i32 S19, S19, " + vlm(stages));
  for (unsigned k = stages - 1; k-- > 0;) {
    const std::string index = load_index(k, temps + 6);
    for (unsigned r = 0; r < half; ++r)
      if ((r & (1u << k)) == 0) swap(vreg(r), vreg(r + (1u << k)), vreg(temps + next_temp++ % 6), k, index);
  }
  for (unsigned r = 0; r < half; ++r) {
    body.push_back("st_vlm S19, " + vreg(r));
    body.push_back("add.i32 S19, S19, " + std::to_string(vector_bytes));
  }
  body.push_back("add.i32 S18, S18, 1");
  body.push_back("cmp.lt.i32 SP5, S18, 2");
  const std::vector<std::string> halves = schedule::list_schedule(body);
  body.clear();

  // The top stage pairs row r with row r + half (all 40 registers: three a pair), stored to Y.
  const std::string top = load_index(stages - 1, 38);
  const unsigned base = stages;   // the rows' first VLM vector
  for (unsigned r = 0; r < half; ++r) {
    const unsigned g = (r % 12) * 3;
    const std::string ra = vreg(g), rb = vreg(g + 1);
    body.push_back("ld_vlm.u32 " + ra + ", " + vlm(base + r));
    body.push_back("ld_vlm.u32 " + rb + ", " + vlm(base + half + r));
    swap(ra, rb, vreg(g + 2), stages - 1, top);
    body.push_back("st_tnsr I4, 1, " + ra);
    body.push_back("iadd_dim I4, 1" + dim(q));
    body.push_back("st_tnsr I5, 1, " + rb);
    body.push_back("iadd_dim I5, 1" + dim(q));
  }
  for (const char* y : {"I4", "I5"}) {
    body.push_back(std::string("iadd_dim ") + y + ", -" + std::to_string(half) + dim(q));
    body.push_back(std::string("iadd_dim ") + y + ", LANES dim=0");
  }
  body.push_back("ld_smov S18, 0");
  const std::vector<std::string> top_stage = schedule::list_schedule(body, "iadd_dim I2, LANES dim=0");

  std::string src = ".macro ROW_SETUP\n";
  for (const std::string& bundle : setup) src += "        " + bundle + "\n";
  src += ".endm\n.include \"nest.inc\"\n";
  // Before the nest: the stages' masks and shuffle indexes.
  src += "        lane_id.u32 V0\n";
  for (unsigned k = 0; k < stages; ++k) {
    const std::string s = std::to_string(1u << k);
    src += "        and.u32 V1, V0, " + s + "\n        cmp.ne.u32 " + mask(k) + ", V1, 0\n";
    src += "        xor.u32 V1, V0, " + s + "\n        st_vlm " + vlm(k) + ", V1\n";
  }
  src += "        NEST_BEGIN\n";
  for (size_t i = 0; i < halves.size(); ++i) src += (i == 0 ? "halves: " : "        ") + halves[i] + "\n";
  src += "        jmp halves @SP5\n";
  for (size_t i = 0; i < top_stage.size(); ++i)
    src += (i + 1 == top_stage.size() ? "end_d0: " : "        ") + top_stage[i] + "\n";
  src += "        NEST_END\n";
  return src;
}

}  // namespace hpusim::synapse::tpc_kernels::glue
