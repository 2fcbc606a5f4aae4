// Reductions over dim 0 (sum, mean, max, min) of short rows (at most kShortRowRegisters f32
// vectors; bf16: half as many vectors, their halves), several rows a step, list-scheduled
// (body_schedule.h). reduce_dim0.s walks a row with a software loop, one vector a pass behind a
// taken jump, each accumulation waiting on the one before; here a step's rows are loaded together
// (their prefetch runs whole steps ahead) and the rows' chains fill each other's latency. Every
// row runs reduce_dim0.s's operations in its order (from RINIT, one accumulator per half, the
// halves combined, the lanes reduced, the mean's division, one rounding to bf16), so the results
// are bit-identical.
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// What reduce_dim0.s's prelude defines for each reduction: RINIT, RACC's and RLANES's operation.
struct RowOp {
  const char* init;
  const char* acc;      // RACC: <acc>.f32
  const char* lanes;    // RLANES: reduce.<lanes>.f32
  bool mean = false;    // RFINISH: div.f32 by S1 (the row length)
};

std::optional<RowOp> row_op(const std::string& name) {
  if (name == "sum") return RowOp{"0.0", "add", "add"};
  if (name == "mean") return RowOp{"0.0", "add", "add", true};
  if (name == "max") return RowOp{"0xFF800000", "max", "max"};
  if (name == "min") return RowOp{"0x7F800000", "min", "min"};
  return std::nullopt;
}

// A row's vectors load into a ring of this many registers (bf16: pairs), each free again once its
// accumulation has read it, so that a step holds more rows than it would with a register for every
// vector: its rows' chains (an accumulation a vector, then the lanes' reduction) fill each other's
// latency instead of the step waiting on one row's tail.
constexpr unsigned kRowRing = 4;
constexpr unsigned kMaxStepRows = 8;

// Rows a step: as many as the 40 registers hold (each row's ring and accumulators, all rows' at
// once), at most kMaxStepRows.
unsigned row_reduce_step_rows(unsigned vectors, bool bf16) {
  const unsigned halves = bf16 ? 2 : 1, ring = std::min(vectors, kRowRing);
  return std::clamp(40u / (halves * (ring + 1)), 1u, kMaxStepRows);
}

