#include "synapse/compiler/lowering.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "arch/mme/mme_job.h"
#include "arch/mme/mme_launch.h"
#include "arch/tpc/asm/program.h"
#include "arch/tpc/tpc_launch.h"
#include "synapse/compiler/copy_views.h"
#include "synapse/compiler/dependencies.h"
#include "synapse/compiler/engine_order.h"
#include "synapse/compiler/fusion.h"
#include "synapse/compiler/memory_plan.h"
#include "synapse/compiler/queue_program.h"
#include "synapse/compiler/schedule.h"
#include "synapse/compiler/slicing.h"
#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/dma_nodes.h"
#include "synapse/graph/mme_nodes.h"
#include "synapse/graph/structural_hash.h"
#include "synapse/graph/validate.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {
namespace {

namespace tk = synapse::tpc_kernels;
namespace tc = regs::tpc_cfg;
using graph::NodeDesc;

constexpr uint64_t kProgramAlignment = 256;

// The offset of the first WREG_32 to `reg_offset` in `fragment` (its size if there is none).
size_t first_register_write(const std::vector<uint8_t>& fragment, uint16_t reg_offset) {
  size_t at = 0;
  while (at < fragment.size()) {
    const qman::DecodeResult decoded = qman::decode(fragment.data() + at, fragment.size() - at);
    if (!decoded.ok()) throw std::logic_error("compiler: an engine fragment does not decode: " + decoded.message);
    const auto* wreg = std::get_if<qman::Wreg32>(&decoded.packet);
    if (wreg != nullptr && wreg->reg_offset == reg_offset) return at;
    at += decoded.size;
  }
  return at;
}

class Lowering {
 public:
  Lowering(const Graph& graph, const CompileTarget& target, const std::vector<NodeId>& order, const MemoryPlan& plan,
           const std::map<uint32_t, std::vector<std::string>>& epilogues,
           const std::map<uint32_t, tk::ElementwiseCluster>& clusters,
           const std::vector<TensorId>& untouched_persistent, uint64_t graph_hash)
      : graph_(graph), target_(target), order_(order), plan_(plan), epilogues_(epilogues), clusters_(clusters),
        untouched_persistent_(untouched_persistent), graph_hash_(graph_hash) {}

  graph::Result run(recipe::Recipe* out) {
    recipe_.set_format_version(recipe::kFormatVersion);
    recipe_.set_graph_hash(graph_hash_);
    recipe_.set_target(target_.describe());
    recipe_.set_workspace_bytes(plan_.workspace_bytes);
    recipe_.set_sram_bytes(plan_.sram_bytes);
    slices_ = find_gemm_slices(
        graph_, order_, plan_, [this](size_t step) { return per_element_at(step); },
        [this](const GemmSlice& slice) { return plan_consumer(slice); }, slice_options());
    for (auto& [gemm, slice] : slices_) {
      sliced_consumer_[slice.consumer_step] = gemm;
      extra_sobs_ += std::min<uint32_t>(static_cast<uint32_t>(target_.mme_queues.size()), slice.chunks) - 1;
    }
    // One sync object per node, then the launch's start object, then one per MME engine beyond the
    // first of each sliced GEMM (an engine's chunks count on their own object), numbered in the
    // launch's own range (the runtime relocates it).
    const uint64_t sobs = order_.size() + 1 + extra_sobs_;
    recipe_.set_sob_count(static_cast<uint32_t>(sobs));
    if (sobs > target_.sob_count) {
      return graph::Result::error(graph::Status::AllResourcesTaken,
                                  "graph of " + std::to_string(order_.size()) + " nodes: the target gives " +
                                      std::to_string(target_.sob_count) + " sync objects (one per node, plus one" +
                                      (extra_sobs_ != 0 ? ", plus " + std::to_string(extra_sobs_) + " for sliced GEMMs" : "") +
                                      ")");
    }
    signals_.resize(order_.size());
    next_extra_sob_ = static_cast<uint32_t>(order_.size()) + 1;
    for (const PatchPoint& p : plan_.patch_points) add_persistent(p);
    for (TensorId t : untouched_persistent_) add_persistent(PatchPoint{t, {}, {}});

    const auto waits = node_dependencies(graph_, order_, plan_);
    std::vector<bool> waited_on(order_.size(), false);
    for (const auto& w : waits) {
      for (uint32_t j : w) waited_on[j] = true;
    }
    for (size_t i = 0; i < order_.size(); ++i) {
      const NodeDesc& node = graph_.node(order_[i]);
      recipe::NodeRecord* record = recipe_.add_nodes();
      record->set_name(node.name);
      record->set_guid(node.guid);
      record->set_sync_object(sob_of(i));
      for (uint32_t j : waits[i]) record->add_waits_for(j);
      graph::Result r = graph::is_mme_guid(node.guid)   ? lower_mme(i, node, *record)
                        : graph::is_dma_guid(node.guid) ? lower_dma(i, node, *record)
                        : sliced_consumer_.count(i) != 0 ? lower_sliced_consumer(i, node, *record)
                                                        : lower_tpc(i, node, *record);
      if (!r.ok()) return r;
      if (signals_[i].empty()) signals_[i].push_back({sob_of(i), static_cast<uint16_t>(record->jobs())});
    }

    recipe_.set_workspace_bytes(plan_.workspace_bytes + scratch_bytes_);

    // The first job: once everything submitted before the launch on the external queue is done
    // (engine barrier), the start object releases every engine queue of the recipe.
    QueueProgram first(target_.external_queue, true,
                       monitor_for_queue(target_.external_queue, target_.monitor_base, target_.monitor_end));
    first.set_sob(start_sob(), 1, true);
    *recipe_.add_jobs() = first.take();

    QueueProgram& last = program(target_.external_queue, true);
    for (size_t i = 0; i < order_.size(); ++i) {
      if (waited_on[i]) continue;
      for (const Signal& signal : signals_[i])
        if (signal.count > 0) last.wait_for(signal.sob, signal.count);   // a view has none
    }
    for (size_t i = 0; i < sobs; ++i) last.clear_sob(sob_of(i));   // the start object and the slices' too

    // Internal queues first, the external one (which ends the launch) last.
    for (auto& [queue, prog] : programs_) {
      if (queue != target_.external_queue && !prog->empty()) *recipe_.add_jobs() = prog->take();
    }
    *recipe_.add_jobs() = last.take();
    recipe_.set_program_image(program_image_.data(), program_image_.size());
    const std::string problem = recipe::check_recipe(recipe_);
    if (!problem.empty()) return graph::Result::error(graph::Status::Fail, "compiler produced a bad recipe: " + problem);
    *out = std::move(recipe_);
    return graph::Result::success();
  }

