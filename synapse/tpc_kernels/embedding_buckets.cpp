// embedding_bwd by buckets, three launches (README.md, "Embedding backward"):
//  0. prep (every core): per index n its bucket's counter address (the chunk of R grad_weight rows
//     it falls in, or a dummy for an index outside 0 .. V-1 or equal to padding_idx) and its entry
//     (n << RB | its row within the chunk), vector by vector;
//  1. bucket (one core): the entries appended to their chunk's list in index order, the counters in
//     SLM; then each list's length at its head;
//  2. accumulate (every core): a step owns VB vectors of the embedding dim of one chunk's R rows,
//     accumulates its list's grad vectors into VLM in f32 in list order and writes the rows out
//     (rounded once to bf16). The grad vectors are prefetched A entries ahead of their use; the
//     entries in between wait in an SLM ring.
// embedding_bwd.s walks every index for every (vector, chunk) step: a 4096 x 768 table's 192 steps
// read 4096 indices each. Here each index is read once to bucket it and once per vector block.
// Each grad_weight element still gets its additions in the indices' order: the same bits.
#include <algorithm>
#include <functional>
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// A chunk's rows accumulate in this much VLM (of the 80 KB every preset gives), as in embedding_bwd.s.
constexpr uint32_t kAccumulatorBytes = 64 * 1024;
// The bucket counters live in SLM (1 KB on every preset): one per chunk and a dummy.
constexpr uint32_t kMaxChunks = 240;
// Scratch for the lists (a chunk's list holds up to every index): beyond this, embedding_bwd.s.
constexpr uint64_t kMaxListElements = uint64_t{64} << 20;
// The one-launch kernel is the faster below this many (vector, chunk) steps of it.
constexpr uint64_t kMinOldSteps = 16;

unsigned log2_of(uint32_t power_of_two) {
  unsigned k = 0;
  while ((1u << k) < power_of_two) ++k;
  return k;
}

std::string label_last(std::vector<std::string> bundles, const std::string& label) {
  bundles.back() = label + ": " + bundles.back();
  std::string text;
  for (const std::string& b : bundles) text += "        " + b + "\n";
  return text;
}

// Phase 0: tensors 0 indices [N] (i32), 1 counter addresses [N], 2 entries [N]. SRF: S0 = V,
// S1 = padding_idx, S2 = the dummy counter's address.
std::string prep_source(uint32_t rb, bool has_pad, const std::string& prelude) {
  std::vector<std::string> b = {"ld_tnsr V0, I2, 0",
                                "iget_dim S16, I2 dim=0",
                                "lane_id.i32 V1",
                                "add.i32 V1, V1, S16",
                                "cmp.lt.u32 VP1, V0, S0"};
  if (has_pad) b.insert(b.end(), {"cmp.ne.i32 VP2, V0, S1", "pand VP1, VP1, VP2"});
  b.insert(b.end(), {"shr.u32 V2, V0, " + std::to_string(rb), "shl.i32 V2, V2, 2", "sel.i32 V2, V2, S2, VP1",
                     "shl.i32 V1, V1, " + std::to_string(rb), "and.i32 V3, V0, " + std::to_string((1u << rb) - 1),
                     "or.i32 V1, V1, V3", "st_tnsr I2, 1, V2", "st_tnsr I2, 2, V1"});
  std::ostringstream src;
  src << prelude << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        NEST_BEGIN\n"
      << schedule::loop_body(schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency))
      << "        NEST_END\n";
  return src.str();
}

