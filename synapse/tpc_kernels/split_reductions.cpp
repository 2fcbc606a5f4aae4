// Reductions split across the cores with a second pass (row_chunks.h): phase 0 reduces chunks of
// the rows into the node's scratch, phase 1 reduces those partials into the outputs, so a
// reduction with few outputs (a loss, dgamma / dbeta, a bias gradient) uses every core instead of
// one or a few.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"
#include "synapse/tpc_kernels/row_chunks.h"

#include <sstream>

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

TensorParams f32(std::vector<uint32_t> shape) { return TensorParams{DType::F32, std::move(shape), {}}; }

// A sum or mean into tensor 1 from tensor 0 in two phases: `partials` (phase 0: tensor 0's chunks
// into the scratch, tensor 2) and `total` (phase 1: the partials into the output; a mean's divisor
// becomes `count`, every element it covers, when non-zero).
InstantiateResult two_phases(const std::string& guid, const InstantiateResult& partials, const InstantiateResult& total,
                             uint32_t count, uint64_t scratch_bytes, const std::string& chunks) {
  if (!partials.ok()) return partials;
  if (!total.ok()) return total;
  const uint32_t scratch = 2;
  InstantiateResult result;
  KernelPart first;
  first.inst = *partials.inst;
  first.inst.guid = guid;
  first.inst.variant += ": " + chunks;
  first.tensors = {0, scratch};
  result.parts.push_back(std::move(first));
  KernelPart second;
  second.inst = *total.inst;
  if (count != 0) second.inst.srf[1] = f32_bits(static_cast<float>(count));
  second.inst.variant += ": the chunks' partials";
  second.tensors = {scratch, 1};
  second.phase = 1;
  result.parts.push_back(std::move(second));
  result.scratch_bytes = {scratch_bytes};
  return result;
}

}  // namespace

// A reduction over dim 1 of X [n, rows] into Y [n, rows / length], a step `columns` f32
// accumulators (a block of columns, contiguous along dim 0) over `length` rows (a chunk). The
// steps are one index-space dim, a block's chunks consecutive, so a core's steps read one stretch
// of each block's columns and its prefetch stream runs on from a step into the next; a whole row
// per step (the usual bias gradient) reads X front to back. Every element is reduced from `init`
// in row order, in f32 (bf16 widened exactly), then divided by `divisor` (a mean) and stored: f32,
// or rounded once to bf16.
struct KernelLibrary::ColumnReduction {
  DType in = DType::F32, out = DType::F32;
  uint32_t n = 0, rows = 0, length = 0;
  unsigned columns = 0;   // even where either side is bf16 (a bf16 vector is two f32 columns)
  std::string op = "add", init = "0.0";
  float divisor = 0.0f;   // 0: none
};