 private:
  uint32_t sob_of(size_t step) const { return static_cast<uint32_t>(step); }
  uint32_t start_sob() const { return sob_of(order_.size()); }

  void add_persistent(const PatchPoint& p) {
    const graph::TensorDesc& t = graph_.tensor(p.tensor);
    persistent_index_[p.tensor.index] = static_cast<uint32_t>(recipe_.persistent_size());
    recipe::PersistentTensor* pt = recipe_.add_persistent();
    pt->set_name(t.name);
    pt->set_dtype(static_cast<uint32_t>(t.dtype));
    for (uint32_t d : t.shape) pt->add_shape(d);
    pt->set_bytes(tensor_bytes(t).value_or(0));
    pt->set_read(!p.readers.empty());
    pt->set_written(!p.writers.empty());
    if (t.section) {
      pt->set_section(t.section->id);
      pt->set_section_offset(t.section->offset);
    }
  }

  Relocation relocation_of(TensorId t) const {
    Relocation r;
    if (graph_.tensor(t).persistent) {
      r.section = recipe::SECTION_PERSISTENT;
      r.index = persistent_index_.at(t.index);
    } else {
      const PlannedTensor* p = plan_.find(t);
      r.section = p->in_sram ? recipe::SECTION_SRAM : recipe::SECTION_WORKSPACE;
      r.addend = p->offset;
    }
    return r;
  }

  QueueProgram& program(regs::QueueId queue, bool external) {
    auto found = programs_.find(queue);
    if (found == programs_.end()) {
      const uint32_t monitor = monitor_for_queue(queue, target_.monitor_base, target_.monitor_end);
      found = programs_.emplace(queue, std::make_unique<QueueProgram>(queue, external, monitor)).first;
      if (!external) found->second->wait_for(start_sob(), 1);
    }
    return *found->second;
  }

  // Every sync object a node's jobs add to, with the count that means all of them are done.
  struct Signal {
    uint32_t sob = 0;
    uint16_t count = 0;
  };
  // A sliced consumer's launch for one chunk: the GEMM chunk it waits for, and its index range.
  struct ChunkLaunch {
    Signal done;
    unsigned dim = 0;
    int32_t begin = 0, end = 0;
  };

  void wait_for_dependencies(QueueProgram& queue, const recipe::NodeRecord& record) {
    for (uint32_t j : record.waits_for()) {
      if (j == skip_wait_on_) continue;   // a sliced consumer waits chunk by chunk
      for (const Signal& signal : signals_[j]) queue.wait_for(signal.sob, signal.count);
    }
  }

  static void relocate_pair(RegisterRelocations& relocs, uint32_t low_reg, uint32_t high_reg, const Relocation& r) {
    relocs[static_cast<uint16_t>(low_reg)] = {r, recipe::FIELD_LOW32};
    relocs[static_cast<uint16_t>(high_reg)] = {r, recipe::FIELD_HIGH32};
  }

