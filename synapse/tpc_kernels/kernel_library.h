// The TPC kernel library of the Synapse layer: kernels in hpusim's TPC assembly (kernels/*.s,
// compiled into the library as text and assembled on first use) and their host glue, in the shape
// of the real stack's glue code (GetKernelNames / GetGcDefinitions, see README.md):
//
//   KernelLibrary& lib = KernelLibrary::instance();
//   KernelParams p;
//   p.inputs = {{DType::F32, {150, 3, 4}}, {DType::F32, {1, 3, 1}}};   // dim 0 innermost
//   p.outputs = {{DType::F32, {150, 3, 4}}};
//   InstantiateResult r = lib.instantiate("add_fwd_f32", p);
//   if (!r.ok()) std::cerr << glue_status_name(r.status) << ": " << r.message;
//   // r.inst: program, index-space geometry, access patterns, SRFs, descriptor templates.
//
// Thread-safe: the assembled programs are cached under a mutex and shared (read-only).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arch/tpc/asm/program.h"
#include "arch/tpc/launch_context.h"
#include "arch/tpc/isa.h"

namespace hpusim::synapse::tpc_kernels {

using hpusim::tpc::DType;

inline constexpr unsigned kMaxDims = 5;

// One tensor as the graph compiler describes it to the glue. shape[0] is the innermost
// (contiguous) dim; 0 dims is a scalar (one element). strides (elements, one per dim) are optional:
// empty means dense; strides[0] must be 1.
struct TensorParams {
  DType dtype = DType::F32;
  std::vector<uint32_t> shape;
  std::vector<int64_t> strides;
};

struct KernelParams {
  std::vector<TensorParams> inputs;
  std::vector<TensorParams> outputs;
  std::vector<float> scalars;   // per GUID (README.md): fill_* takes {value}, layernorm_fwd {eps} ...
};

// The glue's answer (the real glue's gcapi status names in comments).
enum class GlueStatus : uint8_t {
  Success,                    // GLUE_SUCCESS
  UnsupportedGuid,            // GLUE_NODE_NOT_FOUND: no kernel of that name
  IncompatibleInputCount,     // GLUE_INCOMPATIBLE_INPUT_COUNT
  IncompatibleOutputCount,    // GLUE_INCOMPATIBLE_OUTPUT_COUNT
  IncompatibleInputSize,      // GLUE_INCOMPATIBLE_INPUT_SIZE: rank, empty dim, broadcast, strides
  IncompatibleOutputSize,     // GLUE_INCOMPATIBLE_OUTPUT_SIZE
  IncompatibleDataType,       // GLUE_INCOMPATIBLE_DATA_TYPE
  IncompatibleScalarParams,   // GLUE_UNSUPPORTED_LAYER_CONFIGURATION: wrong scalar parameter count
  InternalError,              // a kernel source did not assemble (a bug in the library)
};
const char* glue_status_name(GlueStatus status);   // "GLUE_INCOMPATIBLE_INPUT_COUNT", ...

// One dim of a tensor's access pattern: index-space step i of dim `ispace_dim` touches the
// tensor's elements a*i + start_b .. a*i + end_b (inclusive) along this dim. a == 0 is a
// broadcast dim (always start_b .. end_b).
struct AccessPatternDim {
  uint8_t ispace_dim = 0;
  int32_t a = 1;
  int32_t start_b = 0;
  int32_t end_b = 0;
  bool operator==(const AccessPatternDim& o) const {
    return ispace_dim == o.ispace_dim && a == o.a && start_b == o.start_b && end_b == o.end_b;
  }
};
using TensorAccessPattern = std::array<AccessPatternDim, kMaxDims>;

// How to build a tensor's descriptor: everything but the address, which the runtime supplies.
// A broadcast input has the output's size and stride 0 in the dims it broadcasts (dims >= 1).
struct DescriptorTemplate {
  DType dtype = DType::F32;
  uint8_t dims = 1;
  std::array<uint32_t, kMaxDims> size{};
  std::array<int64_t, kMaxDims> stride{};
  uint32_t padding = 0;
  tpc::TensorDescriptor make(uint64_t base) const;
};

struct Instantiation {
  std::string guid;
  std::string variant;   // the assembled variant, e.g. "binary OP_ADD f32 bcast-a0"
  std::shared_ptr<const tpc::Program> program;
  std::array<int32_t, kMaxDims> ispace_geometry{};   // dims beyond the rank are 1
  // Tensor descriptor numbers: inputs 0 .. n-1, then the outputs.
  std::vector<TensorAccessPattern> input_patterns;
  std::vector<TensorAccessPattern> output_patterns;
  std::vector<DescriptorTemplate> inputs;
  std::vector<DescriptorTemplate> outputs;
  std::array<uint32_t, 32> srf{};   // S0..S31 (fill: S0 = the value's f32 bits)