namespace {

// The most f32 accumulators a step (a row pair's loads take twice as many registers).
constexpr unsigned kMaxColumnAccumulators = 12;
// Rows prefetched ahead of the one loaded, at most.
constexpr unsigned kMaxColumnRowsAhead = 32;
// The f32 accumulators a step of phase 0: the row's vectors in as few blocks as
// kMaxColumnAccumulators allows, split evenly (even for bf16). Measured on hl205 and hl225 over
// 768 x 4096: whole rows a step beat blocks of 2 to 6 vectors by 10 to 25 % of the roofline even
// where that leaves some cores one step fewer than others (64 steps on 24 cores): a core then
// reads one contiguous stretch of X.
unsigned column_step(uint32_t n, uint32_t lanes, bool bf16) {
  const unsigned vectors = (n + lanes - 1) / lanes, unit = bf16 ? 2 : 1;
  const unsigned blocks = (vectors + kMaxColumnAccumulators - 1) / kMaxColumnAccumulators;
  const unsigned columns = (vectors + blocks - 1) / blocks;
  return (columns + unit - 1) / unit * unit;
}

// The kernel text after the prelude. SRF: S0 rows a step, S1 the divisor, S2 steps a block, S3 a
// block's columns, S4 rows ahead. V0.. the accumulators, V12.. / V24.. a row pair's values, V36 a
// narrowed output; S5 the step, S6 / S7 its block / chunk, S8 / S9 its first column / row, S10 the
// row, S19 the step the prefetch stream runs on into (-1: none).
std::string column_reduction_text(const KernelLibrary::ColumnReduction& r) {
  const bool bf16_in = r.in == DType::BF16, bf16_out = r.out == DType::BF16;
  const unsigned per_load = bf16_in ? 2 : 1;   // f32 columns a load of X fills
  const unsigned loads = r.columns / per_load;
  const std::string load_lanes = bf16_in ? "(2 * F32_LANES)" : "F32_LANES";
  const auto v = [](unsigned k) { return "V" + std::to_string(k); };
  const auto prefetch_row = [&] {   // the row at I7, then I7 one row on
    std::vector<std::string> b;
    for (unsigned j = 0; j < loads; ++j) {
      if (j != 0) b.push_back("iadd_dim I7, " + load_lanes + " dim=0");
      b.push_back("prefetch I7, 0");
    }
    b.push_back("imov_dim I7, S8 dim=0");
    b.push_back("iadd_dim I7, 1 dim=1");
    return b;
  };
  // A pair's rows load through I3 and I4 (each two rows on after it), so that their loads interleave;
  // a last single row through I3. `rows_on`: how far the row's index register then moves.
  const auto row = [&](unsigned pair_slot, unsigned rows_on) {   // the row rows-ahead on prefetched, this one reduced
    std::vector<std::string> b = prefetch_row();
    const unsigned base = 12 + 12 * pair_slot;
    const std::string at = pair_slot == 0 ? "I3" : "I4";
    for (unsigned j = 0; j < loads; ++j) {
      if (j != 0) b.push_back("iadd_dim " + at + ", " + load_lanes + " dim=0");
      if (bf16_in) {   // into the second column's register, widened in place (the first from it first)
        const std::string lo = v(base + 2 * j), hi = v(base + 2 * j + 1);
        b.push_back("ld_tnsr " + hi + ", " + at + ", 0");
        b.push_back("convert.bf16.f32 " + lo + ", " + hi + " part=0");
        b.push_back("convert.bf16.f32 " + hi + ", " + hi + " part=1");
      } else {
        b.push_back("ld_tnsr " + v(base + j) + ", " + at + ", 0");
      }
    }
    b.push_back("imov_dim " + at + ", S8 dim=0");
    b.push_back("iadd_dim " + at + ", " + std::to_string(rows_on) + " dim=1");
    for (unsigned k = 0; k < r.columns; ++k) b.push_back(r.op + ".f32 " + v(k) + ", " + v(k) + ", " + v(base + k));
    b.push_back("add.i32 S10, S10, 1");
    return b;
  };
  const auto emit = [](std::ostringstream& out, const std::vector<std::string>& lines, unsigned load_latency) {
    for (const std::string& bundle : schedule::list_schedule(lines, "", load_latency)) out << "        " << bundle << "\n";
  };
  std::vector<std::string> pair = row(0, 2), second = row(1, 2);
  pair.insert(pair.end(), second.begin(), second.end());
  pair.push_back("cmp.lt.i32 SP2, S10, S15");
  std::vector<std::string> cold = prefetch_row();
  cold.push_back("add.i32 S11, S11, 1");
  cold.push_back("cmp.lt.i32 SP3, S11, S4");

  std::ostringstream src;
  src << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        ld_smov S19, -1\n        NEST_BEGIN\n"
      << "        iget_dim S5, I2 dim=1\n        div.i32 S6, S5, S2\n        mul.i32 S7, S6, S2\n"
      << "        sub.i32 S7, S5, S7\n        mul.i32 S8, S6, S3\n        mul.i32 S9, S7, S0\n"
      << "        imov I3, 0\n        imov_dim I3, S8 dim=0\n        imov_dim I3, S9 dim=1\n"
      << "        imov I5, 0\n        imov_dim I5, S8 dim=0\n        imov_dim I5, S7 dim=1\n";
  for (unsigned k = 0; k < r.columns; ++k) src << "        mov.f32 " << v(k) << ", " << r.init << "\n";
  // A step the last one's stream ran on into starts warm; else its first rows are prefetched first.
  src << "        cmp.eq.i32 SP4, S5, S19\n        jmp warm @SP4\n        imov I7, I3\n        ld_smov S11, 0\ncold:\n";
  emit(src, cold, schedule::kPrefetchHitLatency);
  src << "        jmp cold @SP3\nwarm:   add.i32 S19, S5, 1\n        sub.i32 S11, S2, 1\n"
      << "        cmp.ne.i32 SP4, S7, S11\n        jmp streamed @SP4\n        ld_smov S19, -1            // the block's last chunk\n"
      << "streamed:\n        imov I4, I3\n        iadd_dim I4, 1 dim=1\n        ld_smov S10, 0\n        sub.i32 S15, S0, 1\n        cmp.ge.i32 SP2, S10, S15\n"
      << "        jmp last_row @SP2\npairs:\n";
  emit(src, pair, schedule::kPrefetchHitLatency);
  src << "        jmp pairs @SP2\nlast_row:\n        cmp.ge.i32 SP2, S10, S0\n        jmp rows_done @SP2\n";
  emit(src, row(0, 1), schedule::kPrefetchHitLatency);
  src << "rows_done:\n";
  std::vector<std::string> finish;
  if (r.divisor != 0.0f)
    for (unsigned k = 0; k < r.columns; ++k) finish.push_back("div.f32 " + v(k) + ", " + v(k) + ", S1");
  if (bf16_out) {
    for (unsigned k = 0; k < r.columns; k += 2) {
      if (k != 0) finish.push_back("iadd_dim I5, (2 * F32_LANES) dim=0");
      finish.push_back("convert.f32.bf16 V36, " + v(k) + " part=0");
      finish.push_back("convert.f32.bf16 V36, " + v(k + 1) + " part=1");
      finish.push_back("st_tnsr I5, 1, V36");
    }
  } else {
    for (unsigned k = 0; k < r.columns; ++k) {
      if (k != 0) finish.push_back("iadd_dim I5, F32_LANES dim=0");
      finish.push_back("st_tnsr I5, 1, " + v(k));
    }
  }
  src << schedule::loop_body(schedule::list_schedule(finish, "iadd_dim I2, LANES dim=0")) << "        NEST_END\n";
  return src.str();
}

}  // namespace