  // ---- MME ----
  graph::Result lower_mme(size_t step, const NodeDesc& node, recipe::NodeRecord& record) {
    mme::MmeJob job;
    graph::Result r = graph::mme_job_for(graph_, order_[step], &job);
    if (!r.ok()) return r;
    // Operand roles (hw/mme/README.md): backward weight is dw(x, dy), its node reads (dy, x).
    const bool swap = job.op == mme::MmeOp::ConvBackwardWeight;
    Relocation a = relocation_of(node.inputs[swap ? 1 : 0]);
    Relocation b = relocation_of(node.inputs[swap ? 0 : 1]);
    Relocation o = relocation_of(node.outputs[0]);
    const Relocation signal = Relocation::sync_object(sob_of(step));
    job.so_address = signal.placeholder();
    job.so_message = qman::sob_write_value(1, true);
    const mme::GemmDims dims = mme::gemm_dims(job);
    record.set_engine("mme");
    record.set_macs(dims.m * dims.n * dims.k * dims.batch);

    struct Slice {
      mme::MmeJob job;
      Relocation a, b, o;
    };
    std::vector<Slice> slices;
    const uint32_t engines = static_cast<uint32_t>(target_.mme_queues.size());
    const uint64_t ein = mme::type_bytes(job.in), eout = mme::type_bytes(job.out);
    const auto sliced = slices_.find(step);
    if (sliced != slices_.end()) return lower_sliced_gemm(step, job, sliced->second, {a, b, o}, record);
    if (job.op == mme::MmeOp::Gemm && engines > 1 && job.batch >= engines) {
      const uint32_t per = (job.batch + engines - 1) / engines;
      for (uint32_t b0 = 0; b0 < job.batch; b0 += per) {
        Slice s{job, a, b, o};
        s.job.batch = std::min(per, job.batch - b0);
        s.a.addend += b0 * job.batch_stride_a * ein;
        s.b.addend += b0 * job.batch_stride_b * ein;
        s.o.addend += b0 * job.batch_stride_o * eout;
        slices.push_back(s);
      }
    } else if (job.op == mme::MmeOp::Gemm && engines > 1 && job.m >= target_.mme_split_min_rows) {
      const uint32_t per = (job.m + engines - 1) / engines;
      for (uint32_t m0 = 0; m0 < job.m; m0 += per) {
        Slice s{job, a, b, o};
        s.job.m = std::min(per, job.m - m0);
        s.a.addend += (job.transpose_a ? uint64_t{m0} : uint64_t{m0} * job.lda) * ein;
        s.o.addend += uint64_t{m0} * job.ldo * eout;
        slices.push_back(s);
      }
    } else {
      slices.push_back({job, a, b, o});
    }

    record.set_jobs(static_cast<uint32_t>(slices.size()));
    for (size_t i = 0; i < slices.size(); ++i) {
      Slice& s = slices[i];
      // Unsplit nodes take turns on the engines, so independent nodes can overlap.
      const size_t engine = slices.size() > 1 ? i : (mme_turn_++ % engines);
      s.job.a = s.a.placeholder();
      s.job.b = s.b.placeholder();
      s.job.o = s.o.placeholder();
      RegisterRelocations relocs;
      relocate_pair(relocs, mme::desc::kBaseLowA, mme::desc::kBaseHighA, s.a);
      relocate_pair(relocs, mme::desc::kBaseLowB, mme::desc::kBaseHighB, s.b);
      relocate_pair(relocs, mme::desc::kBaseLowO, mme::desc::kBaseHighO, s.o);
      relocate_pair(relocs, mme::desc::kSoAddrLow, mme::desc::kSoAddrHigh, signal);
      QueueProgram& queue = program(target_.mme_queues[engine], false);
      wait_for_dependencies(queue, record);
      queue.append(mme::build_mme_command_buffer(s.job, target_.mme_geometries), relocs);
    }
    return graph::Result::success();
  }

  // ---- Slicing (slicing.h) ----
  // The GEMM's chunks take turns on the engines; an engine's chunks signal its own sync object
  // (the node's for the first engine) in the order it runs them, so a count on it says which
  // chunks are done.
  graph::Result lower_sliced_gemm(size_t step, const mme::MmeJob& job, const GemmSlice& slice,
                                  std::array<Relocation, 3> operands, recipe::NodeRecord& record) {
    const uint32_t engines = std::min<uint32_t>(static_cast<uint32_t>(target_.mme_queues.size()), slice.chunks);
    const uint64_t ein = mme::type_bytes(job.in), eout = mme::type_bytes(job.out);
    std::vector<Signal>& signals = signals_[step];
    signals.push_back({sob_of(step), 0});
    for (uint32_t e = 1; e < engines; ++e) signals.push_back({next_extra_sob_++, 0});
    std::vector<Signal>& chunk_done = chunk_done_[step];
    for (uint32_t c = 0; c < slice.chunks; ++c) {
      const uint32_t engine = c % engines, m0 = slice.chunk_begin(c);
      Signal& signal = signals[engine];
      chunk_done.push_back({signal.sob, ++signal.count});
      mme::MmeJob chunk = job;
      chunk.m = slice.chunk_size(c);
      Relocation a = operands[0], o = operands[2];
      a.addend += (job.transpose_a ? uint64_t{m0} : uint64_t{m0} * job.lda) * ein;
      o.addend += uint64_t{m0} * job.ldo * eout;
      const Relocation done = Relocation::sync_object(signal.sob);
      chunk.a = a.placeholder();
      chunk.b = operands[1].placeholder();
      chunk.o = o.placeholder();
      chunk.so_address = done.placeholder();
      RegisterRelocations relocs;
      relocate_pair(relocs, mme::desc::kBaseLowA, mme::desc::kBaseHighA, a);
      relocate_pair(relocs, mme::desc::kBaseLowB, mme::desc::kBaseHighB, operands[1]);
      relocate_pair(relocs, mme::desc::kBaseLowO, mme::desc::kBaseHighO, o);
      relocate_pair(relocs, mme::desc::kSoAddrLow, mme::desc::kSoAddrHigh, done);
      QueueProgram& queue = program(target_.mme_queues[engine], false);
      if (c < engines) wait_for_dependencies(queue, record);
      queue.append(mme::build_mme_command_buffer(chunk, target_.mme_geometries), relocs);
    }
    record.set_jobs(slice.chunks);
    return graph::Result::success();
  }

