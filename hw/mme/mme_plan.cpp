#include "hw/mme/mme_plan.h"

#include "hw/mme/mme_compute.h"

#include <algorithm>
#include <regex>
#include <stdexcept>

namespace hpusim::mme {

Geometry parse_geometry(const std::string& text, uint32_t core_rows, uint32_t core_cols, uint32_t cores_per_engine) {
  static const std::regex pes(R"((\d+)x(\d+))");
  static const std::regex cores(R"((\d+)wx(\d+)h)");
  std::smatch m;
  Geometry g;
  if (std::regex_match(text, m, pes)) {
    g.rows = static_cast<uint32_t>(std::stoul(m[1]));
    g.cols = static_cast<uint32_t>(std::stoul(m[2]));
  } else if (std::regex_match(text, m, cores)) {
    g.cols = static_cast<uint32_t>(std::stoul(m[1])) * core_cols;
    g.rows = static_cast<uint32_t>(std::stoul(m[2])) * core_rows;
  } else {
    throw std::invalid_argument("MME geometry '" + text + "' is neither ROWSxCOLS nor NwxMh");
  }
  const uint64_t want = uint64_t{cores_per_engine} * core_rows * core_cols;
  if (g.rows == 0 || g.cols == 0 || uint64_t{g.rows} * g.cols != want) {
    throw std::invalid_argument("MME geometry '" + text + "' has " + std::to_string(uint64_t{g.rows} * g.cols) +
                                " PEs; an engine of " + std::to_string(cores_per_engine) + " cores of " +
                                std::to_string(core_rows) + "x" + std::to_string(core_cols) + " has " +
                                std::to_string(want));
  }
  return g;
}

JobPlan::JobPlan(const MmeJob& job, const PlanParams& params)
    : job_(job), params_(params), dims_(gemm_dims(job)), ein_(type_bytes(job.in)), eout_(type_bytes(job.out)) {
  const Geometry& g = params_.geometry;
  if (g.rows == 0 || g.cols == 0) throw std::invalid_argument("MME plan: empty geometry");
  const uint64_t tiles_m = (dims_.m + g.rows - 1) / g.rows, tiles_n = (dims_.n + g.cols - 1) / g.cols;
  // The super-tile: the accumulators' tiles arranged to read the fewest operand bytes per tile
  // step ((high rows + wide cols) / (high x wide)), no larger than the output needs, whose rows
  // and columns hold one staging line each within half the staging buffer.
  const uint32_t acc = std::max<uint32_t>(params_.accumulators, 1);
  const uint64_t half_lines = std::max<uint64_t>(params_.staging_bytes / kLineBytes / 2, 1);
  double best = 0;
  bool found = false;
  for (uint64_t h = 1; h <= std::min<uint64_t>(acc, tiles_m); ++h) {
    for (uint64_t w = 1; w <= std::min<uint64_t>(acc / h, tiles_n); ++w) {
      const uint64_t lines = h * g.rows + w * g.cols;
      if (lines > half_lines && h * w > 1) continue;
      const double cost = static_cast<double>(lines) / static_cast<double>(h * w);
      if (!found || cost < best) {
        found = true;
        best = cost;
        tiles_high_ = static_cast<uint32_t>(h);
        tiles_wide_ = static_cast<uint32_t>(w);
      }
    }
  }
  st_rows_ = (dims_.m + super_rows() - 1) / super_rows();
  st_cols_ = (dims_.n + super_cols() - 1) / super_cols();
  // k-chunks: the largest power of two whose operands fit min_chunks_in_buffer times. An operand
  // whose rows run along k (A not transposed, B transposed) is read a whole staging line of k
  // values at a time, at the chunk that starts the line; the line serves the chunks after it.
  const uint64_t per_k = (super_rows() + super_cols()) * ein_;
  const uint64_t budget = params_.staging_bytes / std::max<uint32_t>(params_.min_chunks_in_buffer, 1);
  kc_ = 1;
  while (kc_ * 2 * per_k <= budget && kc_ < dims_.k) kc_ *= 2;
  kc_ = std::min<uint64_t>(kc_, dims_.k);
  line_k_ = std::max<uint64_t>(kc_, kLineBytes / ein_);
  a_along_k_ = job_.op == MmeOp::Gemm && !job_.transpose_a;
  b_along_k_ = job_.op == MmeOp::Gemm && job_.transpose_b;
}

JobPlan::SuperTile JobPlan::supertile(uint64_t index) const {
  SuperTile t;
  t.batch = static_cast<uint32_t>(index / supertiles_per_batch());
  const uint64_t in_batch = index % supertiles_per_batch();
  t.row0 = in_batch / st_cols_ * super_rows();
  t.col0 = in_batch % st_cols_ * super_cols();
  t.rows = std::min<uint64_t>(super_rows(), dims_.m - t.row0);
  t.cols = std::min<uint64_t>(super_cols(), dims_.n - t.col0);
  return t;
}

JobPlan::Chunk JobPlan::chunk(uint64_t index) const {
  Chunk c;
  const uint64_t per = chunks_per_supertile();
  c.supertile = index / per;
  c.k0 = index % per * kc_;
  c.kc = std::min<uint64_t>(kc_, dims_.k - c.k0);
  c.last_of_supertile = index % per + 1 == per;
  const SuperTile t = supertile(c.supertile);
  const uint64_t high = (t.rows + params_.geometry.rows - 1) / params_.geometry.rows;
  const uint64_t wide = (t.cols + params_.geometry.cols - 1) / params_.geometry.cols;
  c.tile_steps = high * wide * c.kc * params_.array_cycles_per_k;
  c.bytes = (operand_k(a_along_k_, c.k0, c.kc) * t.rows + operand_k(b_along_k_, c.k0, c.kc) * t.cols) * ein_;
  // What leaves the staging buffer when the chunk is done: its own reads, except lines along k,
  // which leave with the last chunk they serve.
  const bool line_done = (c.k0 + c.kc) % line_k_ == 0 || c.k0 + c.kc == dims_.k;
  const uint64_t line_start = c.k0 / line_k_ * line_k_;
  const auto released = [&](bool along_k, uint64_t extent) {
    if (!along_k) return c.kc * extent;
    return line_done ? std::min<uint64_t>(line_k_, dims_.k - line_start) * extent : 0;
  };
  c.release = (released(a_along_k_, t.rows) + released(b_along_k_, t.cols)) * ein_;
  return c;
}

uint64_t JobPlan::operand_k(bool along_k, uint64_t k0, uint64_t kc) const {
  if (!along_k) return kc;
  return k0 % line_k_ == 0 ? std::min<uint64_t>(line_k_, dims_.k - k0) : 0;
}

void JobPlan::add_run(std::vector<Run>& runs, uint64_t address, uint64_t bytes) const {
  while (bytes > 0) {
    const uint64_t piece = std::min<uint64_t>(bytes, params_.max_request_bytes);
    runs.push_back({address, static_cast<uint32_t>(piece)});
    address += piece;
    bytes -= piece;
  }
}

bool JobPlan::a_address(uint32_t b, uint64_t m, uint64_t k, uint64_t& address) const {
  const ConvShape& s = job_.conv;
  switch (job_.op) {
    case MmeOp::Gemm:
      address = job_.a + (b * job_.batch_stride_a + (job_.transpose_a ? k * job_.lda + m : m * job_.lda + k)) * ein_;
      return true;
    case MmeOp::ConvForward:
    case MmeOp::ConvBackwardWeight: {
      // A(m, k) is x at (n, h, w, c); forward m = (n, p, q), k = (r, s, c); backward weight swaps.
      const uint64_t p = static_cast<uint64_t>(s.out_h()), q = static_cast<uint64_t>(s.out_w());
      const uint64_t row = job_.op == MmeOp::ConvForward ? m : k, col = job_.op == MmeOp::ConvForward ? k : m;
      const uint64_t n = row / (p * q), op = row / q % p, oq = row % q;
      const uint64_t c = col % s.c, t = col / s.c % s.s, r = col / (uint64_t{s.c} * s.s);
      const int64_t h = static_cast<int64_t>(op * s.stride_h + r * s.dil_h) - s.pad_h;
      const int64_t w = static_cast<int64_t>(oq * s.stride_w + t * s.dil_w) - s.pad_w;
      if (h < 0 || w < 0 || h >= s.h || w >= s.w) return false;
      address = job_.a + (((n * s.h + static_cast<uint64_t>(h)) * s.w + static_cast<uint64_t>(w)) * s.c + c) * ein_;
      return true;
    }
    case MmeOp::ConvBackwardData: {
      // A(m = (n, h, w), k = (r, s, k)) is dy at (n, p, q, k) when (h + pad - r dil) / stride is
      // a whole p in range (likewise q), else a zero.
      const uint64_t p = static_cast<uint64_t>(s.out_h()), q = static_cast<uint64_t>(s.out_w());
      const uint64_t n = m / (uint64_t{s.h} * s.w), h = m / s.w % s.h, w = m % s.w;
      const uint64_t kk = k % s.k, t = k / s.k % s.s, r = k / (uint64_t{s.k} * s.s);
      const int64_t ph = static_cast<int64_t>(h + s.pad_h) - static_cast<int64_t>(r * s.dil_h);
      const int64_t qw = static_cast<int64_t>(w + s.pad_w) - static_cast<int64_t>(t * s.dil_w);
      if (ph < 0 || qw < 0 || ph % s.stride_h != 0 || qw % s.stride_w != 0) return false;
      if (static_cast<uint64_t>(ph / s.stride_h) >= p || static_cast<uint64_t>(qw / s.stride_w) >= q) return false;
      address = job_.a +
                (((n * p + static_cast<uint64_t>(ph / s.stride_h)) * q + static_cast<uint64_t>(qw / s.stride_w)) * s.k + kk) *
                    ein_;
      return true;
    }
  }
  return false;
}

bool JobPlan::b_address(uint32_t b, uint64_t k, uint64_t n, uint64_t& address) const {
  const ConvShape& s = job_.conv;
  switch (job_.op) {
    case MmeOp::Gemm:
      address = job_.b + (b * job_.batch_stride_b + (job_.transpose_b ? n * job_.ldb + k : k * job_.ldb + n)) * ein_;
      return true;
    case MmeOp::ConvForward:
    case MmeOp::ConvBackwardWeight:
      address = job_.b + (k * dims_.n + n) * ein_;   // w as (R S C) x K, or dy as (N P Q) x K
      return true;
    case MmeOp::ConvBackwardData: {
      // B(k = (r, s, kk), n = c) is w[r][s][c][kk].
      const uint64_t kk = k % s.k, rs = k / s.k;
      address = job_.b + ((rs * s.c + n) * s.k + kk) * ein_;
      return true;
    }
  }
  return false;
}

void JobPlan::chunk_reads(const Chunk& c, std::vector<Run>& runs) const {
  runs.clear();
  const SuperTile t = supertile(c.supertile);
  // Each operand is walked in the order its elements are contiguous, and consecutive addresses
  // merge into one run.
  uint64_t start = 0, length = 0;
  const auto element = [&](bool present, uint64_t address) {
    if (present && length > 0 && start + length == address) {
      length += ein_;
      return;
    }
    if (length > 0) add_run(runs, start, length);
    length = present ? ein_ : 0;
    start = address;
  };
  const auto flush = [&] {
    if (length > 0) add_run(runs, start, length);
    length = 0;
  };
  uint64_t address = 0;
  const bool a_m_major = job_.op == MmeOp::Gemm ? job_.transpose_a : job_.op == MmeOp::ConvBackwardWeight;
  if (job_.op == MmeOp::Gemm) {
    // Whole rows at once: GEMM operands are row-major strips.
    const uint64_t a_base = job_.a + t.batch * job_.batch_stride_a * ein_;
    if (job_.transpose_a) {
      for (uint64_t k = c.k0; k < c.k0 + c.kc; ++k) add_run(runs, a_base + (k * job_.lda + t.row0) * ein_, t.rows * ein_);
    } else if (const uint64_t lk = operand_k(true, c.k0, c.kc)) {
      for (uint64_t m = t.row0; m < t.row0 + t.rows; ++m) add_run(runs, a_base + (m * job_.lda + c.k0) * ein_, lk * ein_);
    }
    const uint64_t b_base = job_.b + t.batch * job_.batch_stride_b * ein_;
    if (job_.transpose_b) {
      if (const uint64_t lk = operand_k(true, c.k0, c.kc)) {
        for (uint64_t n = t.col0; n < t.col0 + t.cols; ++n) add_run(runs, b_base + (n * job_.ldb + c.k0) * ein_, lk * ein_);
      }
    } else {
      for (uint64_t k = c.k0; k < c.k0 + c.kc; ++k) add_run(runs, b_base + (k * job_.ldb + t.col0) * ein_, t.cols * ein_);
    }
    return;
  }
  if (a_m_major) {
    for (uint64_t k = c.k0; k < c.k0 + c.kc; ++k)
      for (uint64_t m = t.row0; m < t.row0 + t.rows; ++m) element(a_address(t.batch, m, k, address), address);
  } else {
    for (uint64_t m = t.row0; m < t.row0 + t.rows; ++m)
      for (uint64_t k = c.k0; k < c.k0 + c.kc; ++k) element(a_address(t.batch, m, k, address), address);
  }
  flush();
  for (uint64_t k = c.k0; k < c.k0 + c.kc; ++k)
    for (uint64_t n = t.col0; n < t.col0 + t.cols; ++n) element(b_address(t.batch, k, n, address), address);
  flush();
}

void JobPlan::supertile_writes(uint64_t index, std::vector<Write>& writes) const {
  writes.clear();
  const SuperTile t = supertile(index);
  for (uint64_t r = 0; r < t.rows; ++r) {
    uint64_t col = 0;
    uint64_t address = job_.o + (output_row_offset(job_, t.batch, t.row0 + r) + t.col0) * eout_;
    uint64_t bytes = t.cols * eout_;
    while (bytes > 0) {
      const uint64_t piece = std::min<uint64_t>(bytes, params_.max_request_bytes / eout_ * eout_);
      writes.push_back({{address, static_cast<uint32_t>(piece)}, r, col});
      address += piece;
      bytes -= piece;
      col += piece / eout_;
    }
  }
}

}  // namespace hpusim::mme
