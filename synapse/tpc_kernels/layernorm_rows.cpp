// Layernorm over short f32 rows (at most kShortRowRegisters vectors: BERT's 768, a conv's 32
// channels), the body written by the glue and list-scheduled (body_schedule.h): the forward two
// rows of whole vectors a step when the row count is even, or several rows narrower than a vector
// in each vector; the backward (dx) one row a step. layernorm_fwd_short.s issues one row's chains in the order written: each sum
// waits on the one before, and every gamma / beta load waits for memory between a vector's
// multiply and its add. Scheduled, the loads go out early and two rows' chains fill each other's
// latency. Every row runs layernorm_fwd_short.s's operations in their order (the masked squares'
// select is the identity on whole vectors), so the results are bit-identical.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

#include <sstream>

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// Vector registers for a glue-written body, in order, skipping the ones the kernel keeps for
// itself (V8 the shuffle's zero, and the listed ones).
class VectorRegisters {
 public:
  explicit VectorRegisters(unsigned reserved_from = 40, unsigned reserved_to = 0)
      : reserved_from_(reserved_from), reserved_to_(reserved_to) {}
  std::string take() {
    while (next_ == 8 || (next_ >= reserved_from_ && next_ <= reserved_to_)) ++next_;
    return "V" + std::to_string(next_++);
  }
  bool fit() const { return next_ <= 40; }

 private:
  unsigned next_ = 0, reserved_from_, reserved_to_;
};

// A step's views of the row tensors ([width, steps]) and of the statistics ([rows, steps]: one
// element per row), with the access patterns of one step each.
struct StepViews {
  DescriptorTemplate row, stat;
  TensorAccessPattern row_pattern, stat_pattern;
};
StepViews step_views(uint32_t width, uint32_t rows, uint64_t steps, DType io = DType::F32) {
  const TensorParams row{io, {width, static_cast<uint32_t>(steps)}, {}};
  const TensorParams stat{DType::F32, {rows, static_cast<uint32_t>(steps)}, {}};
  return {descriptor_of(row), descriptor_of(stat),
          pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(width) - 1}, padded(row.shape), false),
          pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(rows) - 1}, padded(stat.shape), false)};
}

// Gamma / beta: their row of n0 at every one of `steps` steps (stride 0 along dim 1).
void add_repeated_row(Instantiation& inst, uint32_t n0, uint64_t steps, const std::array<uint32_t, kMaxDims>& shape,
                      DType io = DType::F32) {
  DescriptorTemplate d = descriptor_of(TensorParams{io, {n0, static_cast<uint32_t>(steps)}, {}});
  d.stride[1] = 0;
  inst.inputs.push_back(d);
  TensorAccessPattern pattern = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(n0) - 1}, shape, false);
  for (unsigned dim = 1; dim < kMaxDims; ++dim) pattern[dim] = AccessPatternDim{static_cast<uint8_t>(dim), 0, 0, 0};
  inst.input_patterns.push_back(pattern);
}

// Before the nest: the `vectors` f32 vectors of each of `tensors` (stride-0 rows the same at every
// step: gamma, beta) read once into VLM, one tensor after the other from VLM address 0 (bf16: read
// as vectors / 2 bf16 vectors, each widened into its two f32 halves). Prefetched with each step
// instead, a step's read and the steps' ahead fell in one prefetch-buffer entry, so every step
// after the first waited a memory latency for them.
std::string rows_to_vlm(unsigned vectors, const std::vector<unsigned>& tensors, bool bf16 = false) {
  std::string src;
  unsigned at = 0;
  const unsigned loads = bf16 ? vectors / 2 : vectors;
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  for (unsigned t : tensors) {
    src += "        imov I3, 0\n";
    for (unsigned r = 0; r < loads; ++r)
      src += "        ld_tnsr " + v(20 + r) + ", I3, " + std::to_string(t) + "; iadd_dim I3, " +
             (bf16 ? "(2 * F32_LANES)" : "F32_LANES") + " dim=0\n";
    for (unsigned r = 0; r < loads && bf16; ++r)
      for (unsigned half = 0; half < 2; ++half)
        src += "        convert.bf16.f32 " + v(26 + 2 * r + half) + ", " + v(20 + r) + " part=" + std::to_string(half) + "\n";
    for (unsigned r = 0; r < vectors; ++r)
      src += "        st_vlm (" + std::to_string(at++) + " * VECTOR_BYTES), " + v((bf16 ? 26 : 20) + r) + "\n";
  }
  return src;
}