InstantiateResult KernelLibrary::instantiate_column_reduction(const std::string& guid, const ColumnReduction& r) {
  const uint32_t lanes = lanes_of(DType::F32);
  const uint32_t chunks = r.rows / r.length;
  const uint32_t block = r.columns * lanes;
  const uint32_t blocks = (r.n + block - 1) / block;
  const unsigned loads = r.columns / (r.in == DType::BF16 ? 2 : 1);
  Instantiation inst;
  inst.guid = guid;
  inst.ispace_geometry = {1, static_cast<int32_t>(blocks * chunks), 1, 1, 1};
  inst.inputs.push_back(descriptor_of(TensorParams{r.in, {r.n, r.rows}, {}}));
  inst.outputs.push_back(descriptor_of(TensorParams{r.out, {r.n, chunks}, {}}));
  // A step's columns and rows are no linear function of its index: the patterns cover everything.
  const auto whole = [](uint32_t columns, uint32_t rows) {
    TensorAccessPattern pat = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(columns) - 1}, {1, 1, 1, 1, 1}, false);
    pat[1] = AccessPatternDim{1, 0, 0, static_cast<int32_t>(rows) - 1};
    return pat;
  };
  inst.input_patterns.push_back(whole(r.n, r.rows));
  inst.output_patterns.push_back(whole(r.n, chunks));
  inst.srf[0] = r.length;
  inst.srf[1] = f32_bits(r.divisor);
  inst.srf[2] = chunks;
  inst.srf[3] = block;
  inst.srf[4] = std::clamp(prefetch_budget() / loads, 1u, kMaxColumnRowsAhead);
  std::ostringstream src;
  src << "// " << guid << ": " << r.op << " over dim 1 of [" << r.n << ", " << r.rows << "], " << r.columns
      << " f32 columns x " << r.length << " rows a step\n"
      << width_prelude() << ".equ LANES 1\n" << column_reduction_text(r);
  inst.variant = r.op + " " + tpc::dtype_name(r.in) + " -> " + tpc::dtype_name(r.out) + " columns " +
                 std::to_string(r.columns) + " x " + std::to_string(r.length) + " rows a step";
  return assembled(std::move(inst), src.str(), guid);
}

std::optional<InstantiateResult> KernelLibrary::instantiate_split_dim0_reduction(const std::string& guid,
                                                                                 const KernelParams& p) {
  const bool mean = guid == "reduce_mean_fwd_f32";
  if ((!mean && guid != "reduce_sum_fwd_f32") || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      p.scalars != std::vector<float>{0.0f})
    return std::nullopt;
  const TensorParams& x = p.inputs[0];
  const auto px = padded(x.shape);
  const uint32_t length = dim0_chunk_length(px[0]);
  if (length == 0 || elements(x) != px[0] || elements(p.outputs[0]) != 1 || !x.strides.empty() ||
      !p.outputs[0].strides.empty() || x.dtype != DType::F32 || p.outputs[0].dtype != DType::F32)
    return std::nullopt;
  const uint32_t chunks = px[0] / length;
  // Phase 0: the row as [length, chunks], a sum per chunk into the scratch [1, chunks]; phase 1:
  // the partials reduced the same way into the output; a mean divides by every element.
  return two_phases(guid, instantiate_impl("reduce_sum_fwd_f32", {{f32({length, chunks})}, {f32({1, chunks})}, {0.0f}}, {}),
                    instantiate_impl(guid, {{f32({chunks})}, {f32({1})}, {0.0f}}, {}), mean ? px[0] : 0,
                    uint64_t{chunks} * 4, "the row's chunks");
}