  // The launch of one core: descriptors at these base addresses (inputs then outputs) and the
  // core's slice of the index space.
  tpc::LaunchContext launch_context(const std::vector<uint64_t>& input_bases,
                                    const std::vector<uint64_t>& output_bases,
                                    const std::array<int32_t, kMaxDims>& ispace_offset,
                                    const std::array<int32_t, kMaxDims>& ispace_size) const;
};

// One kernel launch of a node instantiated as several (tensor_list.cpp, and reductions split
// across cores with a second pass): an instantiation over some of the node's tensors.
// `tensors[k]` is the node's tensor number (inputs 0 .. n-1, then the outputs, then the scratch
// tensors of InstantiateResult::scratch_bytes) of the part's descriptor k, which may describe
// that tensor with another shape of the same memory.
struct KernelPart {
  Instantiation inst;
  std::vector<uint32_t> tensors;
  uint32_t phase = 0;   // starts once every part of an earlier phase has finished (phases ascend)
};

struct InstantiateResult {
  GlueStatus status = GlueStatus::Success;
  std::string message;   // names the tensor and the problem ("input 1 (B): dim 0 size 3 ...")
  std::optional<Instantiation> inst;   // one launch (every GUID but the tensor-list ones)
  std::vector<KernelPart> parts;       // several launches, in order (inst is empty)
  // Device memory the parts pass between them (partial sums), per scratch tensor in bytes: the
  // compiler gives each node its own (f32 elements, so 4-byte aligned at least).
  std::vector<uint64_t> scratch_bytes;
  bool ok() const { return status == GlueStatus::Success; }
};

// One op of an elementwise cluster (KernelLibrary::instantiate_cluster): an f32 elementwise GUID
// over earlier values. Values 0 .. n-1 are the kernel's n inputs, value n + k the result of op k.
struct ClusterOp {
  std::string guid;
  std::vector<uint32_t> operands;   // as many as the GUID's inputs (a fill: none)
  std::vector<float> scalars;       // the GUID's scalar params (fill: the value; addcmul: value)
};
struct ElementwiseCluster {
  std::vector<ClusterOp> ops;       // in an order where every operand comes first
  std::vector<uint32_t> outputs;    // per kernel output, the value it holds (an op's result)
};

class KernelLibrary {
 public:
  static constexpr unsigned kDefaultVectorBits = 2048;   // every preset's TPC today
  static constexpr unsigned kMinVectorBits = 256, kMaxVectorBits = 16384;
  // How far ahead of its loads along dim 0 a streaming kernel prefetches (kernels/nest.inc): as far
  // as the library's prefetch budget (prefetch_budget()) allows over the inputs it streams, between
  // the two bounds. A TPC's share of the HBM needs that depth (Little's law): at 48 vectors a
  // one-input stream reached about 60 % of the HBM roofline, at the whole budget of 112 about 79 %.
  static constexpr unsigned kPrefetchAheadVectors = 128, kMinPrefetchAheadVectors = 8;
  // The depth a short-row reduction's steps keep in flight (short_reductions.cpp): deeper costs it
  // more bundles than it hides.
  static constexpr unsigned kShortRowPrefetchVectors = 48;
  // The TPC's prefetch-buffer entries (the preset's tpc.prefetch_entries, as the device reports it)
  // every built-in preset has; the library's streams keep an eighth of them free (for a row's
  // start and the statistics the layernorm backward prefetches).
  static constexpr unsigned kDefaultPrefetchEntries = 128;
  // Across short rows: the row at most this many rows on.
  static constexpr unsigned kMaxRowsAhead = 16;
  // The scheduled layernorm backward prefetches the row statistics (scalars) this many rows ahead.
  static constexpr unsigned kStatsRowsAhead = 4;
  // nll_loss: samples whose target (and forward, logp row) are prefetched ahead of the one loaded,
  // at most (within the prefetch budget).
  static constexpr unsigned kNllPrefetchSamples = 32;
  // embedding_fwd over rows of at most this many vectors is software-pipelined (embedding_rows.cpp):
  // groups of up to kEmbeddingGroupRows rows (as many as the vector registers and the prefetch
  // budget allow), each group's rows prefetched kEmbeddingRowsAhead groups before it is loaded, and
  // its indices kEmbeddingIndicesAhead groups before that; the SLM holds the indices of
  // kEmbeddingRowsAhead + 1 groups (256 bytes of the 1 KB every preset gives).
  static constexpr unsigned kEmbeddingRowVectors = 36;
  static constexpr unsigned kEmbeddingGroupRows = 16;
  static constexpr unsigned kEmbeddingRowsAhead = 3;
  static constexpr unsigned kEmbeddingIndicesAhead = 3;
  // embedding backward accumulates a step's rows in this much VLM (of the 80 KB every preset gives):
  // embedding_bwd.s and the buckets' accumulation (embedding_buckets.cpp) both.
  static constexpr uint32_t kEmbeddingBwdVlmBytes = 64 * 1024;
  // gather_fwd moves this many elements of dim 0 a step (scalar registers: an index and a value each).
  static constexpr unsigned kGatherStepElements = 8;
  // Softmax rows of at most this many vectors stay in registers (softmax_short.s).
  static constexpr uint32_t kShortRowVectors = 4;
  // Layernorm rows of at most this many f32 registers (bf16: half as many vectors) stay in
  // registers (layernorm_fwd_short.s).
  static constexpr uint32_t kShortRowRegisters = 12;
  // Binary ops with a bias row (one row broadcast over every outer dim) of at most this many
  // vectors keep it in registers (eltwise_binary_row.s).
  static constexpr uint32_t kBiasRowVectors = 12;
  // An elementwise cluster's inputs that are one row broadcast over every outer dim (a bias) are
  // read once into VLM when their rows, padded to four vectors, fit this many bytes together (every
  // preset's TPC has 80 KB of VLM).
  static constexpr uint32_t kVlmRowBytes = 32768;
  // Reductions over an outer dim at most this long read a step's inputs straight-line
  // (short_reductions.cpp) instead of reduce_outer.s's loop along the dim.
  static constexpr uint32_t kShortReduceLength = 8;
  unsigned prefetch_ahead(size_t streamed_inputs) const;
  // The prefetch-buffer entries the streams may hold at once; permute_rows.s prefetches this many
  // rows of one vector ahead of the copy.
  unsigned prefetch_budget() const { return prefetch_entries_ - prefetch_entries_ / 8; }
  static bool valid_vector_bits(unsigned bits);   // a power of two in kMin .. kMaxVectorBits

