// Kernels whose values are a function of the element's dense index (random_uniform, random_normal,
// range), list-scheduled (body_schedule.h): four f32 vectors a step (bf16: two vectors, their f32
// halves), each vector running the kernel file's own lines (its macros expanded) on registers of
// its own, so that the four chains interleave. random_fwd.s and range_fwd.s run one step's chain
// (a hash of about a dozen dependent operations, then the draw) in the order written. Every element
// gets the kernel file's operations in their order: the same values.
#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

constexpr unsigned kCopies = 4;   // f32 vectors a step
constexpr const char* kCopyIndex[kCopies] = {"I2", "I4", "I5", "I6"};

}  // namespace

std::optional<GeneratorCode> generator_scheduled(const GeneratorBody& g, bool bf16, size_t y_tensor) {
  // One vector's lines with its macros expanded, in the kernel file's registers.
  std::vector<std::string> one;
  for (const std::string& line : g.per_vector) {
    const std::optional<std::vector<std::string>> expanded = schedule::expand_macro(g.definitions, line);
    if (expanded) one.insert(one.end(), expanded->begin(), expanded->end());
    else one.push_back(line);
  }
  // The registers each vector needs its own of: every one its lines name but the shared ones.
  static const std::regex reg(R"(\b(VP[0-9]+|V[0-9]+)\b)");
  std::set<std::string> own;
  for (const std::string& line : one)
    for (std::sregex_iterator m(line.begin(), line.end(), reg), end; m != end; ++m)
      if (!g.shared.count(m->str()) && m->str() != g.lane_ids) own.insert(m->str());
  std::vector<std::string> vectors_free, predicates_free;
  std::set<std::string> reserved = g.shared;
  reserved.insert(g.lane_ids);
  for (unsigned n = 0; n < 40; ++n)
    if (!reserved.count("V" + std::to_string(n))) vectors_free.push_back("V" + std::to_string(n));
  for (unsigned n = 1; n < 8; ++n)
    if (!reserved.count("VP" + std::to_string(n))) predicates_free.push_back("VP" + std::to_string(n));
  std::reverse(vectors_free.begin(), vectors_free.end());
  std::reverse(predicates_free.begin(), predicates_free.end());
  const auto take = [](std::vector<std::string>& pool) -> std::optional<std::string> {
    if (pool.empty()) return std::nullopt;
    std::string r = pool.back();
    pool.pop_back();
    return r;
  };
  GeneratorCode code;
  std::vector<std::map<std::string, std::string>> renames(kCopies);
  for (unsigned c = 0; c < kCopies; ++c) {
    if (c > 0) {
      const std::optional<std::string> lanes = take(vectors_free);
      if (!lanes) return std::nullopt;
      renames[c][g.lane_ids] = *lanes;
      code.setup += "        add.i32 " + *lanes + ", " + g.lane_ids + ", (" + std::to_string(c) + " * F32_LANES)\n";
    }
    for (const std::string& r : own) {
      const std::optional<std::string> mine = take(r.rfind("VP", 0) == 0 ? predicates_free : vectors_free);
      if (!mine) return std::nullopt;
      renames[c][r] = *mine;
    }
  }
  // Before the vectors: the lines run once a step (the index base).
  std::vector<std::string> b = g.step;
  for (unsigned c = 0; c < kCopies; ++c)
    for (const std::string& line : one) b.push_back(schedule::rename_registers(line, renames[c]));
  const std::string y = std::to_string(y_tensor);
  for (unsigned c = 0; c < kCopies; ++c) {
    const std::string value = renames[c].at(g.value);
    if (!bf16) {
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c] + ", " + y + ", " + value);
    } else if (c % 2 == 1) {   // the pair's halves narrowed into the lo half's register, stored at its vector
      const std::string lo = renames[c - 1].at(g.value);
      b.push_back("convert.f32.bf16 " + lo + ", " + lo + " part=0");
      b.push_back("convert.f32.bf16 " + lo + ", " + value + " part=1");
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c - 1] + ", " + y + ", " + lo);
    }
  }
  for (unsigned c = 1; c < kCopies; ++c)
    if (!bf16 || c % 2 == 0) {
      b.push_back(std::string("iadd_dim ") + kCopyIndex[c] + ", LANES dim=0");
      code.row_setup += std::string("        imov ") + kCopyIndex[c] + ", I2\n        iadd_dim " + kCopyIndex[c] + ", (" +
                        std::to_string(c) + " * F32_LANES) dim=0\n";
    }
  code.body = schedule::loop_body(schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency));
  return code;
}

}  // namespace hpusim::synapse::tpc_kernels::glue