// Phase 1: tensors 0 counter addresses [1, N] (padded with the dummy's), 1 entries [1, N], 2 lists
// [C x Lp]. SRF: S0 = ceil(N / 2), S1 = C, S2 = Lp. A counter holds its list's next position
// (flat); the dummy's is past the lists' end, so its entries land nowhere. Two indices a pass: the
// second's counter is read with the first's, and takes the first's update when they share a chunk.
std::string bucket_source(unsigned ahead) {
  const std::vector<std::string> walk = {
      "ld_tnsr_s S20, I5, 0",  "ld_tnsr_s S21, I5, 1",     "iadd_dim I5, 1 dim=1",   "ld_tnsr_s S24, I5, 0",
      "ld_tnsr_s S25, I5, 1",  "iadd_dim I5, 1 dim=1",     "prefetch I6, 0",         "prefetch I6, 1",
      "iadd_dim I6, 1 dim=1",  "prefetch I6, 0",           "prefetch I6, 1",         "iadd_dim I6, 1 dim=1",
      "ld_slm S22, S20",       "ld_slm S26, S24",          "add.i32 S23, S22, 1",    "cmp.eq.i32 SP8, S24, S20",
      "sel S26, S23, S26, SP8", "add.i32 S27, S26, 1",     "st_slm S20, S23",        "st_slm S24, S27",
      "imov_dim I3, S22 dim=0", "st_tnsr_s I3, 2, S21",    "imov_dim I3, S26 dim=0", "st_tnsr_s I3, 2, S25"};
  std::ostringstream src;
  src << "        ispace_size I1\n        iget_dim S8, I1 dim=0\n        cmp.eq.i32 SP1, S8, 0\n"
      << "        jmp done @SP1\n"
      // The counters: chunk c's list starts at c * Lp, its length at the head.
      << "        mov S8, 0\n        mov S9, 1\n        mov S10, 0\n        add.i32 S11, S1, 1\n"
      << "        loop S10, S11, init_end\n        st_slm S8, S9; add.i32 S9, S9, S2\n"
      << "init_end: add.i32 S8, S8, 4\n"
      << "        imov I6, 0\n        mov S10, 0\n        mov S11, " << ahead << "\n"
      << "        loop S10, S11, ahead_end\n        prefetch I6, 0\n"
      << "ahead_end: prefetch I6, 1; iadd_dim I6, 1 dim=1\n"
      << "        imov I5, 0\n        imov I3, 0\n        mov S10, 0\n        loop S10, S0, walk_end\n"
      << label_last(schedule::list_schedule(walk, "", schedule::kPrefetchHitLatency), "walk_end")
      // Each list's length at its head: its counter less its first position.
      << "        mov S8, 0\n        mov S9, 0\n        mov S10, 0\n        loop S10, S1, count_end\n"
      << "        ld_slm S22, S8; imov_dim I3, S9 dim=0\n        sub.i32 S22, S22, S9\n"
      << "        sub.i32 S22, S22, 1\n        st_tnsr_s I3, 2, S22; add.i32 S9, S9, S2\n"
      << "count_end: add.i32 S8, S8, 4\n"
      << "done:   halt\n";
  return src.str();
}

struct AccumulateShape {
  bool bf16;
  unsigned lanes, vector_bytes, vb, rb, ring, lists_ahead;
};