std::optional<InstantiateResult> KernelLibrary::instantiate_split_outer_reduction(const std::string& guid,
                                                                                   const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it == defs_.end() || it->second->kind != Kind::Reduce || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      p.scalars != std::vector<float>{1.0f})
    return std::nullopt;
  const KernelDef& def = *it->second;
  const TensorParams& x = p.inputs[0];
  const auto px = padded(x.shape);
  const uint32_t n = px[0], rows = px[1];
  if ((def.in != DType::F32 && def.in != DType::BF16) || x.dtype != def.in || p.outputs[0].dtype != def.out ||
      elements(x) != uint64_t{n} * rows || elements(p.outputs[0]) != n || !x.strides.empty() ||
      !p.outputs[0].strides.empty())
    return std::nullopt;
  const uint32_t length = split_row_chunk(rows, n);
  if (length == 0) return std::nullopt;
  const uint32_t chunks = rows / length;
  const bool is_max = def.op_macro == "max", is_min = def.op_macro == "min";
  // Phase 0: each chunk of rows reduced into the scratch's f32 partials [n, chunks]; phase 1: the
  // partials reduced in chunk order into the output (a mean divides by every row there).
  ColumnReduction chunked;
  chunked.in = def.in;
  chunked.n = n;
  chunked.rows = rows;
  chunked.length = length;
  chunked.op = is_max ? "max" : is_min ? "min" : "add";
  chunked.init = is_max ? "0xFF800000" : is_min ? "0x7F800000" : "0.0";
  chunked.columns = column_step(n, lanes_of(DType::F32), def.in == DType::BF16);
  ColumnReduction total = chunked;
  total.in = DType::F32;
  total.out = def.out;
  total.rows = total.length = chunks;
  total.columns = 2;
  if (def.op_macro == "mean") total.divisor = static_cast<float>(rows);
  const InstantiateResult partials = instantiate_column_reduction(def.guid, chunked);
  if (!partials.ok()) return partials;
  const InstantiateResult sums = instantiate_column_reduction(def.guid, total);
  if (!sums.ok()) return sums;
  const uint32_t scratch = 2;
  InstantiateResult result;
  KernelPart first;
  first.inst = *partials.inst;
  first.inst.variant += ": the rows' chunks";
  first.tensors = {0, scratch};
  result.parts.push_back(std::move(first));
  KernelPart second;
  second.inst = *sums.inst;
  second.inst.variant += ": the chunks' partials";
  second.tensors = {scratch, 1};
  second.phase = 1;
  result.parts.push_back(std::move(second));
  result.scratch_bytes = {uint64_t{n} * chunks * 4};
  return result;
}