  SliceOptions slice_options() const {
    SliceOptions options;
    options.chunk_row_unit = target_.mme_super_tile_rows;
    options.min_chunks = 2 * static_cast<uint32_t>(std::max<size_t>(target_.mme_queues.size(), 1));
    return options;
  }

  bool per_element_at(size_t step) const {
    const NodeDesc& node = graph_.node(order_[step]);
    if (clusters_.count(order_[step].index) != 0) return true;   // elementwise ops, broadcasts, constants
    tk::KernelLibrary& library = tk::KernelLibrary::instance(target_.tpc_vector_bits, target_.tpc_prefetch_entries);
    if (!library.per_element(node.guid)) return false;
    const auto fused = epilogues_.find(order_[step].index);
    if (fused == epilogues_.end()) return true;
    return std::all_of(fused->second.begin(), fused->second.end(),
                       [&](const std::string& guid) { return library.per_element(guid); });
  }

  // The kernel of the TPC node at `step` for `params`: its cluster's, its fused chain's or its own.
  tk::InstantiateResult instantiate_node(size_t step, const tk::KernelParams& params) const {
    tk::KernelLibrary& library = tk::KernelLibrary::instance(target_.tpc_vector_bits, target_.tpc_prefetch_entries);
    const NodeDesc& node = graph_.node(order_[step]);
    const auto fused = epilogues_.find(order_[step].index);
    const auto cluster = clusters_.find(order_[step].index);
    return cluster != clusters_.end() ? library.instantiate_cluster(cluster->second, params)
           : fused != epilogues_.end() ? library.instantiate_fused(node.guid, params, fused->second)
                                       : library.instantiate(node.guid, params);
  }

  // A TPC node's record: its engine, and the GUIDs a fused chain or a cluster runs ("a+b+...",
  // a cluster's constants left out).
  void record_tpc_node(size_t step, const NodeDesc& node, recipe::NodeRecord& record) const {
    record.set_engine("tpc");
    const auto fused = epilogues_.find(order_[step].index);
    const auto cluster = clusters_.find(order_[step].index);
    if (fused != epilogues_.end()) {
      std::string guid = node.guid;
      for (const std::string& next : fused->second) guid += "+" + next;
      record.set_guid(guid);
    }
    if (cluster != clusters_.end()) {
      std::string guid;
      for (const tk::ClusterOp& op : cluster->second.ops)
        if (!op.operands.empty()) guid += (guid.empty() ? "" : "+") + op.guid;
      record.set_guid(guid);
    }
  }

  // A launch's program in the node's record: the first one's offset, then any other variant.
  static void record_program(recipe::NodeRecord& record, uint64_t offset, bool first) {
    if (first) {
      record.set_program_offset(offset);
    } else if (offset != record.program_offset() &&
               std::find(record.part_program_offsets().begin(), record.part_program_offsets().end(), offset) ==
                   record.part_program_offsets().end()) {
      record.add_part_program_offsets(offset);
    }
  }

  // A sliced consumer's kernel, instantiated for its whole tensors, and the index-space dim that
  // walks their rows: a chunk's launch covers that dim's indices for its rows, with the same
  // descriptors (so the launches after the first write no tensor address again).
  struct ConsumerPlan {
    tk::InstantiateResult inst;
    unsigned dim = 0;            // the index-space dim that walks the rows
    int64_t units_a_row = 1;     // what the pattern counts in a row: 1 (rows), or its elements (flat)
    int64_t units_a_step = 1;    // and an index covers
    int32_t index(uint64_t row) const {   // the first index at or after `row`
      return static_cast<int32_t>((static_cast<int64_t>(row) * units_a_row + units_a_step - 1) / units_a_step);
    }
  };