// Tensors: 0 X, [1 gamma, 2 beta,] then Y, mean, rstd. SRF: S1 = the row length (f32), S2 = eps.
// Registers: V8 zero (shuffle's lane 0), V16 lane ids, VP5 lane 0; I3 X's loads, then the
// statistics' coordinates; I4 / I6 the rows' stores. Gamma and beta come from VLM (vectors 0 ..
// vectors-1 and vectors .. 2 vectors-1; gamma_beta_to_vlm). `vectors` counts f32 vectors: with
// bf16 tensors, a row's bf16 vectors' halves (lo, hi), each bf16 vector loaded into its hi half's
// register and widened in place, the sums on one accumulator per half added at the end (io_bf16.inc's
// COMBINE), and Y narrowed into the lo half's register.
std::vector<std::string> layernorm_body(unsigned rows, unsigned vectors, bool affine, size_t out_y, bool bf16) {
  std::vector<std::string> b;
  VectorRegisters regs(16, 16);
  const auto reg = [&] { return regs.take(); };
  const std::string step = std::string(bf16 ? "(2 * F32_LANES)" : "F32_LANES") + " dim=0";
  const unsigned halves = bf16 ? 2 : 1;
  std::vector<std::vector<std::string>> x(rows);
  b.push_back("imov I3, I2");
  for (unsigned row = 0; row < rows; ++row)
    for (unsigned r = 0; r < vectors; r += halves) {
      for (unsigned h = 0; h < halves; ++h) x[row].push_back(reg());
      if (row + r > 0) b.push_back("iadd_dim I3, " + step);
      b.push_back("ld_tnsr " + x[row].back() + ", I3, 0");
      if (bf16) {
        b.push_back("convert.bf16.f32 " + x[row][r] + ", " + x[row][r + 1] + " part=0");
        b.push_back("convert.bf16.f32 " + x[row][r + 1] + ", " + x[row][r + 1] + " part=1");
      }
    }
  std::vector<std::string> acc(rows), acc_hi(rows), mean(rows), rstd(rows), t(rows);
  // 0 + each vector on the accumulator of its half, the halves' added (bf16), then the lanes'.
  const auto sum_lanes = [&](unsigned row, const std::vector<std::string>& terms) {
    const std::string& a = acc[row];
    for (unsigned h = 0; h < halves; ++h) b.push_back("mov.f32 " + (h ? acc_hi[row] : a) + ", 0.0");
    for (unsigned r = 0; r < vectors; ++r) {
      const std::string& into = r % halves ? acc_hi[row] : a;
      if (terms.empty()) {
        b.push_back("add.f32 " + into + ", " + into + ", " + x[row][r]);
      } else {
        b.push_back("mul.f32 " + terms[r % halves] + ", " + x[row][r] + ", " + x[row][r]);
        b.push_back("add.f32 " + into + ", " + into + ", " + terms[r % halves]);
      }
    }
    if (bf16) b.push_back("add.f32 " + a + ", " + a + ", " + acc_hi[row]);
    b.push_back("reduce.add.f32 " + a + ", " + a);
  };
  for (unsigned row = 0; row < rows; ++row) {
    acc[row] = reg();
    if (bf16) acc_hi[row] = reg();
    mean[row] = reg();
    rstd[row] = reg();
    t[row] = reg();
    const std::string& a = acc[row];
    sum_lanes(row, {});
    b.push_back("div.f32 " + a + ", " + a + ", S1");
    b.push_back("shuffle.f32 " + mean[row] + ", " + a + ", V8");
    for (const std::string& v : x[row]) b.push_back("sub.f32 " + v + ", " + v + ", " + mean[row]);
    // The squares (bf16: the hi halves' in rstd's register, not yet written).
    sum_lanes(row, bf16 ? std::vector<std::string>{t[row], rstd[row]} : std::vector<std::string>{t[row]});
    b.push_back("div.f32 " + a + ", " + a + ", S1");
    b.push_back("add.f32 " + a + ", " + a + ", S2");
    b.push_back("special.rsqrt.f32 " + a + ", " + a);
    b.push_back("shuffle.f32 " + rstd[row] + ", " + a + ", V8");
  }
  // The statistics: one element per row, lane `row` of one vector at dim 0 = 0.
  b.push_back("imov I3, I2");
  b.push_back("imov_dim I3, 0 dim=0");
  const std::string stat_mean = rows == 2 ? t[0] : mean[0], stat_rstd = rows == 2 ? t[1] : rstd[0];
  if (rows == 2) {
    b.push_back("sel.f32 " + stat_mean + ", " + mean[0] + ", " + mean[1] + ", VP5");
    b.push_back("sel.f32 " + stat_rstd + ", " + rstd[0] + ", " + rstd[1] + ", VP5");
  }
  b.push_back("st_tnsr I3, " + std::to_string(out_y + 1) + ", " + stat_mean);
  b.push_back("st_tnsr I3, " + std::to_string(out_y + 2) + ", " + stat_rstd);
  // Y = (x - mean) * rstd [* gamma + beta], gamma and beta loaded once for both rows.
  const std::vector<std::string> store_at{"I4", "I6"};
  for (unsigned row = 0; row < rows; ++row) {
    b.push_back("imov " + store_at[row] + ", I2");
    if (row) b.push_back("iadd_dim " + store_at[row] + ", (" + std::to_string(vectors) + " * F32_LANES) dim=0");
  }
  const std::string pool[2][2] = {{reg(), reg()}, {reg(), reg()}};
  for (unsigned r = 0; r < vectors; ++r) {
    const std::string& gamma = pool[r % 2][0];
    const std::string& beta = pool[r % 2][1];
    if (affine) {   // from VLM (gamma_beta_to_vlm, before the nest)
      b.push_back("ld_vlm.f32 " + gamma + ", (" + std::to_string(r) + " * VECTOR_BYTES)");
      b.push_back("ld_vlm.f32 " + beta + ", (" + std::to_string(vectors + r) + " * VECTOR_BYTES)");
    }
    for (unsigned row = 0; row < rows; ++row) {
      const std::string& v = x[row][r];
      b.push_back("mul.f32 " + v + ", " + v + ", " + rstd[row]);
      if (affine) {
        b.push_back("mul.f32 " + v + ", " + v + ", " + gamma);
        b.push_back("add.f32 " + v + ", " + v + ", " + beta);
      }
      if (bf16 && r % 2 == 0) continue;   // stored with its hi half
      const std::string& y = x[row][r + 1 - halves];
      if (bf16) {
        b.push_back("convert.f32.bf16 " + y + ", " + y + " part=0");
        b.push_back("convert.f32.bf16 " + y + ", " + v + " part=1");
      }
      if (r + 1 > halves) b.push_back("iadd_dim " + store_at[row] + ", " + step);
      b.push_back("st_tnsr " + store_at[row] + ", " + std::to_string(out_y) + ", " + y);
    }
  }
  return b;
}