// Phase 2: tensors 0 grad [D, N], 1 lists [1, C x Lp], 2 grad_weight [D, V]; index space
// {blocks of VB vectors of D, chunks}. SRF: S0 = Lp, S1 = R, S2 = VB x lanes, S7 = C x Lp (past
// the lists: a step that does not exist reads a length of 0 there).
// A core's steps run chunk by chunk within a block, and each step prepares the next while it runs:
// the next list's length and first entries are read at its start, and the next step's first A
// entries (their grad vectors prefetched, the entries into the ring) are read before its rows
// go out. So a step does not wait a memory latency for its list, and its first grad vectors
// arrive while the previous rows are written.
// Registers: I4 the next entry read ahead, I6 the lists' prefetch, I2 the next list's, I5 the grad
// prefetch, I3 the grad load, I7 the write-out. S20 / S22 the chunk / block (S13 the first chunk),
// S24 the list, S27 its length, S25 the first row, S31 the block's first element of D; the next
// step's: S18 list, S19 length, S32 first row, S29 first element (the prologue's).
// S28 the ring's slot; S3..S6 a row's accumulators; S17 / S30 inner loops.
std::string accumulate_source(const AccumulateShape& s) {
  const unsigned w = s.bf16 ? 2 : 1;                 // f32 accumulators per grad vector
  const unsigned row_bytes = s.vb * w * s.vector_bytes;
  const std::string lanes = std::to_string(s.lanes), vbytes = std::to_string(s.vector_bytes);
  const auto acc_addr = [](unsigned a) { return "S" + std::to_string(3 + a); };
  // Entry j + A: its grad vectors prefetched, the entry into the ring (predicated past the list).
  const auto ahead = [&](const std::string& block) {
    std::vector<std::string> b = {"ld_tnsr_s S8, I4, 1 @SP6", "iadd_dim I4, 1 dim=1", "prefetch I6, 1 @SP7",
                                  "iadd_dim I6, 1 dim=1",     "shr.u32 S9, S8, " + std::to_string(s.rb),
                                  "imov_dim I5, S9 dim=1",    "imov_dim I5, " + block + " dim=0"};
    for (unsigned u = 0; u < s.vb; ++u) {
      if (u) b.push_back("iadd_dim I5, " + lanes + " dim=0");
      b.push_back("prefetch I5, 0 @SP6");
    }
    b.insert(b.end(), {"st_slm S28, S8", "add.i32 S28, S28, 4", "and.i32 S28, S28, " + std::to_string(4 * s.ring - 1)});
    return b;
  };
  // Entry j: its grad vectors added to its row's accumulators.
  std::vector<std::string> use = {"ld_slm S10, S28",
                                  "shr.u32 S11, S10, " + std::to_string(s.rb),
                                  "and.i32 S3, S10, " + std::to_string((1u << s.rb) - 1),
                                  "shl.i32 S3, S3, " + std::to_string(log2_of(row_bytes)),
                                  "imov_dim I3, S11 dim=1",
                                  "imov_dim I3, S31 dim=0"};
  for (unsigned a = 1; a < s.vb * w; ++a)
    use.push_back("add.i32 " + acc_addr(a) + ", S3, " + std::to_string(a * s.vector_bytes));
  for (unsigned u = 0; u < s.vb; ++u) {
    if (u) use.push_back("iadd_dim I3, " + lanes + " dim=0");
    const std::string g = "V" + std::to_string(w * u), g2 = "V" + std::to_string(w * u + 1);
    if (s.bf16) {
      const std::string raw = "V" + std::to_string(20 + u);
      use.insert(use.end(), {"ld_tnsr " + raw + ", I3, 0", "convert.bf16.f32 " + g + ", " + raw + " part=0",
                             "convert.bf16.f32 " + g2 + ", " + raw + " part=1"});
    } else {
      use.push_back("ld_tnsr " + g + ", I3, 0");
    }
  }
  // Every accumulator read before any is written: the schedule keeps VLM stores after the VLM
  // loads written before them (and loads after earlier stores), so this order lets them overlap.
  const auto each_accumulator = [&](const std::function<std::string(const std::string&, const std::string&)>& line) {
    for (unsigned a = 0; a < s.vb * w; ++a) use.push_back(line("V" + std::to_string(10 + a), acc_addr(a)));
  };
  each_accumulator([](const std::string& acc, const std::string& addr) { return "ld_vlm.f32 " + acc + ", " + addr; });
  for (unsigned a = 0; a < s.vb * w; ++a)
    use.push_back("add.f32 V" + std::to_string(10 + a) + ", V" + std::to_string(10 + a) + ", V" + std::to_string(a));
  each_accumulator([](const std::string& acc, const std::string& addr) { return "st_vlm " + addr + ", " + acc; });
  // The prologue of the step whose list length is S19 and block S29 (entries 0 .. A-1).
  std::vector<std::string> prologue = {"cmp.lt.i32 SP6, S17, S19", "cmp.lt.i32 SP7, S17, S16"};
  for (const std::string& line : ahead("S29")) prologue.push_back(line);
  // The step's entries (entry j + A read ahead, where it exists).
  std::vector<std::string> main = {"cmp.lt.i32 SP6, S17, S15", "cmp.lt.i32 SP7, S17, S14"};
  main.insert(main.end(), use.begin(), use.end());
  for (const std::string& line : ahead("S31")) main.push_back(line);
  // A row of the chunk out (bf16: each vector rounded once from its two halves), its
  // accumulators cleared for the next step.
  std::vector<std::string> out = {"imov_dim I7, S31 dim=0"};
  for (unsigned u = 0; u < s.vb; ++u) {
    if (u) out.push_back("iadd_dim I7, " + lanes + " dim=0");
    const std::string lo = "V" + std::to_string(w * u), hi = "V" + std::to_string(w * u + 1);
    const std::string next = "add.i32 S12, S12, " + vbytes;
    out.insert(out.end(), {"ld_vlm.f32 " + lo + ", S12", "st_vlm S12, V30", next});
    if (s.bf16)
      out.insert(out.end(), {"ld_vlm.f32 " + hi + ", S12", "st_vlm S12, V30", next,
                             "convert.f32.bf16 V" + std::to_string(20 + u) + ", " + lo + " part=0",
                             "convert.f32.bf16 V" + std::to_string(20 + u) + ", " + hi + " part=1",
                             "st_tnsr I7, 2, V" + std::to_string(20 + u)});
    else
      out.push_back("st_tnsr I7, 2, " + lo);
  }
  out.push_back("iadd_dim I7, 1 dim=1");

  const unsigned accumulators = (1u << s.rb) * s.vb * w;
  const std::string P = std::to_string(s.lists_ahead), A = std::to_string(s.ring);
  // The list at S18: its length into S19, its first P entries prefetched (I2 past them).
  const std::string read_list = "        imov I2, 0\n        imov_dim I2, S18 dim=1\n        ld_tnsr_s S19, I2, 1\n"
                                "        iadd_dim I2, 1 dim=1\n        mov S17, 0\n        mov S30, " + P + "\n"
                                "        loop S17, S30, lists_end_%\n"
                                "lists_end_%: prefetch I2, 1; iadd_dim I2, 1 dim=1\n";
  // The prologue of the step read_list read, for block S29: I4 at its first entry, I6 past the
  // prefetched ones.
  const std::string run_prologue = "        imov I4, 0\n        imov_dim I4, S18 dim=1\n        iadd_dim I4, 1 dim=1\n"
                                   "        imov I6, I2\n        imov I5, 0\n        sub.i32 S16, S19, " + P + "\n"
                                   "        mov S17, 0\n        mov S30, " + A + "\n        loop S17, S30, prologue_end_%\n" +
                                   label_last(schedule::list_schedule(prologue, "", schedule::kPrefetchHitLatency),
                                              "prologue_end_%");
  const auto numbered = [](std::string text, char k) {
    for (size_t at = text.find('%'); at != std::string::npos; at = text.find('%')) text[at] = k;
    return text;
  };
  std::ostringstream src;
  src << "        ispace_offset I0\n        ispace_size I1\n"
      << "        iget_dim S13, I0 dim=1\n        iget_dim S21, I1 dim=1\n        add.i32 S21, S21, S13\n"
      << "        iget_dim S22, I0 dim=0\n        iget_dim S23, I1 dim=0\n        add.i32 S23, S23, S22\n"
      << "        cmp.ge.i32 SP1, S13, S21\n        cmp.ge.i32 SP2, S22, S23\n        por SP1, SP1, SP2\n"
      << "        jmp done @SP1\n"
      << "        mov.f32 V30, 0.0\n        mov S28, 0\n        imov I3, 0\n"
      // The first step's list and prologue, the accumulators cleared meanwhile.
      << "        mul.i32 S18, S13, S0\n        mul.i32 S29, S22, S2\n        mul.i32 S32, S13, S1\n"
      << numbered(read_list, '0')
      << "        mov S12, 0\n        mov S17, 0\n        mov S30, " << accumulators << "\n"
      << "        loop S17, S30, clear_end\n"
      << "clear_end: st_vlm S12, V30; add.i32 S12, S12, " << vbytes << "\n"
      << numbered(run_prologue, '0')
      << "        loop S22, S23, block_end\n"
      << "        mov S20, S13\n"
      << "        loop S20, S21, chunk_end\n"
      // This step: the one the last prologue prepared.
      << "        mov S24, S18\n        mov S27, S19\n        mov S25, S32\n        mov S31, S29\n"
      // The next step: the next chunk of the block, else the block after's first chunk, else none
      // (its list past the lists' end: length 0).
      << "        add.i32 S33, S20, 1\n        mov S34, S22\n        cmp.ge.i32 SP3, S33, S21\n"
      << "        mov S33, S13 @SP3\n        add.i32 S34, S34, 1 @SP3\n"
      << "        mul.i32 S18, S33, S0\n        mul.i32 S29, S34, S2\n        mul.i32 S32, S33, S1\n"
      << "        cmp.ge.i32 SP3, S34, S23\n        mov S18, S7 @SP3\n"
      << numbered(read_list, '1')
      << "        sub.i32 S15, S27, " << A << "\n        sub.i32 S14, S15, " << P << "\n"
      << "        imov I4, 0\n        imov_dim I4, S24 dim=1\n        iadd_dim I4, " << A + "" << " dim=1\n"
      << "        iadd_dim I4, 1 dim=1\n"
      << "        mov S17, 0\n        loop S17, S27, main_end\n"
      << label_last(schedule::list_schedule(main, "", schedule::kPrefetchHitLatency), "main_end")
      << numbered(run_prologue, '1')
      << "        imov I7, 0\n        imov_dim I7, S25 dim=1\n        mov S12, 0\n"
      << "        mov S17, 0\n        mov S30, " << (1u << s.rb) << "\n        loop S17, S30, out_end\n"
      << label_last(schedule::list_schedule(out, "", 4), "out_end")
      << "chunk_end: nop\n"
      << "block_end: nop\n"
      << "done:   halt\n";
  return src.str();
}

