// The optimizer kernels' step, four f32 vectors at a time and list-scheduled. optim.s (the kernel
// file) steps two vectors, banks A and B, whose dependent chains (Adam's: about 13 operations of
// 4 to 8 cycles each) interleave by hand; two chains cannot hide each other's latency, so a step
// took about 88 cycles for 53 bundles, under the memory's share of a TPC on hl225 (63 cycles).
// Here the same macros are expanded twice, the second copy (banks C and D, at I4 and I5) on
// registers of its own, and the whole step is packed by the list scheduler (body_schedule.h), so
// four chains fill each other's latency. Each operation is the same, in the same order per
// element: the bits are optim.s's.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

#include <map>
#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

// Banks C and D: optim_ops.inc's registers of banks A and B (V10..V21 and the scratch V4..V7)
// moved to ones no bank and no step-dependent value (V27..V31 of the tensor lists) uses, and the
// banks' coordinates I2 / I3 to I4 / I5.
const std::map<std::string, std::string>& second_pair() {
  static const std::map<std::string, std::string> moved = {
      {"V4", "V0"},   {"V5", "V1"},   {"V6", "V2"},   {"V7", "V3"},   {"V10", "V32"}, {"V11", "V33"},
      {"V12", "V34"}, {"V13", "V35"}, {"V14", "V36"}, {"V15", "V37"}, {"V16", "V38"}, {"V17", "V39"},
      {"V18", "V22"}, {"V19", "V23"}, {"V20", "V24"}, {"V21", "V25"}, {"I2", "I4"},   {"I3", "I5"}};
  return moved;
}

}  // namespace

std::string optim_step_kernel(const std::string& definitions) {
  const std::string all = KernelLibrary::embedded_source("optim_ops.inc").value_or("") + "\n" + definitions;
  std::vector<std::string> step;
  // The banks' coordinates: A at I2 (the step's first vector), B, C and D one vector apart.
  const std::string vector_lanes = "(LANES / " + std::to_string(kOptimStepVectors) + ")";
  for (unsigned bank = 1; bank < kOptimStepVectors; ++bank) {
    const std::string i = "I" + std::to_string(2 + bank);
    step.push_back("imov " + i + ", I2");
    step.push_back("iadd_dim " + i + ", (" + std::to_string(bank) + " * " + vector_lanes + ") dim=0");
  }
  std::vector<std::string> pair = {"ld_tnsr V10, I2, 0", "ld_tnsr V11, I2, 1", "ld_tnsr V14, I3, 0", "ld_tnsr V15, I3, 1"};
  for (const char* call : {"LOAD_STATES", "OPT_STEP"}) {
    const auto lines = schedule::expand_macro(all, call);
    if (!lines) return "";
    pair.insert(pair.end(), lines->begin(), lines->end());
  }
  pair.push_back("st_tnsr I2, NIN, V10");
  pair.push_back("st_tnsr I3, NIN, V14");
  for (const char* call : {"STORE_STATES", "STORE_LAST"}) {
    const auto lines = schedule::expand_macro(all, call);
    if (!lines) return "";
    for (const std::string& line : *lines)
      if (line.rfind("iadd_dim I2", 0) != 0) pair.push_back(line);   // the step's own, last
  }
  step.insert(step.end(), pair.begin(), pair.end());
  for (const std::string& line : pair) step.push_back(schedule::rename_registers(line, second_pair()));
  const std::vector<std::string> bundles = schedule::list_schedule(step, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);

  std::string src = ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n.include \"optim_ops.inc\"\n"
                    "        PRE_NEST\n        NEST_BEGIN\n";
  src += schedule::loop_body(bundles);
  return src + "        NEST_END\n";
}

}  // namespace hpusim::synapse::tpc_kernels::glue