// Rows narrower than a vector (n0 = lanes / k, k = 2 or 4: a conv's 32 channels): k rows per
// vector, `per_step` vectors a step. Each row's sums are its own lanes' (sel with its segment, the
// other lanes +0, which the pairwise reduce tree adds as the short kernel's padding lanes), and
// the per-row mean and rstd are spread over their segments by sel, so every lane sees the short
// kernel's operations. Gamma and beta are loaded once and repeated over the segments (shuffle).
// Registers: V16 lane ids, V8 zero, V17 gamma's lane (lane mod n0), V18 a row's first lane
// (lane mod k) * n0, V19 / V20 gamma / beta repeated; VP1.. the segments, VP6 the first k lanes.
// The statistics of a step's rows are one vector (lane = row), stored once.
std::vector<std::string> narrow_rows_body(unsigned k, unsigned per_step, bool affine, size_t out_y) {
  std::vector<std::string> b;
  VectorRegisters regs(16, 20);
  const auto take = [&] { return regs.take(); };
  std::vector<std::string> stat_mean(per_step), stat_rstd(per_step);
  std::vector<std::string> at{"I2", "I3"};
  if (per_step == 2) {
    b.push_back("imov I3, I2");
    b.push_back("iadd_dim I3, F32_LANES dim=0");
  }
  for (unsigned v = 0; v < per_step; ++v) {
    const std::string x = take(), d = take(), sq = take(), m = take(), r = take();
    b.push_back("ld_tnsr " + x + ", " + at[v] + ", 0");
    std::vector<std::string> mean(k), rstd(k);
    for (unsigned j = 0; j < k; ++j) {
      const std::string part = take(), acc = take();
      mean[j] = take();
      b.push_back("sel.f32 " + part + ", " + x + ", 0.0, VP" + std::to_string(1 + j));
      b.push_back("mov.f32 " + acc + ", 0.0");
      b.push_back("add.f32 " + acc + ", " + acc + ", " + part);
      b.push_back("reduce.add.f32 " + acc + ", " + acc);
      b.push_back("div.f32 " + acc + ", " + acc + ", S1");
      b.push_back("shuffle.f32 " + mean[j] + ", " + acc + ", V8");
      rstd[j] = acc;   // reused once the mean is out
    }
    b.push_back("mov.f32 " + m + ", " + mean[0]);
    for (unsigned j = 1; j < k; ++j) b.push_back("sel.f32 " + m + ", " + mean[j] + ", " + m + ", VP" + std::to_string(1 + j));
    b.push_back("sub.f32 " + d + ", " + x + ", " + m);
    b.push_back("mul.f32 " + sq + ", " + d + ", " + d);
    for (unsigned j = 0; j < k; ++j) {
      const std::string& acc = rstd[j];
      b.push_back("sel.f32 " + mean[j] + ", " + sq + ", 0.0, VP" + std::to_string(1 + j));   // the row's squares
      b.push_back("mov.f32 " + acc + ", 0.0");
      b.push_back("add.f32 " + acc + ", " + acc + ", " + mean[j]);
      b.push_back("reduce.add.f32 " + acc + ", " + acc);
      b.push_back("div.f32 " + acc + ", " + acc + ", S1");
      b.push_back("add.f32 " + acc + ", " + acc + ", S2");
      b.push_back("special.rsqrt.f32 " + acc + ", " + acc);
      b.push_back("shuffle.f32 " + acc + ", " + acc + ", V8");
    }
    b.push_back("mov.f32 " + r + ", " + rstd[0]);
    for (unsigned j = 1; j < k; ++j) b.push_back("sel.f32 " + r + ", " + rstd[j] + ", " + r + ", VP" + std::to_string(1 + j));
    b.push_back("mul.f32 " + d + ", " + d + ", " + r);
    if (affine) {
      b.push_back("mul.f32 " + d + ", " + d + ", V19");
      b.push_back("add.f32 " + d + ", " + d + ", V20");
    }
    b.push_back("st_tnsr " + at[v] + ", " + std::to_string(out_y) + ", " + d);
    stat_mean[v] = sq;   // the row statistics, lane j of this vector's rows
    stat_rstd[v] = x;
    b.push_back("shuffle.f32 " + sq + ", " + m + ", V18");
    b.push_back("shuffle.f32 " + x + ", " + r + ", V18");
  }
  if (per_step == 2) {   // lanes 0 .. k-1 the first vector's rows, k .. 2k-1 the second's
    b.push_back("sel.f32 " + stat_mean[0] + ", " + stat_mean[0] + ", " + stat_mean[1] + ", VP6");
    b.push_back("sel.f32 " + stat_rstd[0] + ", " + stat_rstd[0] + ", " + stat_rstd[1] + ", VP6");
  }
  if (!regs.fit()) return {};
  b.push_back("imov I4, I2");
  b.push_back("imov_dim I4, 0 dim=0");
  b.push_back("st_tnsr I4, " + std::to_string(out_y + 1) + ", " + stat_mean[0]);
  b.push_back("st_tnsr I4, " + std::to_string(out_y + 2) + ", " + stat_rstd[0]);
  return b;
}