  // The kernels for a TPC whose vectors are `vector_bits` wide (the preset's tpc.vector_bits, as
  // the device reports it): the lane counts and byte steps the variants are assembled with.
  // std::invalid_argument unless valid_vector_bits.
  // `prefetch_entries`: the TPC's prefetch buffer, which the streams' lookahead fits.
  explicit KernelLibrary(unsigned vector_bits = kDefaultVectorBits,
                         unsigned prefetch_entries = kDefaultPrefetchEntries);
  // A process-wide library per vector width and prefetch buffer (its cache is shared).
  static KernelLibrary& instance(unsigned vector_bits = kDefaultVectorBits,
                                 unsigned prefetch_entries = kDefaultPrefetchEntries);

  unsigned vector_bits() const { return vector_bits_; }
  unsigned lanes_of(DType t) const;   // elements of type t in one vector

  // Every GUID, sorted.
  std::vector<std::string> guids() const;
  bool has_guid(const std::string& guid) const;
  // Each output element from the inputs' elements at its position alone (elementwise ops, casts,
  // where, the single-tensor optimizers; no random streams): a launch over a block of the
  // tensors' rows gives exactly those rows' values (the compiler's slicing relies on it).
  bool per_element(const std::string& guid) const;
  // The tensor-list GUIDs (fused_adamw_f32, fused_sgd_f32, fused_clip_norm_f32 ...): one node over
  // a list of tensors, instantiated as several launches (InstantiateResult::parts).
  static bool is_tensor_list(const std::string& guid);
  // A tensor-list optimizer's node layout: input 0 and output 0 are the state, then each list
  // entry has `per_input` inputs and `per_output` outputs (param first). Without the state output
  // the node updates its entries only. nullopt for other GUIDs (and fused_clip_norm_f32).
  struct OptimizerLayout {
    size_t per_input = 0, per_output = 0;
  };
  static std::optional<OptimizerLayout> optimizer_layout(const std::string& guid, const std::vector<float>& scalars);

  // GetGcDefinitions: validates params against the GUID and builds the instantiation (assembling
  // the kernel variant on first use).
  InstantiateResult instantiate(const std::string& guid, const KernelParams& params);