  // Whether the consumer's kernel is one launch whose index space walks the cut tensors' rows
  // linearly along one dim, each index its own rows (a row dim) or elements (a kernel that sees
  // the tensors flat), and every chunk boundary falls on an index boundary (then it is planned):
  // a launch over a chunk's index range reads and writes only the chunk's rows.
  bool plan_consumer(const GemmSlice& slice) {
    const NodeDesc& node = graph_.node(order_[slice.consumer_step]);
    tk::KernelParams params;
    for (TensorId t : node.inputs) params.inputs.push_back({graph_.tensor(t).dtype, graph_.tensor(t).shape, {}});
    for (TensorId t : node.outputs) params.outputs.push_back({graph_.tensor(t).dtype, graph_.tensor(t).shape, {}});
    params.scalars = node.params.scalars;
    ConsumerPlan plan{instantiate_node(slice.consumer_step, params)};
    if (!plan.inst.ok() || !plan.inst.parts.empty() || !plan.inst.scratch_bytes.empty()) return false;
    const tk::Instantiation& k = *plan.inst.inst;
    if (k.inputs.size() != node.inputs.size() || k.outputs.size() != node.outputs.size()) return false;
    std::optional<tk::AccessPatternDim> walk;
    std::optional<int64_t> unit;
    for (size_t t = 0; t < slice.cut.size(); ++t) {
      if (!slice.cut[t]) continue;
      const bool input = t < node.inputs.size();
      const size_t o = t - node.inputs.size();
      const tk::TensorAccessPattern& pattern = input ? k.input_patterns[t] : k.output_patterns[o];
      const bool flat = (input ? k.inputs[t] : k.outputs[o]).dims == 1;
      const unsigned along = flat ? 0 : 1;
      const int64_t tensor_unit = flat ? graph_.tensor(input ? node.inputs[t] : node.outputs[o]).shape[0] : 1;
      if ((walk && !(pattern[along] == *walk)) || (unit && *unit != tensor_unit)) return false;
      walk = pattern[along];
      unit = tensor_unit;
      for (unsigned d = 0; d < tk::kMaxDims; ++d)
        if (d != along && pattern[d].ispace_dim == walk->ispace_dim && pattern[d].a != 0) return false;
    }
    if (!walk || walk->a < 1 || walk->start_b != 0 || walk->end_b != walk->a - 1 || walk->ispace_dim >= tk::kMaxDims)
      return false;
    plan.dim = walk->ispace_dim;
    plan.units_a_row = *unit;
    plan.units_a_step = walk->a;
    if (k.ispace_geometry[plan.dim] != plan.index(slice.rows)) return false;
    for (uint32_t c = 1; c < slice.chunks; ++c)
      if (slice.chunk_begin(c) * plan.units_a_row % plan.units_a_step != 0) return false;
    consumer_plans_[slice.consumer_step] = std::move(plan);
    return true;
  }

  // One launch per chunk over every TPC, each waiting (on every TPC queue it uses) for the
  // GEMM's chunk it reads; the node's other waits come first, once per queue.
  graph::Result lower_sliced_consumer(size_t step, const NodeDesc& node, recipe::NodeRecord& record) {
    const size_t gemm = sliced_consumer_.at(step);
    const GemmSlice& slice = slices_.at(gemm);
    const ConsumerPlan& plan = consumer_plans_.at(step);
    record_tpc_node(step, node, record);
    std::vector<Relocation> tensors;
    for (TensorId t : node.inputs) tensors.push_back(relocation_of(t));
    for (TensorId t : node.outputs) tensors.push_back(relocation_of(t));
    record_program(record, place_program(*plan.inst.inst), true);
    uint32_t jobs = 0;
    unsigned rotation = tpc_turn_;
    skip_wait_on_ = static_cast<uint32_t>(gemm);
    for (uint32_t c = 0; c < slice.chunks; ++c) {
      const ChunkLaunch chunk{chunk_done_.at(gemm)[c], plan.dim, plan.index(slice.chunk_begin(c)),
                              plan.index(slice.chunk_begin(c) + slice.chunk_size(c))};
      const uint32_t launched = append_kernel(step, record, *plan.inst.inst, tensors, rotation, 0, &chunk);
      rotation = (rotation + launched) % target_.tpcs;
      jobs += launched;
    }
    skip_wait_on_ = kNoStep;
    tpc_turn_ = rotation;
    record.set_jobs(jobs);
    return graph::Result::success();
  }

  // ---- DMA ----
  graph::Result lower_dma(size_t step, const NodeDesc& node, recipe::NodeRecord& record) {
    if (plan_.is_view_step(static_cast<uint32_t>(step))) {
      record.set_engine("view");   // the output is planned on the input's bytes: no work, no jobs
      return graph::Result::success();
    }
    record.set_engine("dma");
    if (target_.dma_queues.empty()) {
      return graph::Result::error(graph::Status::InvalidArgument,
                                  "node '" + node.name + "': the target has no DMA queue for a copy");
    }
    // A large copy is spread over the DMA channels in contiguous pieces (whole cache lines), as
    // the real compiler spreads its copies over the DMA engines; each piece signals the node.
    const uint64_t bytes = tensor_bytes(graph_.tensor(node.inputs[0])).value_or(0);
    const uint64_t most = std::max<uint64_t>(1, bytes / std::max<uint64_t>(target_.dma_split_min_bytes, 1));
    const uint64_t pieces = std::min<uint64_t>(target_.dma_queues.size(), most);
    const uint64_t per = std::max<uint64_t>(align_up((bytes + pieces - 1) / pieces, kDefaultAlignment).value_or(bytes), 1);
    uint32_t jobs = 0;
    for (uint64_t offset = 0; jobs == 0 || offset < bytes; offset += per) {
      const uint64_t piece = std::min(per, bytes - offset);
      Relocation source = relocation_of(node.inputs[0]), destination = relocation_of(node.outputs[0]);
      source.addend += offset;
      destination.addend += offset;
      QueueProgram& queue = program(target_.dma_queues[(dma_turn_ + jobs) % target_.dma_queues.size()], false);
      ++jobs;
      wait_for_dependencies(queue, record);
      queue.dma_copy(source, destination, piece, sob_of(step));
    }
    record.set_jobs(jobs);
    dma_turn_ += jobs;
    return graph::Result::success();
  }