// layernorm_bwd's dx over rows narrower than a vector, k rows a vector, `per_step` vectors a step:
// mean and rstd of the step's rows loaded as one vector each (lane = row) and spread over the
// rows' segments (shuffle by V18, the lane's row; V20 = V18 + k for the second vector), each row's
// sums over its own lanes (sel, the others +0 as the short kernel's padding lanes). Tensors 0
// grad, 1 x, 2 mean, 3 rstd, [4 gamma,] `out` dx; V19 gamma repeated; VP1.. the segments.
std::vector<std::string> narrow_rows_bwd_body(unsigned k, unsigned per_step, bool affine, size_t out) {
  std::vector<std::string> b;
  VectorRegisters regs(16, 20);
  const auto take = [&] { return regs.take(); };
  const std::string ms = take(), rs = take();
  b.push_back("imov I4, I2");
  b.push_back("imov_dim I4, 0 dim=0");
  b.push_back("ld_tnsr " + ms + ", I4, 2");
  b.push_back("ld_tnsr " + rs + ", I4, 3");
  const std::vector<std::string> at{"I2", "I3"};
  if (per_step == 2) {
    b.push_back("imov I3, I2");
    b.push_back("iadd_dim I3, F32_LANES dim=0");
  }
  for (unsigned v = 0; v < per_step; ++v) {
    const std::string g = take(), x = take(), m = take(), r = take(), t = take(), a = take(), c = take();
    const std::string spread = v == 0 ? "V18" : "V20";
    b.push_back("ld_tnsr " + g + ", " + at[v] + ", 0");
    b.push_back("ld_tnsr " + x + ", " + at[v] + ", 1");
    if (affine) b.push_back("mul.f32 " + g + ", " + g + ", V19");
    b.push_back("shuffle.f32 " + m + ", " + ms + ", " + spread);
    b.push_back("shuffle.f32 " + r + ", " + rs + ", " + spread);
    b.push_back("sub.f32 " + x + ", " + x + ", " + m);
    b.push_back("mul.f32 " + x + ", " + x + ", " + r);
    b.push_back("mul.f32 " + t + ", " + x + ", " + g);
    std::vector<std::string> sum(k), dot(k);
    for (unsigned j = 0; j < k; ++j) {
      sum[j] = take();
      dot[j] = take();
      const std::string vp = "VP" + std::to_string(1 + j);
      b.push_back("sel.f32 " + sum[j] + ", " + g + ", 0.0, " + vp);
      b.push_back("sel.f32 " + dot[j] + ", " + t + ", 0.0, " + vp);
      for (const std::string* acc : {&sum[j], &dot[j]}) {
        b.push_back("add.f32 " + *acc + ", " + *acc + ", 0.0");   // 0 + lane, as the short kernel's first add
        b.push_back("reduce.add.f32 " + *acc + ", " + *acc);
        b.push_back("div.f32 " + *acc + ", " + *acc + ", S1");
        b.push_back("shuffle.f32 " + *acc + ", " + *acc + ", V8");
      }
    }
    b.push_back("mov.f32 " + a + ", " + sum[0]);
    b.push_back("mov.f32 " + c + ", " + dot[0]);
    for (unsigned j = 1; j < k; ++j) {
      b.push_back("sel.f32 " + a + ", " + sum[j] + ", " + a + ", VP" + std::to_string(1 + j));
      b.push_back("sel.f32 " + c + ", " + dot[j] + ", " + c + ", VP" + std::to_string(1 + j));
    }
    b.push_back("mul.f32 " + t + ", " + x + ", " + c);
    b.push_back("sub.f32 " + g + ", " + g + ", " + a);
    b.push_back("sub.f32 " + g + ", " + g + ", " + t);
    b.push_back("mul.f32 " + g + ", " + g + ", " + r);
    b.push_back("st_tnsr " + at[v] + ", " + std::to_string(out) + ", " + g);
  }
  if (!regs.fit()) return {};
  return b;
}

}  // namespace