  // Fusion: the kernel of `guid` with the unary elementwise kernels `then` applied to its result
  // in registers, in order, before the store: one launch instead of several, no intermediate
  // tensors, the same values (every op rounds to the dtype as it does alone). `params` are the
  // producer's inputs with the last kernel's output. can_fuse(producer, unary): the producer is a
  // binary or unary elementwise kernel and `unary` a unary elementwise kernel of its dtype.
  InstantiateResult instantiate_fused(const std::string& guid, const KernelParams& params,
                                      const std::vector<std::string>& then);
  bool can_fuse(const std::string& producer, const std::string& unary) const;

  // Elementwise clusters (the compiler's fusion.h): a DAG of f32 elementwise ops as one kernel that
  // loads each input once, keeps every intermediate in registers and stores only the outputs.
  // Each op runs the instruction sequence its own kernel runs, so the values are bit-identical to
  // launching the ops one by one. can_cluster: `guid` is an f32 binary, unary, backward, ternary
  // (addcmul / addcdiv) or fill kernel. A fill op is a constant (one register, set once per core).
  // instantiate_cluster: `params` hold the kernel's inputs and outputs (at most 16 tensors), every
  // output of one shape, every input of it or broadcast to it along dims >= 1 or one element.
  bool can_cluster(const std::string& guid) const;
  InstantiateResult instantiate_cluster(const ElementwiseCluster& cluster, const KernelParams& params);
  // The GUID's own kernel file, never the list-scheduled cluster of one instantiate() picks for a
  // long f32 elementwise op or a bf16 op computed in f32 (instantiate_scheduled_single); the tests
  // compare the two bit for bit. (instantiate_cluster takes such a bf16 op alone too: bf16 tensors,
  // none of one element; a chain of bf16 ops would skip the rounding after each.)
  InstantiateResult instantiate_own_kernel(const std::string& guid, const KernelParams& params) {
    return instantiate_impl(guid, params, {}, true);
  }
  // The vector registers the cluster's kernel needs for values (inputs one element wide take one,
  // the others two: a step is two vectors); at most kClusterRegisters. nullopt: a malformed cluster.
  std::optional<unsigned> cluster_registers(const ElementwiseCluster& cluster, const KernelParams& params) const;
  static constexpr unsigned kClusterRegisters = 25;

  // Number of kernel variants assembled so far (for tests of the cache).
  size_t assembled_count() const;

  // The assembly text of a variant (the glue's prelude followed by its .include of the kernel
  // file) and the assembler over the embedded sources; for tests and tools.
  static std::optional<std::string> embedded_source(const std::string& name);

  struct KernelDef;         // kernel_library.cpp
  struct ColumnReduction;   // split_reductions.cpp

