// embedding_bwd by buckets, five launches (README.md, "Embedding backward"):
//  0. prep (every core): per index n its bucket's counter address (the chunk of R grad_weight rows
//     it falls in, or a dummy for an index outside 0 .. V-1 or equal to padding_idx) and its entry
//     (n above its row's VLM offset within the chunk, or above the row itself for 32768 indices
//     or more), vector by vector;
//  1. count (a step per slice of about 512 indices): each chunk's count in the slice, the
//     counters in SLM;
//  2. prefix (one step): each slice's first position in each chunk's list, and the lists' lengths;
//  3. scatter (a step per slice): the slice's entries into the lists, so each list holds its
//     chunk's entries in index order;
//  4. accumulate (every core): a step owns VB vectors of the embedding dim of one chunk's R rows,
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

// The bucket counters live in SLM (1 KB on every preset): one per chunk and a dummy.
constexpr uint32_t kMaxChunks = 240;
// The indices are bucketed in slices of about this many, at most kMaxSlices (a step each).
constexpr uint64_t kSliceIndices = 512, kMaxSlices = 16;
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

// Phase 0: tensors 0 indices [N] (i32), 1 counter addresses [N], 2 entries [N]: n << entry_shift
// | the row in its chunk << row_shift. SRF: S0 = V, S1 = padding_idx, S2 = the dummy counter's
// address.
std::string prep_source(uint32_t rb, bool has_pad, const std::string& prelude, unsigned entry_shift, unsigned row_shift) {
  std::vector<std::string> b = {"ld_tnsr V0, I2, 0",
                                "iget_dim S16, I2 dim=0",
                                "lane_id.i32 V1",
                                "add.i32 V1, V1, S16",
                                "cmp.lt.u32 VP1, V0, S0"};
  if (has_pad) b.insert(b.end(), {"cmp.ne.i32 VP2, V0, S1", "pand VP1, VP1, VP2"});
  b.insert(b.end(), {"shr.u32 V2, V0, " + std::to_string(rb), "shl.i32 V2, V2, 2", "sel.i32 V2, V2, S2, VP1",
                     "shl.i32 V1, V1, " + std::to_string(entry_shift), "and.i32 V3, V0, " + std::to_string((1u << rb) - 1)});
  if (row_shift != 0) b.push_back("shl.i32 V3, V3, " + std::to_string(row_shift));
  b.insert(b.end(), {"or.i32 V1, V1, V3", "st_tnsr I2, 1, V2", "st_tnsr I2, 2, V1"});
  std::ostringstream src;
  src << prelude << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        NEST_BEGIN\n"
      << schedule::loop_body(schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency))
      << "        NEST_END\n";
  return src.str();
}

// The walk over a slice's indices, two a pass (the second's counter is read with the first's and
// takes the first's update when they share a chunk): tensor 0 the counter addresses [1, N] (I5
// the load, I6 the prefetch), with `entries` tensor 1 the entries and tensor 3 the lists (each
// entry stored at its counter's position, the counter one on); without, the counters only.
std::vector<std::string> slice_walk(bool entries) {
  std::vector<std::string> w;
  for (const char* pair : {"20", "24"}) {
    w.push_back(std::string("ld_tnsr_s S") + pair + ", I5, 0");
    if (entries) w.push_back("ld_tnsr_s S" + std::to_string(std::stoi(pair) + 1) + ", I5, 1");
    w.push_back("iadd_dim I5, 1 dim=1");
    w.push_back("prefetch I6, 0");
    if (entries) w.push_back("prefetch I6, 1");
    w.push_back("iadd_dim I6, 1 dim=1");
  }
  w.insert(w.end(), {"ld_slm S22, S20", "ld_slm S26, S24", "add.i32 S23, S22, 1", "cmp.eq.i32 SP8, S24, S20",
                     "sel S26, S23, S26, SP8", "add.i32 S27, S26, 1", "st_slm S20, S23", "st_slm S24, S27"});
  if (entries) {
    w.insert(w.end(), {"imov_dim I3, S22 dim=0", "st_tnsr_s I3, 3, S21", "imov_dim I3, S26 dim=0",
                       "st_tnsr_s I3, 3, S25"});
  }
  return w;
}

