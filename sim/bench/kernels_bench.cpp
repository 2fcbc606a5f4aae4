#include "sim/bench/kernels_bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <stdexcept>

#include "hw/card/card.h"
#include "hw/hbm/hbm_subsystem.h"
#include "sim/bench/start_phase.h"
#include "sim/platform/platform.h"
#include "sim/zoo/api_graph.h"
#include "sim/zoo/engine_utilisation.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::bench {
namespace {

namespace tk = synapse::tpc_kernels;
using Shape = std::vector<unsigned>;

struct Tensor {
  synDataType type = syn_type_float;
  Shape shape;
};

// One node to run: its tensors, scalars, and the VPU ops it does per element of `ops_of`'s tensor.
struct Case {
  std::string guid, label;
  std::vector<Tensor> inputs, outputs;
  std::vector<float> scalars;
  double ops_per_element = 1;
  size_t ops_of = 0;          // the output whose elements count the work
  bool ops_on_input = false;  // or input 0's (reductions, embedding backward, nll_loss)
  // Inputs that are indices (i32) and the bound they are drawn below: spread over their range as a
  // real gather's are (all zeros, every lookup would read one row: a hot spot no model has).
  std::map<size_t, uint32_t> index_bound;
  uint64_t table_rows_read = 0;   // input 0 is a table of which the kernel reads this many rows
};

uint64_t elements(const Shape& s) {
  uint64_t n = 1;
  for (unsigned d : s) n *= d;
  return n;
}
unsigned type_bytes(synDataType t) { return t == syn_type_bf16 ? 2 : t == syn_type_uint8 ? 1 : 4; }
synDataType type_of(const std::string& guid) {
  if (guid.size() >= 5 && guid.compare(guid.size() - 5, 5, "_bf16") == 0) return syn_type_bf16;
  if (guid.size() >= 4 && guid.compare(guid.size() - 4, 4, "_i32") == 0) return syn_type_int32;
  if (guid.size() >= 3 && guid.compare(guid.size() - 3, 3, "_u8") == 0) return syn_type_uint8;
  return syn_type_float;
}
bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
std::string shape_text(const Shape& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t;
}

// The cases of one GUID: the representative shape (a BERT-base activation, 768 x 1024 tokens, or
// what the kernel takes in a BERT layer) and, with `large`, 4x as much.
std::vector<Case> cases_for(const std::string& guid, bool large) {
  const synDataType t = type_of(guid);
  std::vector<Case> out;
  for (unsigned scale : large ? std::vector<unsigned>{1, 4} : std::vector<unsigned>{1}) {
    const unsigned tokens = 1024 * scale;
    const Shape act{768, tokens};
    Case c;
    c.guid = guid;
    c.label = scale == 1 ? "bert" : "large";
    const auto same = [&](size_t nin, double ops) {
      for (size_t i = 0; i < nin; ++i) c.inputs.push_back({t, act});
      c.outputs.push_back({t, act});
      c.ops_per_element = ops;
    };
    static const std::regex binary(R"(^(add|sub|mul|div|max|min|equal|not_equal|less|less_equal|greater|greater_equal)_fwd_)");
    static const std::regex unary(R"(^(relu|tanh|sigmoid|exp|log|sqrt|rsqrt|abs|neg)_fwd_)");
    if (std::regex_search(guid, binary)) {
      same(2, 1);
    } else if (std::regex_search(guid, unary)) {
      same(1, 1);
    } else if (starts(guid, "gelu") || starts(guid, "silu")) {
      same(guid.find("_bwd_") != std::string::npos ? 2 : 1, 12);
    } else if (guid.find("_bwd_") != std::string::npos &&
               (starts(guid, "relu") || starts(guid, "tanh") || starts(guid, "sigmoid"))) {
      same(2, 3);
    } else if (starts(guid, "addcmul") || starts(guid, "addcdiv")) {
      same(3, 3);
      c.scalars = {0.5f};
    } else if (starts(guid, "fill")) {
      c.outputs.push_back({t, act});
      c.scalars = {1.0f};
      c.ops_per_element = 0;
    } else if (starts(guid, "cast_")) {
      const std::string from = guid.substr(5, guid.find("_to_") - 5), to = guid.substr(guid.find("_to_") + 4);
      c.inputs.push_back({type_of("_" + from), act});
      c.outputs.push_back({type_of("_" + to), act});
    } else if (starts(guid, "reduce_")) {
      // Over the features (dim 0, a layernorm's sum) and over the tokens (dim 1, a bias gradient).
      for (unsigned dim : {0u, 1u}) {
        Case r = c;
        r.label += dim == 0 ? " dim0" : " dim1";
        r.inputs.push_back({t, act});
        r.outputs.push_back({t, dim == 0 ? Shape{1, tokens} : Shape{768, 1}});
        r.scalars = {static_cast<float>(dim)};
        r.ops_on_input = true;
        out.push_back(r);
      }
      continue;
    } else if (starts(guid, "softmax") || starts(guid, "log_softmax")) {
      // Attention probabilities: rows of 128 keys, 12 heads x 128 queries x batch 8.
      const Shape rows{128, 12 * 128 * 8 * scale / 8};
      const bool bwd = guid.find("_bwd_") != std::string::npos;
      for (int i = 0; i < (bwd ? 2 : 1); ++i) c.inputs.push_back({t, rows});
      c.outputs.push_back({t, rows});
      c.ops_per_element = bwd ? 4 : 6;
    } else if (starts(guid, "layernorm_fwd")) {
      c.inputs = {{t, act}, {t, {768}}, {t, {768}}};
      c.outputs = {{t, act}, {syn_type_float, {1, tokens}}, {syn_type_float, {1, tokens}}};
      c.scalars = {1e-5f};
      c.ops_per_element = 8;
    } else if (starts(guid, "layernorm_bwd_gamma_beta")) {
      c.inputs = {{t, act}, {t, act}, {syn_type_float, {1, tokens}}, {syn_type_float, {1, tokens}}};
      c.outputs = {{t, {768}}, {t, {768}}};
      c.ops_per_element = 5.0 * tokens;   // per output element: every row
    } else if (starts(guid, "layernorm_bwd")) {
      c.inputs = {{t, act}, {t, act}, {syn_type_float, {1, tokens}}, {syn_type_float, {1, tokens}}, {t, {768}}};
      c.outputs = {{t, act}};
      c.ops_per_element = 10;
    } else if (starts(guid, "dropout_fwd")) {
      c.inputs = {{t, act}, {syn_type_int32, {1}}};
      c.outputs = {{t, act}, {t, act}};
      c.scalars = {0.1f};
      c.ops_per_element = 16;
    } else if (starts(guid, "dropout_bwd")) {
      same(2, 2);
      c.scalars = {0.1f};
    } else if (starts(guid, "where_fwd")) {
      c.inputs = {{syn_type_uint8, act}, {t, act}, {t, act}};
      c.outputs = {{t, act}};
    } else if (starts(guid, "gather_fwd")) {
      c.inputs = {{t, act}, {syn_type_int32, act}};
      c.outputs = {{t, act}};
      c.scalars = {1.0f};
      c.index_bound[1] = tokens;   // along dim 1
    } else if (starts(guid, "embedding_fwd")) {
      c.inputs = {{t, {768, 4096}}, {syn_type_int32, {tokens}}};
      c.outputs = {{t, act}};
      c.ops_per_element = 0;
      c.index_bound[1] = 4096;
      c.table_rows_read = tokens;
    } else if (starts(guid, "embedding_bwd")) {
      c.inputs = {{t, act}, {syn_type_int32, {tokens}}};
      c.outputs = {{t, {768, 4096}}};
      c.ops_on_input = true;
      c.index_bound[1] = 4096;
    } else if (starts(guid, "permute")) {
      // BERT's heads: {head_dim, heads, seq, batch} -> {head_dim, seq, heads, batch}.
      c.inputs = {{t, {64, 12, 128, 8 * scale}}};
      c.outputs = {{t, {64, 128, 12, 8 * scale}}};
      c.scalars = {0, 2, 1, 3};
      c.ops_per_element = 0;
    } else if (starts(guid, "transpose")) {
      c.inputs = {{t, act}};
      c.outputs = {{t, {tokens, 768}}};
      c.scalars = {0, 1};
      c.ops_per_element = 0;
    } else if (starts(guid, "range_fwd")) {
      c.outputs = {{t, {768 * tokens}}};
      c.scalars = {0.0f, 1.0f, static_cast<float>(768 * tokens), 0.0f};
    } else if (starts(guid, "random_uniform") || starts(guid, "random_normal")) {
      c.inputs = {{syn_type_int32, {1}}};
      c.outputs = {{t, act}};
      c.scalars = {0.0f, 1.0f};
      c.ops_per_element = starts(guid, "random_normal") ? 40 : 16;
    } else if (starts(guid, "nll_loss_fwd")) {
      c.inputs = {{t, {1000, tokens / 8}}, {syn_type_int32, {tokens / 8}}};
      c.outputs = {{t, {1}}, {t, {1}}};
      c.ops_per_element = 0;
      c.index_bound[1] = 1000;
    } else if (starts(guid, "nll_loss_bwd")) {
      c.inputs = {{t, {1}}, {syn_type_int32, {tokens / 8}}, {t, {1}}};
      c.outputs = {{t, {1000, tokens / 8}}};
      c.ops_per_element = 0;
      c.index_bound[1] = 1000;
    } else if (guid == "sgd_momentum_f32") {
      same(3, 6);
      c.outputs.push_back({t, act});
      c.scalars = {0.1f, 0.9f, 0.0f, 0.0f, 0.0f};
    } else if (guid == "adam_f32" || guid == "adamw_f32") {
      same(4, 15);
      c.outputs.insert(c.outputs.end(), {{t, act}, {t, act}});
      c.scalars = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3.0f};
    } else if (guid == "adadelta_f32") {
      same(4, 16);
      c.outputs.insert(c.outputs.end(), {{t, act}, {t, act}});
      c.scalars = {1.0f, 0.9f, 1e-6f, 0.0f};
    } else if (guid == "fused_adam_f32" || guid == "fused_adamw_f32" || guid == "fused_sgd_f32") {
      // A parameter group of two tensors of the activation's size.
      const bool sgd = guid == "fused_sgd_f32";
      c.inputs = {{t, {2}}};
      c.outputs = {{t, {2}}};
      for (int p = 0; p < 2; ++p) {
        for (int k = 0; k < (sgd ? 3 : 4); ++k) c.inputs.push_back({t, act});
        for (int k = 0; k < (sgd ? 2 : 3); ++k) c.outputs.push_back({t, act});
      }
      c.scalars = sgd ? std::vector<float>{0.9f, 0.0f, 0.0f, 0.0f} : std::vector<float>{0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
      c.ops_of = 1;
      c.ops_per_element = 2 * (sgd ? 6 : 15);
    } else if (guid == "fused_clip_norm_f32") {
      c.inputs = {{t, act}, {t, act}};
      c.outputs = {{t, act}, {t, act}, {t, {1}}, {t, {129}}};
      c.scalars = {1.0f};
      c.ops_per_element = 2 * 3;
    } else {
      return out;   // no case: reported as such
    }
    out.push_back(c);
  }
  if (large && guid == "embedding_fwd_f32") {
    // Random gathers of short rows, as the published TPC gather measurements take them: rows of
    // 256 B and of 64 B from a 16 MB table, each row read once on average.
    for (const unsigned row_bytes : {256u, 64u}) {
      const unsigned width = row_bytes / 4, rows = (16u << 20) / row_bytes, lookups = row_bytes == 256 ? rows : rows / 2;
      Case g;
      g.guid = guid;
      g.label = "gather" + std::to_string(row_bytes) + "B";
      g.inputs = {{syn_type_float, {width, rows}}, {syn_type_int32, {lookups}}};
      g.outputs = {{syn_type_float, {width, lookups}}};
      g.ops_per_element = 0;
      g.index_bound[1] = rows;
      g.table_rows_read = lookups;
      out.push_back(g);
    }
  }
  return out;
}

struct CardLimits {
  unsigned tpcs = 0, vector_bits = 0, prefetch_entries = 0;
  double tpc_ghz = 0, hbm_bytes_per_s = 0;
};

KernelsBenchRow run_case(synDeviceId device, const CardLimits& card, const Case& c, unsigned phases) {
  zoo::ApiGraph g;
  std::vector<synTensor> in, out;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    in.push_back(g.persistent("in" + std::to_string(i), c.inputs[i].type, c.inputs[i].shape));
  for (size_t i = 0; i < c.outputs.size(); ++i)
    out.push_back(g.persistent("out" + std::to_string(i), c.outputs[i].type, c.outputs[i].shape));
  g.node(c.guid, "kernel", in, out, c.scalars);
  synRecipeHandle recipe = g.compile("bench_" + c.guid);
  zoo::DeviceTensors tensors(device, g);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::vector<uint8_t> bytes(elements(c.inputs[i].shape) * type_bytes(c.inputs[i].type), 0);
    if (const auto bound = c.index_bound.find(i); bound != c.index_bound.end()) {
      std::mt19937 draw(static_cast<uint32_t>(i + 1));   // the same indices on every run
      for (size_t k = 0; k + 4 <= bytes.size(); k += 4) {
        const uint32_t index = draw() % bound->second;
        std::memcpy(&bytes[k], &index, 4);
      }
    }
    tensors.upload("in" + std::to_string(i), bytes.data(), bytes.size());
  }
  tensors.synchronize();
  platform::Platform* box = platform::Platform::current();
  tensors.launch(recipe);   // the first launch loads the programs
  tensors.synchronize();
  // The measured launches, each from the same memory state, run k k x kPhaseStepNs later
  // (start_phase.h); the row is the median one by device time.
  struct Run {
    double device_us = 0, engines_us = 0;
    uint64_t tpc_ps = 0;   // the TPCs' busy time, summed
  };
  std::vector<Run> runs;
  const hbm::SubsystemConfig hbm = box->cosim().on_sim_thread([&] { return box->card().memory().hbm().config(); });
  const uint64_t settle_ns = self_refresh_settle_ns(hbm.controller, hbm.timing);
  for (unsigned p = 0; p < phases; ++p) {
    box->cosim().charge_ns(settle_ns + p * kPhaseStepNs);
    const zoo::EngineBusy before = box->cosim().on_sim_thread([&] { return zoo::engine_busy(box->card()); });
    tensors.launch(recipe);
    tensors.synchronize();
    const zoo::EngineBusy after = box->cosim().on_sim_thread([&] { return zoo::engine_busy(box->card()); });
    const zoo::Overlap engines = box->cosim().on_sim_thread([&] { return zoo::engine_overlap(box->card(), before); });
    uint64_t submitted = 0, completed = 0;
    zoo::check(hpusim_lastLaunchWindowNs(&submitted, &completed), "hpusim_lastLaunchWindowNs");
    Run run;
    run.device_us = static_cast<double>(completed - submitted) / 1e3;
    run.engines_us = engines.complete ? engines.span_ns / 1e3 : run.device_us;   // (a history too short: the launch)
    run.tpc_ps = after.tpc_ps - before.tpc_ps;
    runs.push_back(run);
  }
  zoo::check(synRecipeDestroy(recipe), "synRecipeDestroy");
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.device_us < b.device_us; });
  const Run& median = runs[(runs.size() - 1) / 2];

  KernelsBenchRow r;
  r.guid = c.guid;
  r.shape = c.label + " " + shape_text((c.ops_on_input ? c.inputs.at(0) : c.outputs.at(c.ops_of)).shape);
  r.device_us = median.device_us;
  r.engines_us = median.engines_us;
  r.phases = phases;
  r.device_us_min = runs.front().device_us;
  r.device_us_max = runs.back().device_us;
  // The index space's spread (the largest part's, for a tensor list).
  tk::KernelParams params;
  const auto dtype = [](synDataType t) {
    return t == syn_type_bf16 ? tk::DType::BF16 : t == syn_type_int32 ? tk::DType::I32 : t == syn_type_uint8 ? tk::DType::U8 : tk::DType::F32;
  };
  for (const Tensor& t : c.inputs) params.inputs.push_back({dtype(t.type), {t.shape.begin(), t.shape.end()}, {}});
  for (const Tensor& t : c.outputs) params.outputs.push_back({dtype(t.type), {t.shape.begin(), t.shape.end()}, {}});
  params.scalars = c.scalars;
  const tk::InstantiateResult inst = tk::KernelLibrary::instance(card.vector_bits, card.prefetch_entries).instantiate(c.guid, params);
  if (inst.inst) r.tpcs = static_cast<unsigned>(tk::partition_index_space(inst.inst->ispace_geometry, card.tpcs).size());
  for (const tk::KernelPart& part : inst.parts)
    r.tpcs = std::max(r.tpcs, static_cast<unsigned>(tk::partition_index_space(part.inst.ispace_geometry, card.tpcs).size()));
  r.kernel_us = r.tpcs ? static_cast<double>(median.tpc_ps) / r.tpcs / 1e6 : 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& t = c.inputs[i];
    // A lookup table is read a row per lookup, at most once a row (the rows ahead of a short
    // batch are never read): embedding_fwd's W.
    const uint64_t read = i == 0 && c.table_rows_read > 0 ? std::min<uint64_t>(elements(t.shape), c.table_rows_read * t.shape[0])
                                                           : elements(t.shape);
    r.bytes += static_cast<double>(read * type_bytes(t.type));
  }
  for (const Tensor& t : c.outputs) r.bytes += static_cast<double>(elements(t.shape) * type_bytes(t.type));
  const Tensor& work = c.ops_on_input ? c.inputs.at(0) : c.outputs.at(c.ops_of);
  r.ops = static_cast<double>(elements(work.shape)) * c.ops_per_element;
  const unsigned lanes = card.vector_bits / (work.type == syn_type_bf16 ? 16 : 32);
  r.memory_us = r.bytes / card.hbm_bytes_per_s * 1e6;
  r.compute_us = r.ops / (static_cast<double>(card.tpcs) * lanes * card.tpc_ghz * 1e9) * 1e6;
  r.bound = r.compute_us > r.memory_us ? "compute" : "memory";
  const double roof = std::max(r.memory_us, r.compute_us);
  r.pct_roofline = r.kernel_us > 0 ? 100.0 * roof / std::max(r.kernel_us, r.device_us) : 0;
  r.pct_engines = r.kernel_us > 0 ? 100.0 * roof / std::max(r.kernel_us, r.engines_us) : 0;
  return r;
}

}  // namespace