  // ---- TPC ----
  graph::Result lower_tpc(size_t step, const NodeDesc& node, recipe::NodeRecord& record) {
    tk::KernelParams params;
    for (TensorId t : node.inputs) params.inputs.push_back({graph_.tensor(t).dtype, graph_.tensor(t).shape, {}});
    for (TensorId t : node.outputs) params.outputs.push_back({graph_.tensor(t).dtype, graph_.tensor(t).shape, {}});
    params.scalars = node.params.scalars;
    tk::InstantiateResult inst = instantiate_node(step, params);
    if (!inst.ok()) {
      return graph::Result::error(graph::Status::InvalidArgument, "node '" + node.name + "': " + inst.message);
    }
    record_tpc_node(step, node, record);
    std::vector<Relocation> tensors;
    for (TensorId t : node.inputs) tensors.push_back(relocation_of(t));
    for (TensorId t : node.outputs) tensors.push_back(relocation_of(t));
    // Scratch (partials a node's parts pass on): the node's own, after the planned workspace.
    for (uint64_t bytes : inst.scratch_bytes) {
      tensors.push_back(Relocation{recipe::SECTION_WORKSPACE, 0, plan_.workspace_bytes + scratch_bytes_});
      scratch_bytes_ += align_up(std::max<uint64_t>(bytes, 1), kDefaultAlignment).value_or(bytes);
    }
    if (inst.parts.empty()) {
      record.set_program_offset(place_program(*inst.inst));
      const uint32_t launched = append_kernel(step, record, *inst.inst, tensors, tpc_turn_, 0);
      tpc_turn_ = (tpc_turn_ + launched) % target_.tpcs;
      record.set_jobs(launched);
      return graph::Result::success();
    }
    // A node of several launches (a tensor list, a reduction with a second pass): its parts in
    // order, each spread over the TPCs (a part too small for all of them starts where the previous
    // one ended, so small tensors do not queue on TPC 0); a part of a later phase first waits for
    // every launch of the earlier phases.
    uint32_t jobs = 0, jobs_before_phase = 0, phase = 0;
    unsigned rotation = tpc_turn_;
    for (const tk::KernelPart& part : inst.parts) {
      if (part.phase != phase) {
        phase = part.phase;
        jobs_before_phase = jobs;
      }
      std::vector<Relocation> part_tensors;
      for (uint32_t t : part.tensors) part_tensors.push_back(tensors.at(t));
      record_program(record, place_program(part.inst), jobs == 0);
      const uint32_t launched = append_kernel(step, record, part.inst, part_tensors, rotation, jobs_before_phase);
      rotation = (rotation + launched) % target_.tpcs;
      jobs += launched;
    }
    tpc_turn_ = rotation;
    record.set_jobs(jobs);
    return graph::Result::success();
  }