// The loop over this core's slices (S8 the slice): S10 its first index, S11 its pairs, I5 / I6 at
// its first index with the first `ahead` of tensor 0 (and 1) prefetched. SRF: S0 = the slice
// length (even), S2 = N.
std::string slice_loop_begin(unsigned ahead, bool entries) {
  std::ostringstream src;
  src << "        ispace_offset I0\n        ispace_size I1\n        iget_dim S8, I0 dim=0\n"
      << "        iget_dim S9, I1 dim=0\n        add.i32 S9, S9, S8\n"
      << "        loop S8, S9, slice_end\n"
      << "        mul.i32 S10, S8, S0\n        add.i32 S11, S10, S0\n        min.i32 S11, S11, S2\n"
      << "        sub.i32 S11, S11, S10\n        add.i32 S11, S11, 1\n        shr.u32 S11, S11, 1\n"
      << "        imov I5, 0\n        imov_dim I5, S10 dim=1\n        imov I6, I5\n"
      << "        mov S12, 0\n        mov S13, " << ahead << "\n        loop S12, S13, ahead_end\n"
      << (entries ? "        prefetch I6, 0\nahead_end: prefetch I6, 1; iadd_dim I6, 1 dim=1\n"
                  : "ahead_end: prefetch I6, 0; iadd_dim I6, 1 dim=1\n");
  return src.str();
}

// Phase 1 (a step per slice of the indices): each chunk's count in the slice. Tensors 0 counter
// addresses [1, N] (padded with the dummy's: an odd last slice's second of a pair), 1 counts
// [C, slices]. SRF: S0 slice length, S1 = C, S2 = N.
std::string count_source(unsigned ahead) {
  std::ostringstream src;
  src << slice_loop_begin(ahead, false)
      << "        mov S12, 0\n        mov S13, 0\n        mov S15, 0\n        add.i32 S14, S1, 1\n"
      << "        loop S12, S14, clear_end\n"
      << "clear_end: st_slm S13, S15; add.i32 S13, S13, 4\n"
      << "        mov S12, 0\n        loop S12, S11, walk_end\n"
      << label_last(schedule::list_schedule(slice_walk(false), "", schedule::kPrefetchHitLatency), "walk_end")
      << "        imov I3, 0\n        imov_dim I3, S8 dim=1\n        mov S13, 0\n        mov S12, 0\n"
      << "        loop S12, S1, out_end\n        ld_slm S22, S13\n"
      << "        st_tnsr_s I3, 1, S22; iadd_dim I3, 1 dim=0\n"
      << "out_end: add.i32 S13, S13, 4\n"
      << "slice_end: nop\n        halt\n";
  return src.str();
}

