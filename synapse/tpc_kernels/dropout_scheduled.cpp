// dropout_fwd as a list-scheduled body (body_schedule.h), four f32 vectors a step (bf16: two
// vectors, their four f32 halves). dropout_fwd.s runs two vectors' hash chains (rng.inc's MIX32:
// eight dependent operations) in the order written, so each waits on its own latencies; here four
// chains interleave. The keep test `u >= p`, u = (h >> 8) * 2^-24, is the integer test
// `(h >> 8) >= ceil(p * 2^24)` (h >> 8 < 2^24 and its product with 2^-24 are exact in f32, and
// p * 2^24 is exact in double), and the mask is one select of 1.0 or 0.0: the generator's values
// and dropout_fwd.s's Y = (X * mask) * scale, bit for bit, in fewer operations a vector.
#include <cmath>
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

namespace hpusim::synapse::tpc_kernels::glue {

namespace {

constexpr unsigned kCopies = 4;   // f32 vectors a step
// The index registers of a step's vectors (nest.inc's I2, then ROW_SETUP's), as the clusters'.
constexpr const char* kCopyIndex[kCopies] = {"I2", "I4", "I5", "I6"};

}  // namespace

uint32_t dropout_keep_threshold(float p) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0));
}

std::string dropout_fwd_scheduled(bool bf16, bool seed_tensor, size_t y_tensor,
                                  const std::vector<std::string>& step_prefetches) {
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  // Registers: V16..V19 lane ids of the four vectors (lane + 64 c), V20 1.0, V30 the key from the
  // seed tensor; per vector c: h (the hash, then the mask) V(0 + c), the hash's scratch V(4 + c),
  // x then Y V(10 + c) (bf16: a vector loaded into its hi half's register, widened in place).
  const std::string key = seed_tensor ? "V30" : "S2";
  const std::string y = std::to_string(y_tensor), mask = std::to_string(y_tensor + 1);
  std::vector<std::string> b = {"iget_dim S9, I2 dim=0", "add.i32 S9, S9, S8"};
  for (unsigned c = 0; c < kCopies; ++c) {
    const std::string h = v(c), s = v(4 + c);
    b.push_back("add.i32 " + h + ", " + v(16 + c) + ", S9");
    b.push_back("xor.u32 " + h + ", " + h + ", " + key);
    for (const auto& [shift, factor] : {std::pair<int, const char*>{16, "0x7feb352d"}, {15, "0x846ca68b"}, {16, ""}}) {
      b.push_back("shr.u32 " + s + ", " + h + ", " + std::to_string(shift));
      b.push_back("xor.u32 " + h + ", " + h + ", " + s);
      if (*factor) b.push_back("mul.u32 " + h + ", " + h + ", " + factor);
    }
    b.push_back("shr.u32 " + h + ", " + h + ", 8");
    b.push_back("cmp.ge.i32 VP" + std::to_string(1 + c) + ", " + h + ", S0");
    b.push_back("sel.f32 " + h + ", V20, 0.0, VP" + std::to_string(1 + c));
  }
  for (unsigned c = 0; c < kCopies; ++c) {
    const std::string x = v(10 + c);
    if (!bf16) {
      b.push_back("ld_tnsr " + x + ", " + kCopyIndex[c] + ", 0");
    } else if (c % 2 == 0) {
      const std::string hi = v(11 + c);
      b.push_back("ld_tnsr " + hi + ", " + kCopyIndex[c] + ", 0");
      b.push_back("convert.bf16.f32 " + x + ", " + hi + " part=0");
      b.push_back("convert.bf16.f32 " + hi + ", " + hi + " part=1");
    }
    b.push_back("mul.f32 " + x + ", " + x + ", " + v(c));
    b.push_back("mul.f32 " + x + ", " + x + ", S1");
    if (!bf16) {
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c] + ", " + y + ", " + x);
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c] + ", " + mask + ", " + v(c));
    } else if (c % 2 == 1) {   // the pair's Y and mask, each narrowed into the lo half's register
      const std::string x_lo = v(9 + c), h_lo = v(c - 1);
      b.push_back("convert.f32.bf16 " + x_lo + ", " + x_lo + " part=0");
      b.push_back("convert.f32.bf16 " + x_lo + ", " + x + " part=1");
      b.push_back("convert.f32.bf16 " + h_lo + ", " + h_lo + " part=0");
      b.push_back("convert.f32.bf16 " + h_lo + ", " + v(c) + " part=1");
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c - 1] + ", " + y + ", " + x_lo);
      b.push_back(std::string("st_tnsr ") + kCopyIndex[c - 1] + ", " + mask + ", " + h_lo);
    }
  }
  b.insert(b.end(), step_prefetches.begin(), step_prefetches.end());
  for (unsigned c = 1; c < kCopies; ++c)
    if (!bf16 || c % 2 == 0) b.push_back(std::string("iadd_dim ") + kCopyIndex[c] + ", LANES dim=0");

  std::ostringstream src;
  // ROW_SETUP: the row's dense index (S8) and the step's vectors' coordinates.
  src << ".include \"rng.inc\"\n.macro ROW_SETUP\n        DENSE_ROW_BASE\n";
  for (unsigned c = 1; c < kCopies; ++c)
    if (!bf16 || c % 2 == 0)
      src << "        imov " << kCopyIndex[c] << ", I2\n        iadd_dim " << kCopyIndex[c] << ", (" << c
          << " * F32_LANES) dim=0\n";
  src << ".endm\n.include \"nest.inc\"\n";
  if (seed_tensor) {   // the key from the seed tensor's element, as dropout_fwd.s's KEY_SETUP
    src << "        imov I3, 0\n        ld_tnsr_s S16, I3, 1\n        mov.i32 V30, S16\n"
        << "        xor.u32 V30, V30, 0x9e3779b9\n        MIX32 V30\n";
  }
  src << "        lane_id.i32 V16\n";
  for (unsigned c = 1; c < kCopies; ++c) src << "        add.i32 " << v(16 + c) << ", V16, (" << c << " * F32_LANES)\n";
  src << "        mov.f32 V20, 1.0\n        NEST_BEGIN\n";
  const std::vector<std::string> bundles = schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  return src.str();
}

}  // namespace hpusim::synapse::tpc_kernels::glue