  // One kernel launch of node `step` over the TPCs, its command buffers on the TPC queues from
  // `first_tpc` on (wrapping); each queue first waits for the node's dependencies and, when
  // `own_jobs` > 0, for that many of the node's own launches, then for `chunk` (a sliced GEMM's
  // chunk the launch reads) if given. Returns the command buffers.
  uint32_t append_kernel(size_t step, const recipe::NodeRecord& record, const tk::Instantiation& k,
                         const std::vector<Relocation>& tensors, unsigned first_tpc, uint32_t own_jobs,
                         const ChunkLaunch* chunk = nullptr) {
    tpc::TpcLaunchSpec spec;
    const uint64_t program_offset = place_program(k);
    Relocation kernel{recipe::SECTION_PROGRAM, 0, program_offset};
    spec.kernel_address = kernel.placeholder();
    for (size_t i = 0; i < k.inputs.size(); ++i) spec.tensors.push_back(k.inputs[i].make(tensors[i].placeholder()));
    for (size_t i = 0; i < k.outputs.size(); ++i)
      spec.tensors.push_back(k.outputs[i].make(tensors[k.inputs.size() + i].placeholder()));
    spec.srf = k.srf;
    spec.index_space = k.ispace_geometry;
    if (chunk != nullptr) {
      spec.index_space[chunk->dim] = chunk->end - chunk->begin;
      spec.index_offset[chunk->dim] = chunk->begin;
    }
    spec.granule.fill(1);
    spec.tpcs = target_.tpcs;
    spec.icache_prefetch = true;
    const Relocation signal = Relocation::sync_object(sob_of(step));
    spec.sob_address = signal.placeholder();

    RegisterRelocations relocs;
    relocs[static_cast<uint16_t>(tc::kSmBaseAddressHigh)] = {signal, recipe::FIELD_HIGH32};
    relocs[static_cast<uint16_t>(tc::kQmDesc + tc::kDescSyncObjectAddr)] = {signal, recipe::FIELD_LOW32};
    for (size_t t = 0; t < tensors.size(); ++t) {
      const uint32_t base = tc::kQmDesc + static_cast<uint32_t>(t) * tc::kTensorStride;
      relocate_pair(relocs, base + tc::kTensorBaseAddrLow, base + tc::kTensorBaseAddrHigh, tensors[t]);
    }
    relocate_pair(relocs, tc::kQmDesc + tc::kDescKernelBaseAddressLow, tc::kQmDesc + tc::kDescKernelBaseAddressHigh,
                  kernel);
    relocate_pair(relocs, tc::kIcacheBaseAddressLow, tc::kIcacheBaseAddressHigh, kernel);
    // A TPC's first kernel of the recipe invalidates its caches (another recipe's code may have
    // been where this one's is); the later ones keep what the cache holds of the program image.
    for (unsigned t = 0; t < target_.tpcs; ++t)
      if (tpc_started_.count((t + first_tpc) % target_.tpcs) != 0) spec.keep_caches_tpcs |= 1u << t;
    const std::vector<tpc::TpcCommandBuffer> cbs = tpc::build_tpc_command_buffers(spec);
    for (const tpc::TpcCommandBuffer& cb : cbs) tpc_started_.insert((cb.tpc + first_tpc) % target_.tpcs);
    for (const tpc::TpcCommandBuffer& cb : cbs) {
      const auto queue_id = regs::make_queue(regs::QueueKind::Tpc, (cb.tpc + first_tpc) % target_.tpcs, 0);
      QueueProgram& queue = program(queue_id, false);
      // The QM descriptor set is storage until TPC_EXECUTE latches it, so the first partition's
      // descriptor writes go before the waits (they overlap the kernels still running), and what
      // the node before on this TPC left there is not written again.
      // ICACHE_BASE (below the QM set; nothing between them is written) is storage TPC_CMD reads.
      static_assert(tc::kIcacheBaseAddressLow < tc::kQmDesc);
      const RegisterRange descriptors{static_cast<uint16_t>(tc::kIcacheBaseAddressLow),
                                      static_cast<uint16_t>(tc::kQmDesc + tc::kDescSize)};
      const size_t trigger = first_register_write(cb.bytes, static_cast<uint16_t>(tc::kTpcCmd));
      queue.append({cb.bytes.begin(), cb.bytes.begin() + static_cast<std::ptrdiff_t>(trigger)}, relocs, descriptors);
      // A queue waits once per node for its dependencies, and once per phase for the node itself.
      QueueWaits& done = queue_waits_[queue_id];
      if (done.step != step) {
        wait_for_dependencies(queue, record);
        done = {step, 0};
      }
      if (own_jobs > done.own_jobs) {
        queue.wait_for(sob_of(step), static_cast<uint16_t>(own_jobs));
        done.own_jobs = own_jobs;
      }
      if (chunk != nullptr) queue.wait_for(chunk->done.sob, chunk->done.count);   // a sliced GEMM's chunk
      queue.append({cb.bytes.begin() + static_cast<std::ptrdiff_t>(trigger), cb.bytes.end()}, relocs, descriptors);
    }
    return static_cast<uint32_t>(cbs.size());
  }

  // The kernel's place in the program image (its first bundle; the image's header is just
  // before it), once per assembled variant.
  uint64_t place_program(const tk::Instantiation& k) {
    const auto found = program_offsets_.find(k.program.get());
    if (found != program_offsets_.end()) return found->second;
    const std::vector<uint8_t> image = tpc::program_to_binary(*k.program);
    // Bundles must start kProgramAlignment-aligned; the header sits in front of them.
    const uint64_t header = tpc::kProgramHeaderBytes;
    const uint64_t start = (program_image_.size() + header + kProgramAlignment - 1) / kProgramAlignment *
                               kProgramAlignment - header;
    program_image_.resize(start, 0);
    program_image_.insert(program_image_.end(), image.begin(), image.end());
    program_offsets_[k.program.get()] = start + header;
    return start + header;
  }