// One step: `rows` rows of `vectors` vectors of the tensors (bf16: each two f32 halves, loaded into
// the hi half's register and widened in place). X is [N0, rows] at I3, Y [1, rows] at I4; the rows
// `ahead` steps on are prefetched from I7.
std::vector<std::string> row_reduce_body(const RowOp& op, unsigned rows, unsigned vectors, bool bf16, unsigned ahead) {
  std::vector<std::string> b;
  unsigned next = 0;
  const auto reg = [&] { return "V" + std::to_string(next++); };
  const unsigned halves = bf16 ? 2 : 1, ring = std::min(vectors, kRowRing);
  const std::string r = std::to_string(rows);
  for (const std::string& line : std::vector<std::string>{"iget_dim S16, I2 dim=1", "mul.i32 S16, S16, " + r, "imov I3, 0",
                                  "imov_dim I3, S16 dim=1", "imov I4, I3", "imov I7, I3",
                                  "iadd_dim I7, " + std::to_string(ahead * rows) + " dim=1"})
    b.push_back(line);
  // Row j: its accumulators (one a half) and its ring of `ring` loads (each `halves` registers).
  std::vector<std::vector<std::string>> acc(rows), slots(rows);
  for (unsigned j = 0; j < rows; ++j) {
    for (unsigned h = 0; h < halves; ++h) acc[j].push_back(reg());
    for (unsigned k = 0; k < ring * halves; ++k) slots[j].push_back(reg());
    for (unsigned h = 0; h < halves; ++h) b.push_back("mov.f32 " + acc[j][h] + ", " + op.init);
  }
  for (unsigned j = 0; j < rows; ++j) {
    if (j) {
      b.push_back("imov_dim I3, 0 dim=0");
      b.push_back("iadd_dim I3, 1 dim=1");
      b.push_back("imov_dim I7, 0 dim=0");
      b.push_back("iadd_dim I7, 1 dim=1");
    }
    for (unsigned v = 0; v < vectors; ++v) {
      const unsigned slot = (v % ring) * halves;
      const std::string& hi = slots[j][slot + halves - 1];
      if (v) {
        b.push_back("iadd_dim I3, LANES dim=0");
        b.push_back("iadd_dim I7, LANES dim=0");
      }
      b.push_back("prefetch I7, 0");
      b.push_back("ld_tnsr " + hi + ", I3, 0");
      if (bf16) {
        const std::string& lo = slots[j][slot];
        b.push_back("convert.bf16.f32 " + lo + ", " + hi + " part=0");
        b.push_back("convert.bf16.f32 " + hi + ", " + hi + " part=1");
      }
      for (unsigned h = 0; h < halves; ++h)
        b.push_back(std::string(op.acc) + ".f32 " + acc[j][h] + ", " + acc[j][h] + ", " + slots[j][slot + h]);
    }
  }
  for (unsigned j = 0; j < rows; ++j) {
    const std::string& a = acc[j][0];
    if (bf16) b.push_back(std::string(op.acc) + ".f32 " + a + ", " + a + ", " + acc[j][1]);   // COMBINE
    b.push_back(std::string("reduce.") + op.lanes + ".f32 " + a + ", " + a);
    if (op.mean) b.push_back("div.f32 " + a + ", " + a + ", S1");
    if (bf16) b.push_back("convert.f32.bf16 " + a + ", " + a + " part=0");   // NARROW (lane 0)
    if (j) b.push_back("iadd_dim I4, 1 dim=1");
    b.push_back("st_tnsr I4, 1, " + a);
  }
  return b;
}

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_row_reduction(const std::string& guid, const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it == defs_.end() || it->second->kind != Kind::Reduce || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      p.scalars.size() != 1 || p.scalars[0] != 0.0f)
    return std::nullopt;
  const DType io = it->second->out;
  const std::optional<RowOp> op = row_op(it->second->op_macro);
  if (!op || (io != DType::F32 && io != DType::BF16)) return std::nullopt;
  const bool bf16 = io == DType::BF16;
  const TensorParams& x = p.inputs[0];
  const TensorParams& y = p.outputs[0];
  const uint32_t n0 = padded(x.shape)[0];
  const uint64_t rows = elements(x) / std::max<uint32_t>(n0, 1);
  const unsigned vectors = (n0 + lanes_of(io) - 1) / lanes_of(io), halves = bf16 ? 2 : 1;
  const auto dense = [&](const TensorParams& t) { return t.dtype == io && flattened(t).shape.size() <= 1; };
  if (n0 == 0 || rows < 2 || rows > INT32_MAX || vectors * halves > kShortRowRegisters || !dense(x) || !dense(y) ||
      padded(y.shape)[0] != 1)
    return std::nullopt;
  for (unsigned d = 1; d < kMaxDims; ++d)   // Y is X's shape with 1 in dim 0 (else the kernel's glue says why not)
    if (padded(y.shape)[d] != padded(x.shape)[d]) return std::nullopt;
  const unsigned step_rows = row_reduce_step_rows(vectors, bf16);
  const uint32_t steps = static_cast<uint32_t>((rows + step_rows - 1) / step_rows);
  const unsigned ahead = std::max(1u, prefetch_budget() / (step_rows * vectors));

  Instantiation inst;
  inst.guid = guid;
  inst.ispace_geometry = {1, static_cast<int32_t>(steps), 1, 1, 1};
  const TensorParams x_view{io, {n0, static_cast<uint32_t>(rows)}, {}};
  const TensorParams y_view{io, {1, static_cast<uint32_t>(rows)}, {}};
  DescriptorTemplate xd = descriptor_of(x_view);
  // reduce_dim0.s's padding: the lanes past a row's end count as RINIT.
  xd.padding = op->acc == std::string("max") ? (bf16 ? 0xFF80u : 0xFF800000u)
               : op->acc == std::string("min") ? (bf16 ? 0x7F80u : 0x7F800000u)
                                               : 0u;
  inst.inputs = {xd};
  inst.outputs = {descriptor_of(y_view)};
  const int32_t R = static_cast<int32_t>(step_rows);
  TensorAccessPattern xp = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(n0) - 1}, padded(x_view.shape), false);
  xp[1] = AccessPatternDim{1, R, 0, R - 1};
  TensorAccessPattern yp = pattern_of(AccessPatternDim{0, 0, 0, 0}, padded(y_view.shape), false);
  yp[1] = AccessPatternDim{1, R, 0, R - 1};
  inst.input_patterns = {xp};
  inst.output_patterns = {yp};
  inst.srf[0] = n0;
  inst.srf[1] = f32_bits(static_cast<float>(n0));

  std::ostringstream src;
  src << "// " << guid << ": " << step_rows << " rows of " << n0 << " a step, list-scheduled\n"
      << width_prelude() << ".equ LANES " << lanes_of(io) << "\n.macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n";
  // Before the nest: this core's first `ahead` steps' rows.
  src << "        ispace_offset I7\n        iget_dim S16, I7 dim=1\n        mul.i32 S16, S16, " << step_rows
      << "\n        imov I7, 0\n        imov_dim I7, S16 dim=1\n        mov S16, 0\n        mov S17, "
      << std::min<uint64_t>(uint64_t{ahead} * step_rows, rows)
      << "\n        loop S16, S17, rows_ahead\n";
  for (unsigned v = 0; v < vectors; ++v) src << "        prefetch I7, 0; iadd_dim I7, LANES dim=0\n";
  src << "        imov_dim I7, 0 dim=0\nrows_ahead: iadd_dim I7, 1 dim=1\n        NEST_BEGIN\n";
  const std::vector<std::string> bundles =
      schedule::list_schedule(row_reduce_body(*op, step_rows, vectors, bf16, ahead), "iadd_dim I2, LANES dim=0",
                              schedule::kPrefetchHitLatency);
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  inst.variant = "reduce " + it->second->op_macro + " dim 0 " + tpc::dtype_name(io) + " " + std::to_string(step_rows) +
                 " rows a step of " + std::to_string(vectors);
  return assembled(std::move(inst), src.str(), guid);
}

}  // namespace hpusim::synapse::tpc_kernels