// Phase 2 (one step): slice s's first position in chunk c's list, c x Lp + the counts of the
// slices before it, and each list's length. Tensors 0 counts [C, slices], 1 offsets [C, slices],
// 2 lengths [C]. SRF: S0 = Lp, S1 = slices. Every count is prefetched first.
std::string prefix_source(unsigned chunk_vectors, unsigned lanes) {
  std::ostringstream src;
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  src << "        imov I3, 0\n        mov S12, 0\n        loop S12, S1, ahead_end\n";
  for (unsigned k = 0; k < chunk_vectors; ++k)
    src << "        prefetch I3, 0" << (k + 1 < chunk_vectors ? "; iadd_dim I3, " + std::to_string(lanes) + " dim=0" : "")
        << "\n";
  src << "        imov_dim I3, 0 dim=0\nahead_end: iadd_dim I3, 1 dim=1\n";
  // V0.. the lists' first positions, V10.. the running offsets, V20.. a slice's counts.
  for (unsigned k = 0; k < chunk_vectors; ++k)
    src << "        lane_id.i32 " << v(k) << "\n        add.i32 " << v(k) << ", " << v(k) << ", " << k * lanes
        << "\n        mul.i32 " << v(k) << ", " << v(k) << ", S0\n        mov.i32 " << v(10 + k) << ", " << v(k) << "\n";
  src << "        imov I3, 0\n        mov S12, 0\n        loop S12, S1, slices_end\n";
  for (unsigned k = 0; k < chunk_vectors; ++k) {
    src << "        ld_tnsr " << v(20 + k) << ", I3, 0\n        st_tnsr I3, 1, " << v(10 + k) << "\n";
    if (k + 1 < chunk_vectors) src << "        iadd_dim I3, " << lanes << " dim=0\n";
  }
  for (unsigned k = 0; k < chunk_vectors; ++k)
    src << "        add.i32 " << v(10 + k) << ", " << v(10 + k) << ", " << v(20 + k) << "\n";
  src << "        imov_dim I3, 0 dim=0\nslices_end: iadd_dim I3, 1 dim=1\n        imov I3, 0\n";
  for (unsigned k = 0; k < chunk_vectors; ++k)
    src << "        sub.i32 " << v(10 + k) << ", " << v(10 + k) << ", " << v(k) << "\n        st_tnsr I3, 2, " << v(10 + k)
        << "; iadd_dim I3, " << lanes << " dim=0\n";
  src << "        halt\n";
  return src.str();
}

// Phase 3 (a step per slice): the slice's entries appended to their chunks' lists, in index
// order. Tensors 0 counter addresses [1, N], 1 entries [1, N], 2 offsets [1, C, slices], 3 lists
// [C x Lp]. SRF: S0 slice length, S1 = C, S2 = N, S3 = C x Lp (the dummy's position: past the
// lists, so its entries land nowhere). A counter holds its list's next position.
std::string scatter_source(unsigned ahead) {
  std::ostringstream src;
  src << slice_loop_begin(ahead, true)
      // The slice's first position in each list into its counter, the offsets prefetched ahead.
      << "        imov I3, 0\n        imov_dim I3, S8 dim=2\n        imov I4, I3\n"
      << "        mov S12, 0\n        mov S13, " << ahead << "\n        loop S12, S13, offsets_ahead_end\n"
      << "offsets_ahead_end: prefetch I4, 2; iadd_dim I4, 1 dim=1\n"
      << "        mov S13, 0\n        mov S12, 0\n        loop S12, S1, offsets_end\n"
      << "        ld_tnsr_s S22, I3, 2; iadd_dim I3, 1 dim=1\n        prefetch I4, 2; iadd_dim I4, 1 dim=1\n"
      << "offsets_end: st_slm S13, S22; add.i32 S13, S13, 4\n"
      << "        st_slm S13, S3\n"
      << "        imov I3, 0\n        mov S12, 0\n        loop S12, S11, walk_end\n"
      << label_last(schedule::list_schedule(slice_walk(true), "", schedule::kPrefetchHitLatency), "walk_end")
      << "slice_end: nop\n        halt\n";
  return src.str();
}

struct AccumulateShape {
  bool bf16;
  unsigned lanes, vector_bytes, vb, rb, ring, lists_ahead;
  unsigned entry_shift;   // the entry's index n sits above this many bits
  bool offset_in_entry;   // its low bits the row's VLM byte offset (else the row)
};

// The index registers of a step's VB grad loads (I0 / I1 are free once the slice is read).
constexpr const char* kGradLoads[] = {"I3", "I0", "I1", "I7"};