namespace glue {

// layernorm_bwd_short.s's row, one row a step, as a list-scheduled body: the same operations per
// vector in the same order. Tensors 0 grad, 1 x, 2 mean, 3 rstd, [4 gamma,] `out` dx. `vectors`
// counts f32 vectors; bf16 tensors as layernorm_body's (halves widened in place, a sum per half).
std::string layernorm_bwd_scheduled(unsigned vectors, bool affine, size_t out, bool bf16) {
  std::vector<std::string> b;
  VectorRegisters regs;
  const auto reg = [&] { return regs.take(); };
  const std::string mean = reg(), rstd = reg(), sum = reg(), dot = reg(), t = reg(), a = reg(), c = reg();
  const unsigned halves = bf16 ? 2 : 1;
  const std::string step = std::string(bf16 ? "(2 * F32_LANES)" : "F32_LANES") + " dim=0";
  // Each half's sums (bf16: the hi halves' own, added at the end as io_bf16.inc's COMBINE).
  const std::vector<std::string> sums = bf16 ? std::vector<std::string>{sum, reg()} : std::vector<std::string>{sum};
  const std::vector<std::string> dots = bf16 ? std::vector<std::string>{dot, reg()} : std::vector<std::string>{dot};
  b.push_back("imov I3, I2");
  b.push_back("imov_dim I3, 0 dim=0");
  b.push_back("ld_tnsr_s S18, I3, 2");
  b.push_back("ld_tnsr_s S19, I3, 3");
  b.push_back("mov.f32 " + mean + ", S18");
  b.push_back("mov.f32 " + rstd + ", S19");
  // The statistics of the row kStatsRowsAhead on (scalars, so not among PREFETCH_ROW's vectors):
  // without, every row waited a memory latency for them.
  b.push_back("imov I6, I3");
  b.push_back("iadd_dim I6, " + std::to_string(KernelLibrary::kStatsRowsAhead) + " dim=1");
  b.push_back("prefetch I6, 2");
  b.push_back("prefetch I6, 3");
  std::vector<std::string> g, x;
  const std::string pool[4] = {reg(), reg(), reg(), reg()};
  for (unsigned r = 0; r < vectors; ++r) {
    g.push_back(reg());
    x.push_back(reg());
  }
  b.push_back("imov I4, I2");
  for (unsigned r = 0; r < vectors; r += halves) {
    if (r) b.push_back("iadd_dim I4, " + step);
    for (const auto* v : {&g, &x}) {
      const std::string& into = (*v)[r + halves - 1];
      b.push_back("ld_tnsr " + into + ", I4, " + (v == &g ? "0" : "1"));
      if (bf16) {
        b.push_back("convert.bf16.f32 " + (*v)[r] + ", " + into + " part=0");
        b.push_back("convert.bf16.f32 " + into + ", " + into + " part=1");
      }
    }
    for (unsigned h = r; h < r + halves && affine; ++h) {   // gamma from VLM (put there before the nest)
      b.push_back("ld_vlm.f32 " + pool[h % 4] + ", (" + std::to_string(h) + " * VECTOR_BYTES)");
      b.push_back("mul.f32 " + g[h] + ", " + g[h] + ", " + pool[h % 4]);
    }
  }
  for (const std::string& acc : sums) b.push_back("mov.f32 " + acc + ", 0.0");
  for (const std::string& acc : dots) b.push_back("mov.f32 " + acc + ", 0.0");
  for (unsigned r = 0; r < vectors; ++r) {
    const std::string &into_sum = sums[r % halves], &into_dot = dots[r % halves];
    b.push_back("sub.f32 " + x[r] + ", " + x[r] + ", " + mean);
    b.push_back("mul.f32 " + x[r] + ", " + x[r] + ", " + rstd);
    b.push_back("add.f32 " + into_sum + ", " + into_sum + ", " + g[r]);
    b.push_back("mul.f32 " + t + ", " + x[r] + ", " + g[r]);
    b.push_back("add.f32 " + into_dot + ", " + into_dot + ", " + t);
  }
  if (bf16) {
    b.push_back("add.f32 " + sum + ", " + sum + ", " + sums[1]);
    b.push_back("add.f32 " + dot + ", " + dot + ", " + dots[1]);
  }
  b.push_back("reduce.add.f32 " + sum + ", " + sum);
  b.push_back("reduce.add.f32 " + dot + ", " + dot);
  b.push_back("div.f32 " + sum + ", " + sum + ", S1");
  b.push_back("div.f32 " + dot + ", " + dot + ", S1");
  b.push_back("shuffle.f32 " + a + ", " + sum + ", V8");
  b.push_back("shuffle.f32 " + c + ", " + dot + ", V8");
  b.push_back("imov I5, I2");
  for (unsigned r = 0; r < vectors; ++r) {
    const std::string u = pool[r % 4];
    b.push_back("mul.f32 " + u + ", " + x[r] + ", " + c);
    b.push_back("sub.f32 " + g[r] + ", " + g[r] + ", " + a);
    b.push_back("sub.f32 " + g[r] + ", " + g[r] + ", " + u);
    b.push_back("mul.f32 " + g[r] + ", " + g[r] + ", " + rstd);
    if (bf16 && r % 2 == 0) continue;   // stored with its hi half, narrowed into the lo half's register
    const std::string& dx = g[r + 1 - halves];
    if (bf16) {
      b.push_back("convert.f32.bf16 " + dx + ", " + dx + " part=0");
      b.push_back("convert.f32.bf16 " + dx + ", " + g[r] + " part=1");
    }
    if (r + 1 > halves) b.push_back("iadd_dim I5, " + step);
    b.push_back("st_tnsr I5, " + std::to_string(out) + ", " + dx);
  }
  std::ostringstream src;
  src << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        mov.f32 V8, 0.0\n";
  if (affine) src << rows_to_vlm(vectors, {4}, bf16);
  src << "        NEST_BEGIN\n";
  const std::vector<std::string> bundles = schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  return src.str();
}

}  // namespace glue