std::vector<KernelsBenchRow> run_kernels_bench(const KernelsBenchOptions& options, std::ostream& out) {
  if (options.phases < 1 || options.phases > kMaxPhases) throw std::invalid_argument("--phases must be 1 to 64");
  std::regex filter;
  try {
    filter = std::regex(options.filter.empty() ? ".*" : options.filter);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--guids '" + options.filter + "' is not a regular expression: " + e.what());
  }
  zoo::check(synInitialize(), "synInitialize");
  struct Session {
    ~Session() { synDestroy(); }
  } session;
  if (!options.trace_path.empty()) zoo::check(hpusim_traceToFile(options.trace_path.c_str()), "hpusim_traceToFile");
  std::string overrides;
  for (const std::string& o : options.overrides) overrides += (overrides.empty() ? "" : ";") + o;
  synDeviceId device = 0;
  zoo::check(hpusim_deviceAcquireWithPreset(&device, options.preset.c_str(), overrides.c_str()),
             "hpusim_deviceAcquireWithPreset");
  platform::Platform* box = platform::Platform::current();
  if (box == nullptr) throw std::runtime_error("bench kernels: the acquire left no platform");
  CardLimits card;
  const auto& preset = box->card().preset();
  card.tpcs = preset.tpc().count();
  card.vector_bits = preset.tpc().vector_bits();
  card.prefetch_entries = preset.tpc().prefetch_entries();
  card.tpc_ghz = preset.clocks().tpc_mhz() / 1000.0;
  card.hbm_bytes_per_s = box->cosim().on_sim_thread([&] { return box->card().memory().hbm().peak_bytes_per_second(); });
  if (card.tpcs == 0) throw std::invalid_argument("bench kernels: the preset has no TPC (tpc.count is 0)");

  out << "hpusim bench kernels on " << options.preset << ": " << card.tpcs << " TPCs x " << card.vector_bits
      << "-bit VPU at " << card.tpc_ghz << " GHz, HBM " << std::fixed << std::setprecision(1)
      << card.hbm_bytes_per_s / 1e9 << " GB/s\n"
      << "roofline: max(bytes / HBM peak, VPU ops / (TPCs x lanes x clock)); kernel us: the TPCs' busy time over the\n"
      << "TPCs used; %roof: the roofline's time over the longer of kernel and device (launch) time; engines us:\n"
      << "the first kernel's start to the last one's end (no submission, no completion, as a node inside a graph\n"
      << "runs); %eng: the roofline's time over the longer of kernel and engines time\n"
      << std::defaultfloat;
  if (options.phases > 1) {
    out << "each row: the median (by device time) of " << options.phases << " launches, each started " << kPhaseStepNs
        << " ns after the one before\n(a memory-bound kernel's time moves with the phase of its start against the "
        << "clocks); spread: (longest - shortest device time) / the median's\n";
  }
  out << std::left << std::setw(28) << "guid" << std::setw(20) << "shape" << std::right << std::setw(11) << "device us"
      << std::setw(11) << "kernel us" << std::setw(9) << "MB" << std::setw(10) << "Mops" << std::setw(9) << "bound"
      << std::setw(8) << "%roof" << std::setw(6) << "TPCs" << std::setw(12) << "engines us" << std::setw(8) << "%eng"
      << (options.phases > 1 ? "   spread" : "") << "\n";
  std::vector<KernelsBenchRow> rows;
  std::vector<std::string> without_case;
  for (const std::string& guid : tk::KernelLibrary::instance(card.vector_bits, card.prefetch_entries).guids()) {
    if (!std::regex_search(guid, filter)) continue;
    const std::vector<Case> cases = cases_for(guid, options.large);
    if (cases.empty()) without_case.push_back(guid);
    for (const Case& c : cases) {
      std::cerr << "bench kernels: " << guid << " (" << c.label << ")\n";
      const KernelsBenchRow r = run_case(device, card, c, options.phases);
      char line[256];
      std::snprintf(line, sizeof line, "%-28s%-20s%11.1f%11.1f%9.2f%10.2f%9s%7.1f%%%6u%12.1f%7.1f%%", r.guid.c_str(),
                    r.shape.c_str(), r.device_us, r.kernel_us, r.bytes / 1e6, r.ops / 1e6, r.bound.c_str(),
                    r.pct_roofline, r.tpcs, r.engines_us, r.pct_engines);
      out << line;
      if (r.phases > 1) {
        std::snprintf(line, sizeof line, " %7.1f%%",
                      r.device_us > 0 ? 100.0 * (r.device_us_max - r.device_us_min) / r.device_us : 0.0);
        out << line;
      }
      out << "\n" << std::flush;
      rows.push_back(r);
    }
  }
  if (!without_case.empty()) {
    out << "no case (the strided views and inserts the compiler inserts for layouts):";
    for (const std::string& g : without_case) out << " " << g;
    out << "\n";
  }
  if (!options.json_path.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const KernelsBenchRow& r : rows)
      j.push_back({{"guid", r.guid}, {"shape", r.shape}, {"device_us", r.device_us}, {"kernel_us", r.kernel_us},
                   {"bytes", r.bytes}, {"ops", r.ops}, {"memory_us", r.memory_us}, {"compute_us", r.compute_us},
                   {"bound", r.bound}, {"pct_roofline", r.pct_roofline}, {"tpcs", r.tpcs}, {"engines_us", r.engines_us},
                   {"pct_engines", r.pct_engines}, {"phases", r.phases}, {"device_us_min", r.device_us_min},
                   {"device_us_max", r.device_us_max}, {"preset", options.preset}});
    std::ofstream f(options.json_path);
    f << j.dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write output file '" + options.json_path + "'");
  }
  return rows;
}

}  // namespace hpusim::bench
