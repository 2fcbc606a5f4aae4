// Reductions over a short outer dim (at most kShortReduceLength elements: a pool's window, a few
// heads), the body written by the glue and list-scheduled (body_schedule.h). reduce_outer.s
// makes an output vector by a software loop along the reduced dim behind a 48-deep prefetch of
// it, which a dim of 2 pays in full for every output vector. Here a step reads several rows'
// worth of inputs with straight-line loads, their prefetch runs whole steps ahead, and the
// accumulators start from the kernel's RINIT and take the inputs in the kernel's order, so the
// results are bit-identical.
//
// The tensors are viewed by their memory order. With `inner` the elements below the reduced dim
// (a row) and N its length, X is [unit, steps, W] and Y [unit, steps, V * R], where a unit is a
// row (inner <= one vector) or one of its V vectors (inner a whole number of vectors), a step
// takes R consecutive outer rows, and W = V * N * R enumerates a step's input units in memory
// order (unit stride): input unit v of element k of row r is w = v + V * (k + N * r), output
// unit v of row r is o = v + V * r.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

#include <sstream>

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// A step's loads and accumulators stay in the 40 vector registers, with room to spare; at most
// this many loads a step.
constexpr unsigned kMaxStepRegisters = 36, kMaxStepLoads = 32;

struct StepShape {
  unsigned units_per_row = 1;   // V
  unsigned length = 1;          // N
  unsigned rows = 1;            // R
  unsigned loads() const { return units_per_row * length * rows; }
  unsigned outputs() const { return units_per_row * rows; }
};