 private:
  // kernel_file: the GUID's kernel file even where the glue would write a scheduled body.
  InstantiateResult instantiate_batch3(const KernelDef& def, const KernelParams& params, bool kernel_file = false,
                                       bool f32_partials = false);
  bool scheduled_layernorm_bwd(const KernelDef& def, const KernelParams& params, bool kernel_file) const;
  InstantiateResult instantiate_tensor_list(const std::string& guid, const KernelParams& params);   // tensor_list.cpp
  // split_reductions.cpp: layernorm_bwd_gamma_beta_f32 over row chunks (row_chunks.h), then the
  // partials summed (nullopt: not split).
  std::optional<InstantiateResult> instantiate_split_gamma_beta(const std::string& guid, const KernelParams& params);
  // reduce_sum / reduce_mean_fwd_f32 over dim 0 into one element, over chunks of the row, then the
  // partials reduced (row_chunks.h; nullopt: not split).
  std::optional<InstantiateResult> instantiate_split_dim0_reduction(const std::string& guid, const KernelParams& params);
  // reduce_sum / mean / max / min over dim 1 of [n, rows] (f32, bf16) with few outputs (a bias
  // gradient): the rows in chunks, then the partials reduced in chunk order (row_chunks.h; both
  // phases instantiate_column_reduction; nullopt: not split).
  std::optional<InstantiateResult> instantiate_split_outer_reduction(const std::string& guid, const KernelParams& params);
  InstantiateResult instantiate_column_reduction(const std::string& guid, const ColumnReduction& reduction);
  // short_reductions.cpp: f32 reductions over an outer dim of at most kShortReduceLength, several
  // rows a step, bit-identical to reduce_outer.s (nullopt: not such a node).
  std::optional<InstantiateResult> instantiate_short_outer_reduction(const std::string& guid, const KernelParams& params);
  // paired_rows.cpp: softmax / log_softmax and their backward over f32 rows of one or two whole
  // embedding_buckets.cpp: embedding_bwd_f32 / _bf16 in five launches (the indices bucketed by
  // chunk of rows, then each chunk's rows accumulated from its list), where embedding_bwd.s would
  // walk every index for many steps (nullopt: the one launch).
  std::optional<InstantiateResult> instantiate_bucketed_embedding_bwd(const std::string& guid, const KernelParams& params);
  // vectors, two rows a step (nullopt: not such a node).
  std::optional<InstantiateResult> instantiate_paired_rows(const std::string& guid, const KernelParams& params);
  // row_reductions.cpp: reductions over dim 0 of short f32 / bf16 rows, several rows a step,
  // list-scheduled, bit-identical to reduce_dim0.s (nullopt: not such a node).
  std::optional<InstantiateResult> instantiate_row_reduction(const std::string& guid, const KernelParams& params);
  // One f32 elementwise op of more than one instruction over dense tensors of one shape, as a
  // cluster of one (elementwise_cluster.cpp): its body list-scheduled, two vectors a step.
  std::optional<InstantiateResult> instantiate_scheduled_single(const std::string& guid, const KernelParams& params);
  // layernorm over short f32 rows, list-scheduled (layernorm_rows.cpp): the forward two rows of
  // whole vectors a step, or k rows narrower than a vector a vector; the backward's narrow rows
  // (others: instantiate_batch3 schedules one row a step). Bit-identical to the short kernels.
  std::optional<InstantiateResult> instantiate_scheduled_layernorm(const std::string& guid, const KernelParams& params);
  // layernorm_bwd_f32's dx over rows narrower than a vector, several rows a vector (layernorm_rows.cpp).
  std::optional<InstantiateResult> instantiate_narrow_layernorm_bwd(const std::string& guid, const KernelParams& params);
  // `f32_partials`: layernorm_bwd_gamma_beta_bf16 storing its sums in f32, unrounded (two f32
  // vectors a bf16 step), for a split's partials (split_reductions.cpp).
  InstantiateResult instantiate_impl(const std::string& guid, const KernelParams& params,
                                     const std::vector<const KernelDef*>& epilogue, bool kernel_file = false,
                                     bool f32_partials = false);
  // `inst` with the program of `source` (assembled once, cached); InternalError naming `key` when
  // it does not assemble (a bug in the library).
  InstantiateResult assembled(Instantiation inst, const std::string& source, const std::string& key);
  std::shared_ptr<const tpc::Program> program_for(const std::string& variant_source,
                                                  const std::string& key, std::string* error);
  // ".equ F32_LANES ..\n.equ VECTOR_BYTES ..\n": every variant's width constants, and the nest's
  // PREFETCH_ROW / PREFETCH_STEP macros (kernels/nest.inc) over the input tensors `prefetched`
  // (empty: no prefetching) for rows of `row_vectors` vectors: a row's start prefetches at most
  // that many, and a row no longer than kPrefetchAheadVectors needs no prefetch per vector. A
  // kernel stepping `unroll` vectors per index-space step (LANES covers them) prefetches each.
  // With `step_lines`, PREFETCH_STEP stays empty and its instructions (one a line) go there, for a
  // list-scheduled body to issue beside its own. `reserved_entries` of the prefetch budget are the
  // body's own (a stream it prefetches itself) and not shared among `prefetched`.
  std::string width_prelude(const std::vector<unsigned>& prefetched = {}, uint32_t row_vectors = UINT32_MAX,
                            unsigned unroll = 1, std::vector<std::string>* step_lines = nullptr,
                            unsigned reserved_entries = 0) const;
  unsigned vector_bits_;
  unsigned prefetch_entries_;
  std::vector<std::string> guid_list_;
  std::map<std::string, const KernelDef*> defs_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const tpc::Program>> cache_;
};

// ---- Splitting the index space among cores ----

struct CoreSlice {
  std::array<int32_t, kMaxDims> offset{};
  std::array<int32_t, kMaxDims> size{};
};

// The launch builder's rule (tpc::partition_index_space, what the compiler's launches use): split
// the outermost dim (4 down to 0) whose size is >= cores into `cores` contiguous chunks, sizes
// differing by at most one (the first ones larger). If no dim is that large, split the largest dim
// (the innermost of equals) into one-step chunks: fewer slices than cores. Every slice is
// non-empty; a geometry with a 0 dim gives no slices. At most regs::kMaxTpcEngines cores
// (std::invalid_argument).
std::vector<CoreSlice> partition_index_space(const std::array<int32_t, kMaxDims>& geometry,
                                             unsigned cores);

// The elements of one tensor dim that a slice touches by its access pattern: [first, last]
// (clipped to nothing else; may pass the tensor's size, the accessors pad there).
std::pair<int64_t, int64_t> touched_range(const AccessPatternDim& pattern, const CoreSlice& slice);

}  // namespace hpusim::synapse::tpc_kernels