std::optional<InstantiateResult> KernelLibrary::instantiate_scheduled_layernorm(const std::string& guid,
                                                                                 const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it != defs_.end() && it->second->kind == Kind::LayerNormBwd && it->second->out == DType::F32)
    return instantiate_narrow_layernorm_bwd(guid, p);
  if (it == defs_.end() || it->second->kind != Kind::LayerNormFwd) return std::nullopt;
  const DType io = it->second->out;
  const bool bf16 = io == DType::BF16;
  if (io != DType::F32 && !bf16) return std::nullopt;
  const bool affine = p.inputs.size() == 3;
  if ((p.inputs.size() != 1 && !affine) || p.outputs.size() != 3 || p.scalars.size() != 1) return std::nullopt;
  const TensorParams& x = p.inputs[0];
  const auto shape = padded(x.shape);
  const uint32_t n0 = shape[0];
  const unsigned lanes = lanes_of(io);
  const unsigned io_vectors = n0 / lanes;
  const unsigned vectors = bf16 ? 2 * io_vectors : io_vectors;   // f32 vectors (bf16: the halves)
  const uint64_t total_rows = elements(x) / n0;
  // Rows narrower than a vector: k of them a vector (narrow_rows_body; f32).
  const unsigned k = n0 < lanes && lanes % n0 == 0 && !bf16 ? lanes / n0 : 0;
  if (k != 0 && (k > 4 || total_rows % k != 0)) return std::nullopt;
  if (k == 0 && (n0 % lanes != 0 || vectors == 0 || vectors > kShortRowRegisters)) return std::nullopt;
  const auto dense = [](const TensorParams& t, DType dtype) { return t.dtype == dtype && flattened(t).shape.size() == 1; };
  if (!dense(x, io) || !dense(p.outputs[0], io) || padded(p.outputs[0].shape) != shape) return std::nullopt;
  for (size_t t = 1; t < 3; ++t)   // mean and rstd: f32
    if (!dense(p.outputs[t], DType::F32) || elements(p.outputs[t]) != total_rows) return std::nullopt;
  for (size_t t = 1; t < p.inputs.size(); ++t)
    if (!dense(p.inputs[t], io) || elements(p.inputs[t]) != n0) return std::nullopt;
  std::vector<std::string> body;
  unsigned rows = total_rows % 2 == 0 ? 2 : 1;   // per step
  if (k != 0) {
    rows = k;
    if ((total_rows / k) % 2 == 0) body = narrow_rows_body(k, 2, affine, p.inputs.size());
    if (!body.empty()) rows = 2 * k;
    else body = narrow_rows_body(k, 1, affine, p.inputs.size());
  } else {
    body = layernorm_body(rows, vectors, affine, p.inputs.size(), bf16);
  }
  if (body.empty()) return std::nullopt;
  const uint64_t steps = total_rows / rows;
  if (steps > INT32_MAX || uint64_t{rows} * n0 > INT32_MAX) return std::nullopt;

  Instantiation inst;
  inst.guid = guid;
  inst.ispace_geometry = {1, static_cast<int32_t>(steps), 1, 1, 1};
  const uint32_t width = rows * n0;
  const StepViews views = step_views(width, rows, steps, io);
  inst.inputs.push_back(views.row);
  inst.input_patterns.push_back(views.row_pattern);
  for (size_t t = 1; t < p.inputs.size(); ++t) add_repeated_row(inst, n0, steps, shape, io);
  inst.outputs = {views.row, views.stat, views.stat};
  inst.output_patterns = {views.row_pattern, views.stat_pattern, views.stat_pattern};
  inst.srf[0] = n0;
  inst.srf[1] = f32_bits(static_cast<float>(n0));
  inst.srf[2] = f32_bits(p.scalars[0]);

  // Gamma and beta: full rows read them from VLM (rows_to_vlm), narrow rows once into registers.
  const std::vector<unsigned> prefetched = {0};
  const std::vector<std::string> bundles = schedule::list_schedule(body, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  std::ostringstream src;
  const unsigned row_vectors = k != 0 ? rows / k : rows * io_vectors;
  src << "// " << guid << ": " << rows << " row(s) of " << n0 << " " << tpc::dtype_name(io)
      << " elements a step, list-scheduled\n"
      << width_prelude(prefetched, row_vectors, 1) << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        lane_id.i32 V16\n        mov.f32 V8, 0.0\n";
  if (k != 0) {
    unsigned shift = 0;
    while ((1u << shift) < n0) ++shift;
    src << "        shr.u32 V18, V16, " << shift << "\n";
    for (unsigned j = 0; j < k; ++j) src << "        cmp.eq.i32 VP" << 1 + j << ", V18, " << j << "\n";
    src << "        cmp.lt.i32 VP6, V16, " << k << "\n        and.u32 V17, V16, " << n0 - 1 << "\n"
        << "        and.u32 V18, V16, " << k - 1 << "\n        shl.u32 V18, V18, " << shift << "\n";
    if (affine)
      src << "        imov I3, 0\n        ld_tnsr V19, I3, 1\n        ld_tnsr V20, I3, 2\n"
          << "        shuffle.f32 V19, V19, V17\n        shuffle.f32 V20, V20, V17\n";
  } else {
    src << "        cmp.eq.i32 VP5, V16, 0\n";
    if (affine) src << rows_to_vlm(vectors, {1, 2}, bf16);
  }
  src << "        NEST_BEGIN\n";
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  inst.variant = "layernorm fwd " + std::string(tpc::dtype_name(io)) + " scheduled " + std::to_string(rows) + " x " +
                 (k != 0 ? std::to_string(n0) + " elements" : std::to_string(io_vectors)) + (affine ? " affine" : "");
  return assembled(std::move(inst), src.str(), guid);
}