TensorParams i32(std::vector<uint32_t> shape) { return TensorParams{DType::I32, std::move(shape), {}}; }

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_bucketed_embedding_bwd(const std::string& guid,
                                                                                   const KernelParams& p) {
  if (guid != "embedding_bwd_f32" && guid != "embedding_bwd_bf16") return std::nullopt;
  // Errors, and the shapes this path does not take, are the one-launch kernel's.
  InstantiateResult single = instantiate_impl(guid, p, {});
  if (!single.ok()) return single;
  const bool bf16 = guid == "embedding_bwd_bf16";
  const DType io = bf16 ? DType::BF16 : DType::F32;
  const TensorParams &grad = p.inputs[0], &indices = p.inputs[1], &table = p.outputs[0];
  for (const TensorParams* t : {&grad, &indices, &table})
    if (flattened(*t).shape.size() > 1) return std::nullopt;   // dense tensors only
  const uint64_t n = elements(indices);
  const uint32_t d = table.shape[0], v = table.shape[1];
  const unsigned lanes = lanes_of(io), vector_bytes = vector_bits_ / 8, w = bf16 ? 2 : 1;
  const uint32_t vectors_d = (d + lanes - 1) / lanes;
  const uint64_t old_rows = kAccumulatorBytes / (w * vector_bytes);
  if (n == 0 || uint64_t{vectors_d} * ((v + old_rows - 1) / old_rows) < kMinOldSteps) return std::nullopt;
  // VB vectors of D a step: as many as D has, up to 4 (bf16 2: the accumulators' addresses take a
  // register each), while the chunks' counters fit SLM.
  unsigned vb = 0, rb = 0;
  uint32_t chunks = 0;
  for (unsigned k = bf16 ? 2 : 4; k >= 1 && vb == 0; k /= 2) {
    if (k > 1 && k > vectors_d) continue;
    const uint32_t rows = kAccumulatorBytes / (k * w * vector_bytes);
    const uint32_t c = (v + rows - 1) / rows;
    if (c <= kMaxChunks) vb = k, rb = log2_of(rows), chunks = c;
  }
  if (vb == 0 || n >= (uint64_t{1} << (31 - rb))) return std::nullopt;
  const uint64_t list_length = n + 1;   // the length, then up to every index
  if (uint64_t{chunks} * list_length > kMaxListElements) return std::nullopt;
  const uint32_t rows = 1u << rb, blocks = (vectors_d + vb - 1) / vb;
  const uint32_t n32 = static_cast<uint32_t>(n), lists = static_cast<uint32_t>(chunks * list_length);
  const bool has_pad = !p.scalars.empty();
  int32_t pad = has_pad ? static_cast<int32_t>(p.scalars[0]) : 0;
  if (pad < 0) pad += static_cast<int32_t>(v);   // PyTorch's negative padding_idx
  const uint32_t scratch = 3;                    // addresses, entries, lists
  const auto whole = [](const std::array<uint32_t, kMaxDims>& size) {
    return pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(size[0]) - 1}, size, true);
  };
  InstantiateResult result;

  // Phase 0: every index's counter address and entry, a vector of indices a step.
  {
    const unsigned il = lanes_of(DType::I32);
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {static_cast<int32_t>((n + il - 1) / il), 1, 1, 1, 1};
    const TensorAccessPattern step = pattern_of(AccessPatternDim{0, static_cast<int32_t>(il), 0, static_cast<int32_t>(il) - 1},
                                                padded({n32}), false);
    inst.inputs = {descriptor_of(i32({n32}))};
    inst.outputs = {descriptor_of(i32({n32})), descriptor_of(i32({n32}))};
    inst.input_patterns = {step};
    inst.output_patterns = {step, step};
    inst.srf[0] = v;
    inst.srf[1] = static_cast<uint32_t>(pad);
    inst.srf[2] = chunks * 4;
    const std::string prelude = width_prelude({0}) + ".equ LANES " + std::to_string(il) + "\n";
    InstantiateResult r = assembled(std::move(inst), prep_source(rb, has_pad, prelude), guid + ".buckets.prep");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {1, scratch, scratch + 1}, 0};
    part.inst.variant = "embedding bwd buckets: prep, chunks of " + std::to_string(rows) + " rows";
    result.parts.push_back(std::move(part));
  }
  const unsigned budget = prefetch_budget();
  // Phase 1: the lists, on one core.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {1, 1, 1, 1, 1};
    const DescriptorTemplate per_index = with_unit_dim0(descriptor_of(i32({n32})));
    DescriptorTemplate addresses = per_index;
    addresses.padding = chunks * 4;   // the second of an odd last pair: the dummy
    inst.inputs = {addresses, per_index};
    inst.outputs = {descriptor_of(i32({lists}))};
    const TensorAccessPattern all_indices = whole(per_index.size);
    inst.input_patterns = {all_indices, all_indices};
    inst.output_patterns = {whole(padded({lists}))};
    inst.srf[0] = (n32 + 1) / 2;
    inst.srf[1] = chunks;
    inst.srf[2] = static_cast<uint32_t>(list_length);
    const unsigned ahead = std::min(32u, budget / 2);
    InstantiateResult r = assembled(std::move(inst), width_prelude() + bucket_source(ahead), guid + ".buckets.bucket");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {scratch, scratch + 1, scratch + 2}, 1};
    part.inst.variant = "embedding bwd buckets: the chunks' lists";
    result.parts.push_back(std::move(part));
  }
  // Phase 2: the rows, accumulated from the lists.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {static_cast<int32_t>(blocks), static_cast<int32_t>(chunks), 1, 1, 1};
    const TensorParams grad_view{io, {d, n32}, {}};
    inst.inputs = {descriptor_of(grad_view), with_unit_dim0(descriptor_of(i32({lists})))};
    inst.outputs = {descriptor_of(TensorParams{io, {d, v}, {}})};
    const int32_t block = static_cast<int32_t>(vb * lanes);
    inst.input_patterns = {pattern_of(AccessPatternDim{0, block, 0, block - 1}, padded(grad_view.shape), true),
                           whole(inst.inputs[1].size)};
    TensorAccessPattern rows_out = pattern_of(AccessPatternDim{0, block, 0, block - 1}, padded({d, v}), false);
    rows_out[1] = AccessPatternDim{1, static_cast<int32_t>(rows), 0, static_cast<int32_t>(rows) - 1};
    inst.output_patterns = {rows_out};
    inst.srf[0] = static_cast<uint32_t>(list_length);
    inst.srf[1] = rows;
    inst.srf[2] = vb * lanes;
    inst.srf[7] = lists;
    AccumulateShape shape{bf16, lanes, vector_bytes, vb, rb, 0, 0};
    // In flight: the ring's grad vectors and the lists' entries ahead of it, within the budget.
    // (Two lists' first entries: this step's and the next one's.)
    shape.lists_ahead = std::min(32u, budget / 7);
    shape.ring = 1u << (log2_of(std::clamp((budget - 2 * shape.lists_ahead) / vb, 4u, 32u) + 1) - 1);   // a power of two
    InstantiateResult r = assembled(std::move(inst), width_prelude() + accumulate_source(shape),
                                    guid + ".buckets.accumulate." + std::to_string(vb));
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {0, scratch + 2, 2}, 2};
    part.inst.variant = "embedding bwd buckets: " + std::to_string(vb) + " vectors of " + std::to_string(rows) +
                        " rows a step, " + tpc::dtype_name(io);
    result.parts.push_back(std::move(part));
  }
  result.scratch_bytes = {n * 4, n * 4, uint64_t{lists} * 4};
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