std::optional<InstantiateResult> KernelLibrary::instantiate_split_gamma_beta(const std::string& guid,
                                                                             const KernelParams& p) {
  const bool bf16 = guid == "layernorm_bwd_gamma_beta_bf16";
  if ((!bf16 && guid != "layernorm_bwd_gamma_beta_f32") || p.inputs.size() != 4 || p.outputs.size() != 2)
    return std::nullopt;
  const DType io = bf16 ? DType::BF16 : DType::F32;
  // Only the shapes the single launch takes (dense, stats one element per row); anything else
  // gets its error from there.
  const auto px = padded(p.inputs[0].shape);
  uint64_t rows = 1;
  for (unsigned d = 1; d < kMaxDims; ++d) rows *= px[d];
  const uint32_t length = split_row_chunk(rows, px[0]);
  if (length == 0) return std::nullopt;
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const TensorParams& t : *list)
      if (!t.strides.empty()) return std::nullopt;
  for (size_t k = 0; k < 4; ++k)
    if (p.inputs[k].dtype != (k < 2 ? io : DType::F32)) return std::nullopt;
  for (const TensorParams& t : p.outputs)
    if (t.dtype != io) return std::nullopt;
  if (p.inputs[1].shape != p.inputs[0].shape || padded(p.inputs[2].shape) != padded(p.inputs[3].shape) ||
      padded(p.inputs[2].shape)[0] != 1 || elements(p.inputs[2]) != rows || elements(p.outputs[0]) != px[0] ||
      elements(p.outputs[1]) != px[0])
    return std::nullopt;
  const uint32_t chunks = static_cast<uint32_t>(rows / length);
  const TensorParams stats = f32({1, length, 1, 1, chunks});

  // Phase 0: the rows as [N0, length, 1, 1, chunks], the partials (in scratch, f32, bf16's
  // unrounded) [N0, 1, 1, 1, chunks]; a step is one vector of one chunk.
  KernelParams chunked;
  chunked.inputs = {TensorParams{io, {px[0], length, 1, 1, chunks}, {}}, TensorParams{io, {px[0], length, 1, 1, chunks}, {}},
                    stats, stats};
  chunked.outputs = {TensorParams{io, {px[0]}, {}}, TensorParams{io, {px[0]}, {}}};
  InstantiateResult partial = instantiate_impl(guid, chunked, {}, false, bf16);
  if (!partial.ok()) return partial;
  KernelPart sums;
  sums.inst = *partial.inst;
  for (DescriptorTemplate& d : sums.inst.outputs) {   // a row of partials per chunk
    d.dims = kMaxDims;
    d.size = {px[0], 1, 1, 1, chunks};
    d.stride = {1, px[0], px[0], px[0], px[0]};
  }
  sums.inst.srf[7] = 1;   // the step walks its own chunk
  const int32_t column_steps = sums.inst.ispace_geometry[0];
  if (sums.inst.srf[3] != 0) {
    // The scheduled f32 kernel (layernorm_gamma_beta.cpp) takes a step per (chunk, column step)
    // on dim 4, so the launch spreads them all over the cores (it splits one dim); a step's
    // columns are then no linear function of the index: the patterns cover every column.
    sums.inst.srf[3] = static_cast<uint32_t>(column_steps);
    sums.inst.ispace_geometry[0] = 1;
    sums.inst.ispace_geometry[4] = static_cast<int32_t>(chunks) * column_steps;
    for (auto* patterns : {&sums.inst.input_patterns, &sums.inst.output_patterns})
      for (TensorAccessPattern& pat : *patterns) {
        if (pat[0].a != 0) pat[0] = AccessPatternDim{0, 0, 0, static_cast<int32_t>(px[0]) - 1};
        pat[4] = AccessPatternDim{4, 0, 0, static_cast<int32_t>(chunks) - 1};
      }
  } else {
    sums.inst.ispace_geometry[4] = static_cast<int32_t>(chunks);
    for (auto* patterns : {&sums.inst.input_patterns, &sums.inst.output_patterns})
      for (TensorAccessPattern& pat : *patterns) pat[4] = AccessPatternDim{4, 1, 0, 0};
  }
  sums.inst.variant += " row chunks";
  const uint32_t scratch = static_cast<uint32_t>(p.inputs.size() + p.outputs.size());
  sums.tensors = {0, 1, 2, 3, scratch, scratch + 1};

  InstantiateResult result;
  result.parts.push_back(std::move(sums));
  // Phase 1: each output the sum of its chunks' partials, in chunk order (reduce over dim 1); bf16's
  // into f32 scratch, then (phase 2) rounded once into the output.
  const uint32_t first_output = static_cast<uint32_t>(p.inputs.size());
  for (uint32_t k = 0; k < 2; ++k) {
    KernelParams total{{f32({px[0], chunks})}, {f32({px[0], 1})}, {1.0f}};
    InstantiateResult r = instantiate_impl("reduce_sum_fwd_f32", total, {});
    if (!r.ok()) return r;
    KernelPart part;
    part.inst = *r.inst;
    part.inst.guid = guid;
    part.inst.variant = "layernorm bwd gamma beta: the chunks' partials summed";
    part.tensors = {scratch + k, bf16 ? scratch + 2 + k : first_output + k};
    part.phase = 1;
    result.parts.push_back(std::move(part));
  }
  result.scratch_bytes = {uint64_t{px[0]} * chunks * 4, uint64_t{px[0]} * chunks * 4};
  if (bf16) {
    for (uint32_t k = 0; k < 2; ++k) {
      InstantiateResult r = instantiate_impl("cast_f32_to_bf16", {{f32({px[0]})}, {TensorParams{io, {px[0]}, {}}}, {}}, {});
      if (!r.ok()) return r;
      KernelPart part;
      part.inst = *r.inst;
      part.inst.guid = guid;
      part.inst.variant = "layernorm bwd gamma beta: the sums rounded to bf16";
      part.tensors = {scratch + 2 + k, first_output + k};
      part.phase = 2;
      result.parts.push_back(std::move(part));
    }
    result.scratch_bytes.push_back(uint64_t{px[0]} * 4);
    result.scratch_bytes.push_back(uint64_t{px[0]} * 4);
  }
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
