// where_fwd with no input broadcast along dim 0, list-scheduled (body_schedule.h): a step is one
// u8 vector of cond (256 lanes at 2048 bits) and the `parts` vectors of A, B and Y it covers (four
// 32-bit, two bf16). where_fwd.s steps one vector of Y and loads a whole u8 vector of cond for it,
// of which a quarter (half) is used; its prefetch covers four (two) steps, and the load that takes
// it frees it, so the other steps' cond loads waited for memory. Here each part's predicate comes
// from its slice of the one cond vector (a widening convert, then cmp.ne), and the selections move
// raw bits as where_fwd.s's do: the same values.
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

constexpr const char* kPartIndex[] = {"I2", "I4", "I5", "I6"};

}  // namespace

std::string where_fwd_scheduled(const std::string& raw, unsigned parts, unsigned steps_ahead,
                                const std::vector<std::string>& step_prefetches) {
  if (parts == 0 || parts > 4) return "";
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  // V0 cond; part k: its cond lanes widened V(1 + k), A V(5 + k), B V(9 + k), Y V(13 + k); VP(1 + k).
  std::vector<std::string> b = {"ld_tnsr V0, I2, 0"};
  for (unsigned k = 0; k < parts; ++k) {
    const std::string p = "VP" + std::to_string(1 + k);
    b.push_back("convert.u8." + raw + " " + v(1 + k) + ", V0 part=" + std::to_string(k));
    b.push_back("cmp.ne." + raw + " " + p + ", " + v(1 + k) + ", 0");
    b.push_back(std::string("ld_tnsr ") + v(5 + k) + ", " + kPartIndex[k] + ", 1");
    b.push_back(std::string("ld_tnsr ") + v(9 + k) + ", " + kPartIndex[k] + ", 2");
    b.push_back("sel." + raw + " " + v(13 + k) + ", " + v(5 + k) + ", " + v(9 + k) + ", " + p);
    b.push_back(std::string("st_tnsr ") + kPartIndex[k] + ", 3, " + v(13 + k));
  }
  // cond's vector steps_ahead steps on (I3; A's and B's prefetches walk I7).
  b.push_back("prefetch I3, 0");
  b.push_back("iadd_dim I3, LANES dim=0");
  b.insert(b.end(), step_prefetches.begin(), step_prefetches.end());
  for (unsigned k = 1; k < parts; ++k) b.push_back(std::string("iadd_dim ") + kPartIndex[k] + ", LANES dim=0");
  std::ostringstream src;
  src << ".macro ROW_SETUP\n        imov I3, I2\n        iadd_dim I3, (" << steps_ahead << " * LANES) dim=0\n";
  for (unsigned k = 1; k < parts; ++k)
    src << "        imov " << kPartIndex[k] << ", I2\n        iadd_dim " << kPartIndex[k] << ", (" << k << " * LANES / "
        << parts << ") dim=0\n";
  src << ".endm\n.include \"nest.inc\"\n        NEST_BEGIN\n";
  const std::vector<std::string> bundles = schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  return src.str();
}

}  // namespace hpusim::synapse::tpc_kernels::glue