std::optional<InstantiateResult> KernelLibrary::instantiate_narrow_layernorm_bwd(const std::string& guid,
                                                                                  const KernelParams& p) {
  const bool affine = p.inputs.size() == 5;
  if ((p.inputs.size() != 4 && !affine) || p.outputs.size() != 1 || !p.scalars.empty()) return std::nullopt;
  const TensorParams& grad = p.inputs[0];
  const auto shape = padded(grad.shape);
  const uint32_t n0 = shape[0];
  const unsigned lanes = lanes_of(DType::F32);
  const unsigned k = n0 < lanes && lanes % n0 == 0 ? lanes / n0 : 0;
  const uint64_t total_rows = elements(grad) / n0;
  if (k == 0 || k > 4 || total_rows % k != 0) return std::nullopt;
  const auto dense = [](const TensorParams& t) { return t.dtype == DType::F32 && flattened(t).shape.size() == 1; };
  for (const TensorParams* t : {&p.inputs[0], &p.inputs[1], &p.outputs[0]})
    if (!dense(*t) || padded(t->shape) != shape) return std::nullopt;
  for (size_t t = 2; t < 4; ++t)
    if (!dense(p.inputs[t]) || elements(p.inputs[t]) != total_rows) return std::nullopt;
  if (affine && (!dense(p.inputs[4]) || elements(p.inputs[4]) != n0)) return std::nullopt;
  unsigned per_step = 1;
  std::vector<std::string> body;
  if ((total_rows / k) % 2 == 0) body = narrow_rows_bwd_body(k, 2, affine, p.inputs.size());
  if (!body.empty()) per_step = 2;
  else body = narrow_rows_bwd_body(k, 1, affine, p.inputs.size());
  if (body.empty()) return std::nullopt;
  const unsigned rows = k * per_step;
  const uint64_t steps = total_rows / rows;
  if (steps > INT32_MAX) return std::nullopt;

  Instantiation inst;
  inst.guid = guid;
  inst.ispace_geometry = {1, static_cast<int32_t>(steps), 1, 1, 1};
  const StepViews views = step_views(per_step * lanes, rows, steps);
  inst.inputs = {views.row, views.row, views.stat, views.stat};
  inst.input_patterns = {views.row_pattern, views.row_pattern, views.stat_pattern, views.stat_pattern};
  if (affine) add_repeated_row(inst, n0, steps, shape);
  inst.outputs = {views.row};
  inst.output_patterns = {views.row_pattern};
  inst.srf[0] = n0;
  inst.srf[1] = f32_bits(static_cast<float>(n0));

  const std::vector<std::string> bundles = schedule::list_schedule(body, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  unsigned shift = 0;
  while ((1u << shift) < n0) ++shift;
  std::ostringstream src;
  src << "// " << guid << ": " << rows << " rows of " << n0 << " f32 elements a step, list-scheduled\n"
      << width_prelude({0, 1, 2, 3}, per_step, 1) << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        lane_id.i32 V16\n        mov.f32 V8, 0.0\n"
      << "        shr.u32 V18, V16, " << shift << "\n        add.i32 V20, V18, " << k << "\n"
      << "        and.u32 V17, V16, " << n0 - 1 << "\n";
  for (unsigned j = 0; j < k; ++j) src << "        cmp.eq.i32 VP" << 1 + j << ", V18, " << j << "\n";
  if (affine) src << "        imov I3, 0\n        ld_tnsr V19, I3, 4\n        shuffle.f32 V19, V19, V17\n";
  src << "        NEST_BEGIN\n";
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  inst.variant = "layernorm bwd f32 scheduled " + std::to_string(rows) + " x " + std::to_string(n0) + " elements" +
                 (affine ? " affine" : "");
  return assembled(std::move(inst), src.str(), guid);
}

}  // namespace hpusim::synapse::tpc_kernels