// Phase 4: tensors 0 grad [D, N], 1 lists [1, C x Lp], 2 lengths [1, C], 3 grad_weight [D, V];
// index space {blocks of VB vectors of D, chunks}. SRF: S0 = Lp, S1 = R, S2 = VB x lanes,
// S7 = C x Lp and S26 = C (past the lists and the lengths: a step that does not exist reads a
// length of 0).
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
  const std::string shift = std::to_string(s.entry_shift), low_mask = std::to_string((1u << s.entry_shift) - 1);
  // Entry j + A: its grad vectors prefetched, the entry into the ring (`predicated`: only where it
  // is in the list; the main loop runs only while it is).
  const auto ahead = [&](const std::string& block, bool predicated) {
    const std::string p6 = predicated ? " @SP6" : "", p7 = " @SP7";
    std::vector<std::string> b = {"ld_tnsr_s S8, I4, 1" + p6, "iadd_dim I4, 1 dim=1", "prefetch I6, 1" + p7,
                                  "iadd_dim I6, 1 dim=1",     "shr.u32 S9, S8, " + shift,
                                  "imov_dim I5, S9 dim=1",    "imov_dim I5, " + block + " dim=0"};
    for (unsigned u = 0; u < s.vb; ++u) {
      if (u) b.push_back("iadd_dim I5, " + lanes + " dim=0");
      b.push_back("prefetch I5, 0" + p6);
    }
    b.insert(b.end(), {"st_slm S28, S8", "add.i32 S28, S28, 4", "and.i32 S28, S28, " + std::to_string(4 * s.ring - 1)});
    return b;
  };
  // Entry j: its grad vectors (through an index register each, whose dim 0 the step sets) added to
  // its row's accumulators; the entry holds the row's VLM offset, or its row (shifted here).
  std::vector<std::string> use = {"ld_slm S10, S28", "shr.u32 S11, S10, " + shift, "and.i32 S3, S10, " + low_mask};
  if (!s.offset_in_entry) use.push_back("shl.i32 S3, S3, " + std::to_string(log2_of(row_bytes)));
  for (unsigned u = 0; u < s.vb; ++u) use.push_back("imov_dim " + std::string(kGradLoads[u]) + ", S11 dim=1");
  for (unsigned a = 1; a < s.vb * w; ++a)
    use.push_back("add.i32 " + acc_addr(a) + ", S3, " + std::to_string(a * s.vector_bytes));
  for (unsigned u = 0; u < s.vb; ++u) {
    const std::string g = "V" + std::to_string(w * u), g2 = "V" + std::to_string(w * u + 1);
    const std::string at = kGradLoads[u];
    if (s.bf16) {
      const std::string raw = "V" + std::to_string(20 + u);
      use.insert(use.end(), {"ld_tnsr " + raw + ", " + at + ", 0", "convert.bf16.f32 " + g + ", " + raw + " part=0",
                             "convert.bf16.f32 " + g2 + ", " + raw + " part=1"});
    } else {
      use.push_back("ld_tnsr " + g + ", " + at + ", 0");
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
  for (const std::string& line : ahead("S29", true)) prologue.push_back(line);
  // The step's entries while entry j + A is in the list (its list prefetch only while entry
  // j + A + P is: a prefetch nothing takes would hold a buffer entry until it goes stale), then the
  // last A ones (the drain).
  std::vector<std::string> main = {"cmp.lt.i32 SP7, S17, S16"};
  main.insert(main.end(), use.begin(), use.end());
  for (const std::string& line : ahead("S31", false)) main.push_back(line);
  std::vector<std::string> drain = use;
  drain.insert(drain.end(), {"add.i32 S28, S28, 4", "and.i32 S28, S28, " + std::to_string(4 * s.ring - 1)});
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
                             "st_tnsr I7, 3, V" + std::to_string(20 + u)});
    else
      out.push_back("st_tnsr I7, 3, " + lo);
  }
  out.push_back("iadd_dim I7, 1 dim=1");

  const unsigned accumulators = (1u << s.rb) * s.vb * w;
  const std::string P = std::to_string(s.lists_ahead), A = std::to_string(s.ring);
  // The list of chunk S35 at S18: its length into S19, its first P entries prefetched (I2 past them).
  const std::string read_list = "        imov I2, 0\n        imov_dim I2, S35 dim=1\n        ld_tnsr_s S19, I2, 2\n"
                                "        imov_dim I2, S18 dim=1\n        mov S17, 0\n        mov S30, " + P + "\n"
                                "        loop S17, S30, lists_end_%\n"
                                "lists_end_%: prefetch I2, 1; iadd_dim I2, 1 dim=1\n";
  // The prologue of the step read_list read, for block S29: I4 at its first entry, I6 past the
  // prefetched ones.
  const std::string run_prologue = "        imov I4, 0\n        imov_dim I4, S18 dim=1\n"
                                   "        imov I6, I2\n        imov I5, 0\n        sub.i32 S16, S19, " + P + "\n"
                                   "        mov S17, 0\n        mov S30, " + A + "\n        loop S17, S30, prologue_end_%\n" +
                                   label_last(schedule::list_schedule(prologue, "", schedule::kPrefetchHitLatency),
                                              "prologue_end_%");
  const auto numbered = [](std::string text, char k) {
    for (size_t at = text.find('%'); at != std::string::npos; at = text.find('%')) text[at] = k;
    return text;
  };
  // The grad loads' index registers at the step's block (dim 0; I7 also writes the rows out).
  std::string grad_loads_at_block;
  for (unsigned u = 0; u < s.vb; ++u) {
    grad_loads_at_block += "        imov " + std::string(kGradLoads[u]) + ", 0\n        add.i32 S12, S31, " +
                           std::to_string(u * s.lanes) + "\n        imov_dim " + kGradLoads[u] + ", S12 dim=0\n";
  }
  std::ostringstream src;
  src << "        ispace_offset I0\n        ispace_size I1\n"
      << "        iget_dim S13, I0 dim=1\n        iget_dim S21, I1 dim=1\n        add.i32 S21, S21, S13\n"
      << "        iget_dim S22, I0 dim=0\n        iget_dim S23, I1 dim=0\n        add.i32 S23, S23, S22\n"
      << "        cmp.ge.i32 SP1, S13, S21\n        cmp.ge.i32 SP2, S22, S23\n        por SP1, SP1, SP2\n"
      << "        jmp done @SP1\n"
      << "        mov.f32 V30, 0.0\n        mov S28, 0\n        imov I3, 0\n"
      // The first step's list and prologue, the accumulators cleared meanwhile.
      << "        mul.i32 S18, S13, S0\n        mul.i32 S29, S22, S2\n        mul.i32 S32, S13, S1\n"
      << "        mov S35, S13\n"
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
      << "        mov S35, S33\n        cmp.ge.i32 SP3, S34, S23\n        mov S18, S7 @SP3\n        mov S35, S26 @SP3\n"
      << numbered(read_list, '1')
      << "        sub.i32 S15, S27, " << A << "\n        max.i32 S15, S15, 0\n        sub.i32 S14, S27, S15\n"
      << "        sub.i32 S16, S15, " << P << "\n"
      << "        imov I4, 0\n        imov_dim I4, S24 dim=1\n        iadd_dim I4, " << A << " dim=1\n"
      << grad_loads_at_block
      << "        mov S17, 0\n        loop S17, S15, main_end\n"
      << label_last(schedule::list_schedule(main, "", schedule::kPrefetchHitLatency), "main_end")
      << "        mov S17, 0\n        loop S17, S14, drain_end\n"
      << label_last(schedule::list_schedule(drain, "", schedule::kPrefetchHitLatency), "drain_end")
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
  const uint64_t old_rows = KernelLibrary::kEmbeddingBwdVlmBytes / (w * vector_bytes);
  if (n == 0 || uint64_t{vectors_d} * ((v + old_rows - 1) / old_rows) < kMinOldSteps) return std::nullopt;
  // VB vectors of D a step: as many as D has, up to 4 (bf16 2: the accumulators' addresses take a
  // register each), while the chunks' counters fit SLM.
  unsigned vb = 0, rb = 0;
  uint32_t chunks = 0;
  for (unsigned k = bf16 ? 2 : 4; k >= 1 && vb == 0; k /= 2) {
    if (k > 1 && k > vectors_d) continue;
    const uint32_t rows = KernelLibrary::kEmbeddingBwdVlmBytes / (k * w * vector_bytes);
    const uint32_t c = (v + rows - 1) / rows;
    if (c <= kMaxChunks) vb = k, rb = log2_of(rows), chunks = c;
  }
  if (vb == 0) return std::nullopt;
  // An entry: n above the row's VLM byte offset (16 bits: R rows of a step fill 64 KB) while n fits
  // the rest, else above the row.
  const uint32_t row_bytes = vb * w * vector_bytes;
  const bool offset_in_entry = n < (uint64_t{1} << 15);
  const unsigned entry_shift = offset_in_entry ? 16 : rb;
  if (n >= (uint64_t{1} << (31 - entry_shift))) return std::nullopt;
  const uint64_t list_length = n;   // a chunk's list holds up to every index
  if (uint64_t{chunks} * list_length > kMaxListElements) return std::nullopt;
  // Slices of the indices, each bucketed by a step of its own (an even length, so that only the
  // last may end in half a pair).
  const uint32_t slices0 = static_cast<uint32_t>(std::clamp<uint64_t>((n + kSliceIndices - 1) / kSliceIndices, 1, kMaxSlices));
  const uint32_t slice_length = static_cast<uint32_t>(((n + slices0 - 1) / slices0 + 1) / 2 * 2);
  const uint32_t slices = static_cast<uint32_t>((n + slice_length - 1) / slice_length);
  const uint32_t rows = 1u << rb, blocks = (vectors_d + vb - 1) / vb;
  const uint32_t n32 = static_cast<uint32_t>(n), lists = static_cast<uint32_t>(chunks * list_length);
  const bool has_pad = !p.scalars.empty();
  int32_t pad = has_pad ? static_cast<int32_t>(p.scalars[0]) : 0;
  if (pad < 0) pad += static_cast<int32_t>(v);   // PyTorch's negative padding_idx
  // Scratch: 0 counter addresses, 1 entries, 2 counts, 3 offsets, 4 lengths, 5 lists.
  const uint32_t scratch = 3;
  const uint32_t addresses_t = scratch, entries_t = scratch + 1, counts_t = scratch + 2, offsets_t = scratch + 3,
                 lengths_t = scratch + 4, lists_t = scratch + 5;
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
    InstantiateResult r = assembled(std::move(inst),
                                    prep_source(rb, has_pad, prelude, entry_shift, offset_in_entry ? log2_of(row_bytes) : 0),
                                    guid + ".buckets.prep");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {1, addresses_t, entries_t}, 0};
    part.inst.variant = "embedding bwd buckets: prep, chunks of " + std::to_string(rows) + " rows";
    result.parts.push_back(std::move(part));
  }
  const unsigned budget = prefetch_budget();
  const DescriptorTemplate per_index = with_unit_dim0(descriptor_of(i32({n32})));
  DescriptorTemplate addresses = per_index;
  addresses.padding = chunks * 4;   // the second of an odd last pair: the dummy
  const unsigned ahead = std::min(32u, budget / 2);
  const DescriptorTemplate counts = descriptor_of(i32({chunks, slices}));
  // Phase 1: each slice's count per chunk.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {static_cast<int32_t>(slices), 1, 1, 1, 1};
    inst.inputs = {addresses};
    inst.outputs = {counts};
    inst.input_patterns = {whole(per_index.size)};
    inst.output_patterns = {pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(chunks) - 1}, counts.size, false)};
    inst.output_patterns[0][1] = AccessPatternDim{0, 1, 0, 0};
    inst.srf[0] = slice_length;
    inst.srf[1] = chunks;
    inst.srf[2] = n32;
    InstantiateResult r = assembled(std::move(inst), width_prelude() + count_source(ahead), guid + ".buckets.count");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {addresses_t, counts_t}, 1};
    part.inst.variant = "embedding bwd buckets: " + std::to_string(slices) + " slices' counts";
    result.parts.push_back(std::move(part));
  }
  // Phase 2: each slice's first position in each list, and the lists' lengths.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {1, 1, 1, 1, 1};
    inst.inputs = {counts};
    inst.outputs = {counts, descriptor_of(i32({chunks}))};
    inst.input_patterns = {whole(counts.size)};
    inst.output_patterns = {whole(counts.size), whole(padded({chunks}))};
    inst.srf[0] = static_cast<uint32_t>(list_length);
    inst.srf[1] = slices;
    const unsigned il = lanes_of(DType::I32);
    InstantiateResult r = assembled(std::move(inst), width_prelude() + prefix_source((chunks + il - 1) / il, il),
                                    guid + ".buckets.prefix");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {counts_t, offsets_t, lengths_t}, 2};
    part.inst.variant = "embedding bwd buckets: the slices' offsets";
    result.parts.push_back(std::move(part));
  }
  // Phase 3: each slice's entries into the lists.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {static_cast<int32_t>(slices), 1, 1, 1, 1};
    const DescriptorTemplate offsets = with_unit_dim0(counts);
    inst.inputs = {addresses, per_index, offsets};
    inst.outputs = {descriptor_of(i32({lists}))};
    inst.input_patterns = {whole(per_index.size), whole(per_index.size), whole(offsets.size)};
    inst.output_patterns = {whole(padded({lists}))};
    inst.srf[0] = slice_length;
    inst.srf[1] = chunks;
    inst.srf[2] = n32;
    inst.srf[3] = lists;
    InstantiateResult r = assembled(std::move(inst), width_prelude() + scatter_source(std::min(ahead, budget / 4)),
                                    guid + ".buckets.scatter");
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {addresses_t, entries_t, offsets_t, lists_t}, 3};
    part.inst.variant = "embedding bwd buckets: the slices' entries into the lists";
    result.parts.push_back(std::move(part));
  }
  // Phase 4: the rows, accumulated from the lists.
  {
    Instantiation inst;
    inst.guid = guid;
    inst.ispace_geometry = {static_cast<int32_t>(blocks), static_cast<int32_t>(chunks), 1, 1, 1};
    const TensorParams grad_view{io, {d, n32}, {}};
    inst.inputs = {descriptor_of(grad_view), with_unit_dim0(descriptor_of(i32({lists}))),
                   with_unit_dim0(descriptor_of(i32({chunks})))};
    inst.outputs = {descriptor_of(TensorParams{io, {d, v}, {}})};
    const int32_t block = static_cast<int32_t>(vb * lanes);
    inst.input_patterns = {pattern_of(AccessPatternDim{0, block, 0, block - 1}, padded(grad_view.shape), true),
                           whole(inst.inputs[1].size), whole(inst.inputs[2].size)};
    TensorAccessPattern rows_out = pattern_of(AccessPatternDim{0, block, 0, block - 1}, padded({d, v}), false);
    rows_out[1] = AccessPatternDim{1, static_cast<int32_t>(rows), 0, static_cast<int32_t>(rows) - 1};
    inst.output_patterns = {rows_out};
    inst.srf[0] = static_cast<uint32_t>(list_length);
    inst.srf[1] = rows;
    inst.srf[2] = vb * lanes;
    inst.srf[7] = lists;
    inst.srf[26] = chunks;
    AccumulateShape shape{bf16, lanes, vector_bytes, vb, rb, 0, 0, entry_shift, offset_in_entry};
    // In flight: the ring's grad vectors and the lists' entries ahead of it, within the budget.
    // (Two lists' first entries: this step's and the next one's.)
    shape.lists_ahead = std::min(32u, budget / 7);
    shape.ring = 1u << (log2_of(std::clamp((budget - 2 * shape.lists_ahead) / vb, 4u, 32u) + 1) - 1);   // a power of two
    InstantiateResult r = assembled(std::move(inst), width_prelude() + accumulate_source(shape),
                                    guid + ".buckets.accumulate." + std::to_string(vb));
    if (!r.ok()) return r;
    KernelPart part{*r.inst, {0, lists_t, lengths_t, 2}, 4};
    part.inst.variant = "embedding bwd buckets: " + std::to_string(vb) + " vectors of " + std::to_string(rows) +
                        " rows a step, " + tpc::dtype_name(io);
    result.parts.push_back(std::move(part));
  }
  result.scratch_bytes = {n * 4, n * 4, uint64_t{chunks} * slices * 4, uint64_t{chunks} * slices * 4,
                          uint64_t{chunks} * 4, uint64_t{lists} * 4};
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