  const Graph& graph_;
  const CompileTarget& target_;
  const std::vector<NodeId>& order_;
  const MemoryPlan& plan_;
  const std::map<uint32_t, std::vector<std::string>>& epilogues_;
  const std::map<uint32_t, tk::ElementwiseCluster>& clusters_;
  const std::vector<TensorId>& untouched_persistent_;
  uint64_t graph_hash_;
  recipe::Recipe recipe_;
  std::map<uint32_t, uint32_t> persistent_index_;   // tensor index -> ordinal
  std::map<regs::QueueId, std::unique_ptr<QueueProgram>> programs_;
  std::map<const tpc::Program*, uint64_t> program_offsets_;
  std::vector<uint8_t> program_image_;
  size_t mme_turn_ = 0;
  // The TPC the next launch starts on: a launch too small for every TPC starts where the one
  // before ended, so independent small nodes run side by side instead of queueing on TPC 0.
  unsigned tpc_turn_ = 0;
  std::set<unsigned> tpc_started_;   // the TPCs that already run a kernel of this recipe
  struct QueueWaits {
    size_t step = SIZE_MAX;   // the node whose dependencies the queue last waited for
    uint32_t own_jobs = 0;    // and how many of that node's own launches
  };
  std::map<regs::QueueId, QueueWaits> queue_waits_;
  size_t dma_turn_ = 0;   // the DMA queue the next copy starts on (copies take turns)
  static constexpr uint32_t kNoStep = UINT32_MAX;
  std::map<size_t, GemmSlice> slices_;          // by the GEMM's step
  std::map<size_t, size_t> sliced_consumer_;    // consumer step -> its GEMM's step
  std::map<size_t, std::vector<Signal>> chunk_done_;   // GEMM step -> per chunk, the count that says it is done
  std::map<size_t, ConsumerPlan> consumer_plans_;      // by the consumer's step
  std::vector<std::vector<Signal>> signals_;    // per step: what its jobs add to, all done at these counts
  uint32_t extra_sobs_ = 0;
  uint32_t next_extra_sob_ = 0;                 // set in run(): after the start object
  uint32_t skip_wait_on_ = kNoStep;             // a dependency wait_for_dependencies leaves out
  uint64_t scratch_bytes_ = 0;   // the nodes' scratch so far, after the planned workspace
};

}  // namespace

std::string CompileTarget::describe() const {
  // fuse=2: chains and clusters (a recipe cached by a compiler that fused chains only says fuse=1,
  // so it is compiled again rather than replayed with other cycle counts). order=3: the engine
  // order, workspace reuse only behind waits and SRAM for the shortest-lived tensors first (order=2
  // had the first two; a recipe cached before them says neither). frame=2: the last job clears the
  // sync objects with posted messages (before, each waited for the one before it). kernels=2: bf16
  // ops computed in f32 run list-scheduled, and the streams prefetch up to 128 vectors ahead (a
  // recipe cached before holds the older kernels). kernels=3: dropout_bwd is a cluster op, bf16
  // softmax and layernorm rows run list-scheduled. kernels=4: softmax rows six a step, outer
  // reductions stream into the next column, the clip norm's scaling two vectors a step of one run.
  // kernels=5: a large embedding backward is five launches (its indices bucketed by row chunk),
  // gather moves 8 elements a step, bf16 dgamma / dbeta step four columns and split as f32's.
  // order=4: the engine order counts a fixed cost per launch. slice=R: GEMMs cut in chunks with
  // their consumers, as many as super-tiles of R rows take (0: none); slice2: the rows shared out
  // evenly among them.
  std::ostringstream s;
  s << "tpcs=" << tpcs << " vector=" << tpc_vector_bits << " prefetch=" << tpc_prefetch_entries << " mme=" << mme_queues.size() << " geometries=" << mme_geometries
    << " dma=" << dma_queues.size() << " sob=" << sob_base
    << "+" << sob_count << " mon=" << monitor_base << " fuse=" << (fuse_elementwise ? 2 : 0) << " order=4 frame=2 kernels=5 slice2 slice=" << mme_super_tile_rows << " sram=" << sram_bytes;
  return s.str();
}

graph::Result compile_graph(const Graph& graph, const CompileTarget& target, recipe::Recipe* recipe) {
  if (!tk::KernelLibrary::valid_vector_bits(target.tpc_vector_bits)) {
    return graph::Result::error(graph::Status::InvalidArgument,
                                "compile target: a TPC vector width of " + std::to_string(target.tpc_vector_bits) +
                                    " bits (the kernel library takes a power of two in " +
                                    std::to_string(tk::KernelLibrary::kMinVectorBits) + " .. " +
                                    std::to_string(tk::KernelLibrary::kMaxVectorBits) + ")");
  }
  graph::Result r = graph::validate(graph);
  if (!r.ok()) return r;
  try {
    // The validated graph, with its elementwise clusters and chains fused (or as it is).
    FusedGraph fused;
    if (target.fuse_elementwise) fused = fuse_elementwise(graph, target.tpc_vector_bits);
    const Graph& lowered = target.fuse_elementwise ? fused.graph : graph;
    const auto topological = target.fuse_elementwise ? std::optional(fused.order) : graph::topological_order(lowered);
    if (!topological) return graph::Result::error(graph::Status::Fail, "compiler: the graph has no order");
    const ScheduledGraph scheduled = schedule_nodes(lowered, engine_order(lowered, *topological));
    MemoryPlan plan;
    r = plan_memory(scheduled.graph, scheduled.order, &plan, kDefaultAlignment, target.sram_bytes, scheduled.holds,
                    find_copy_views(scheduled.graph, scheduled.order));
    if (!r.ok()) return r;
    return Lowering(scheduled.graph, target, scheduled.order, plan, fused.epilogues, fused.clusters,
                    fused.untouched_persistent, graph::structural_hash(graph))
        .run(recipe);
  } catch (const std::exception& e) {
    return graph::Result::error(graph::Status::Fail, std::string("compiler: ") + e.what());
  }
}

}  // namespace hpusim::synapse::compiler