// The body of one step: loads from I3 walking W, the step `ahead` steps on prefetched from I7, the
// accumulators stored from I4 walking Y's units.
std::vector<std::string> short_reduce_body(const StepShape& s, const std::string& op, const std::string& init, bool mean,
                                           unsigned ahead) {
  std::vector<std::string> b;
  unsigned next = 0;
  const auto reg = [&] { return "V" + std::to_string(next++); };
  b.push_back("imov I3, I2");
  b.push_back("imov I7, I2");
  b.push_back("iadd_dim I7, " + std::to_string(ahead) + " dim=1");
  std::vector<std::string> x;
  for (unsigned w = 0; w < s.loads(); ++w) {
    x.push_back(reg());
    b.push_back("prefetch I7, 0");
    b.push_back("iadd_dim I7, 1 dim=2");
    b.push_back("ld_tnsr " + x[w] + ", I3, 0");
    b.push_back("iadd_dim I3, 1 dim=2");
  }
  std::vector<std::string> acc;
  for (unsigned r = 0; r < s.rows; ++r)
    for (unsigned v = 0; v < s.units_per_row; ++v) {
      const std::string a = reg();
      acc.push_back(a);
      b.push_back("mov.f32 " + a + ", " + init);
      for (unsigned k = 0; k < s.length; ++k)
        b.push_back(op + ".f32 " + a + ", " + a + ", " + x[v + s.units_per_row * (k + s.length * r)]);
      if (mean) b.push_back("div.f32 " + a + ", " + a + ", S1");
    }
  b.push_back("imov I4, I2");
  for (unsigned o = 0; o < s.outputs(); ++o) {
    b.push_back("st_tnsr I4, 1, " + acc[o]);
    b.push_back("iadd_dim I4, 1 dim=2");
  }
  return b;
}

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_short_outer_reduction(const std::string& guid,
                                                                                   const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it == defs_.end()) return std::nullopt;
  const KernelDef& def = *it->second;
  if (def.kind != Kind::Reduce || def.in != DType::F32 || def.out != DType::F32 || p.inputs.size() != 1 ||
      p.outputs.size() != 1 || p.scalars.size() != 1)
    return std::nullopt;
  const int dim = static_cast<int>(p.scalars[0]);
  if (dim < 1 || dim >= static_cast<int>(kMaxDims) || static_cast<float>(dim) != p.scalars[0]) return std::nullopt;
  const TensorParams& x = p.inputs[0];
  const TensorParams& y = p.outputs[0];
  if (x.dtype != DType::F32 || y.dtype != DType::F32 || !x.strides.empty() || !y.strides.empty()) return std::nullopt;
  // Exactly the shapes the loop kernel takes (Y is X with size 1 at the dim); anything else gets
  // its error from there.
  if (x.shape.size() <= static_cast<size_t>(dim)) return std::nullopt;
  std::vector<uint32_t> reduced = x.shape;
  reduced[static_cast<size_t>(dim)] = 1;
  if (y.shape != reduced) return std::nullopt;
  const auto px = padded(x.shape);

  const unsigned lanes = lanes_of(DType::F32);
  uint64_t inner = 1, outer = 1;
  for (int d = 0; d < dim; ++d) inner *= px[d];
  for (unsigned d = static_cast<unsigned>(dim) + 1; d < kMaxDims; ++d) outer *= px[d];
  StepShape s;
  s.length = px[dim];
  if (s.length > kShortReduceLength || inner == 0 || outer == 0) return std::nullopt;
  if (inner > lanes) {
    if (inner % lanes != 0) return std::nullopt;
    s.units_per_row = static_cast<unsigned>(inner / lanes);
  }
  const uint32_t unit = static_cast<uint32_t>(inner > lanes ? lanes : inner);
  // The most rows a step whose loads and accumulators fit, while leaving enough steps for the cores.
  for (unsigned rows : {8u, 4u, 2u, 1u}) {
    StepShape t = s;
    t.rows = rows;
    if (rows == 1 || (outer % rows == 0 && outer / rows >= 32 && t.loads() <= kMaxStepLoads &&
                      t.loads() + t.outputs() <= kMaxStepRegisters)) {
      s = t;
      break;
    }
  }
  if (s.loads() > kMaxStepLoads || s.loads() + s.outputs() > kMaxStepRegisters) return std::nullopt;
  const uint64_t steps = outer / s.rows;
  if (steps > INT32_MAX) return std::nullopt;
  // A step's loads `ahead` steps before it reaches them.
  const unsigned ahead = std::clamp(kShortRowPrefetchVectors / s.loads(), 1u, kMaxRowsAhead);

  Instantiation inst;
  inst.guid = def.guid;
  inst.ispace_geometry = {1, static_cast<int32_t>(steps), 1, 1, 1};
  const auto view = [&](uint32_t units) {
    DescriptorTemplate d = descriptor_of(TensorParams{DType::F32, {unit, static_cast<uint32_t>(steps), units}, {}});
    d.stride = {1, int64_t{unit} * units, unit, 1, 1};
    return d;
  };
  const auto pattern = [&](uint32_t units, const DescriptorTemplate& d) {
    TensorAccessPattern pat = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(unit) - 1}, d.size, false);
    pat[2] = AccessPatternDim{2, 0, 0, static_cast<int32_t>(units) - 1};
    return pat;
  };
  inst.inputs.push_back(view(s.loads()));
  inst.input_patterns.push_back(pattern(s.loads(), inst.inputs[0]));
  inst.outputs.push_back(view(s.outputs()));
  inst.output_patterns.push_back(pattern(s.outputs(), inst.outputs[0]));
  const bool mean = def.op_macro == "mean";
  inst.srf[0] = s.length;
  inst.srf[1] = f32_bits(static_cast<float>(s.length));

  const bool is_max = def.op_macro == "max", is_min = def.op_macro == "min";
  const std::string op = is_max ? "max" : is_min ? "min" : "add";
  const std::string init = is_max ? "0xFF800000" : is_min ? "0x7F800000" : "0.0";
  const std::vector<std::string> bundles =
      schedule::list_schedule(short_reduce_body(s, op, init, mean, ahead), "iadd_dim I2, LANES dim=0");
  std::ostringstream src;
  src << "// " << def.guid << ": over dim " << dim << " of " << s.length << ", " << s.rows << " rows of " << s.units_per_row
      << " x " << unit << " elements a step\n"
      << width_prelude() << ".equ LANES " << lanes << "\n.macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n";
  // The core's first `ahead` steps, prefetched before the nest.
  src << "        ispace_offset I7\n";
  for (unsigned a = 0; a < ahead; ++a) {
    src << "        imov I6, I7\n";
    for (unsigned w = 0; w < s.loads(); ++w) src << "        prefetch I6, 0; iadd_dim I6, 1 dim=2\n";
    src << "        iadd_dim I7, 1 dim=1\n";
  }
  src << "        NEST_BEGIN\n";
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  inst.variant = def.op_macro + " f32 short outer dim " + std::to_string(dim) + " of " + std::to_string(s.length) + ", " +
                 std::to_string(s.rows) + " rows x " + std::to_string(s.units_per_row) + " x " + std::to_string(unit) +
                 " a step";
  return assembled(std::move(inst), src.str(), def.guid);
}

}  // namespace hpusim::synapse::tpc_kernels
