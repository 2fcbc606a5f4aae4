#include "arch/tpc/tpc_launch.h"

#include <algorithm>
#include <stdexcept>

#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"
#include "arch/tpc/tpc_registers.h"

namespace hpusim::tpc {

namespace tc = regs::tpc_cfg;

namespace {

int64_t dim_size(const TpcLaunchSpec& spec, unsigned d) { return std::max<int32_t>(spec.index_space[d], 1); }
int64_t dim_granule(const TpcLaunchSpec& spec, unsigned d) { return std::max<int32_t>(spec.granule[d], 1); }
int64_t granules(const TpcLaunchSpec& spec, unsigned d) {
  return (dim_size(spec, d) + dim_granule(spec, d) - 1) / dim_granule(spec, d);
}

}  // namespace

std::vector<IndexRange> partition_index_space(const TpcLaunchSpec& spec) {
  if (spec.tpcs == 0 || spec.tpcs > regs::kMaxTpcEngines) {
    throw std::invalid_argument("a TPC launch needs 1.." + std::to_string(regs::kMaxTpcEngines) + " TPCs");
  }
  if (spec.partitions_per_tpc == 0) throw std::invalid_argument("partitions_per_tpc must be at least 1");
  const int64_t wanted = int64_t{spec.tpcs} * spec.partitions_per_tpc;
  // How evenly `wanted` slices of dim d share its granules: the mean slice over the largest.
  const auto balance = [&](int d) {
    const int64_t total = granules(spec, d);
    return static_cast<double>(total) / static_cast<double>((total + wanted - 1) / wanted * wanted);
  };
  // The outermost dimension that is large enough, unless it shares its granules unevenly and an
  // inner one shares them better in slices of at least kInnerSlice granules (shorter slices of an
  // inner dimension cost the kernels' walks more than the idle cores).
  constexpr double kEvenEnough = 0.9;
  constexpr int64_t kInnerSlice = 4;
  int split = -1;
  for (int d = kDims - 1; d >= 0; --d) {
    if (granules(spec, d) < wanted) continue;
    if (split < 0) {
      split = d;
      if (balance(d) >= kEvenEnough) break;
    } else if (granules(spec, d) >= kInnerSlice * wanted && balance(d) > balance(split)) {
      split = d;
      if (balance(d) >= kEvenEnough) break;
    }
  }
  int64_t parts = wanted;
  if (split < 0) {
    split = 0;
    for (unsigned d = 1; d < kDims; ++d) {
      if (granules(spec, d) > granules(spec, split)) split = static_cast<int>(d);
    }
    parts = granules(spec, split);
  }
  const int64_t total = granules(spec, split);
  const int64_t g = dim_granule(spec, split);
  std::vector<IndexRange> out;
  int64_t first = 0;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t count = total / parts + (p < total % parts ? 1 : 0);
    IndexRange r;
    for (unsigned d = 0; d < kDims; ++d) {
      r.offset[d] = 0;
      r.size[d] = static_cast<int32_t>(dim_size(spec, d));
    }
    const int64_t offset = first * g;
    r.offset[split] = static_cast<int32_t>(offset);
    r.size[split] = static_cast<int32_t>(std::min(count * g, dim_size(spec, split) - offset));
    out.push_back(r);
    first += count;
  }
  return out;
}

std::vector<uint32_t> tpc_descriptor_words(const TpcLaunchSpec& spec, const IndexRange& range, uint32_t so_message) {
  std::vector<uint32_t> w(tc::kDescSize / 4, 0);
  const auto set = [&w](uint32_t offset, uint32_t value) { w[offset / 4] = value; };
  for (unsigned t = 0; t < spec.tensors.size(); ++t) {
    const TensorDescriptor& d = spec.tensors[t];
    const uint32_t base = t * tc::kTensorStride;
    set(base + tc::kTensorBaseAddrLow, static_cast<uint32_t>(d.base));
    set(base + tc::kTensorBaseAddrHigh, static_cast<uint32_t>(d.base >> 32));
    set(base + tc::kTensorPaddingValue, d.padding);
    set(base + tc::kTensorConfig, regs::tpc_tensor_config::make(d.dtype, d.dims));
    for (unsigned k = 0; k < kDims; ++k) {
      set(base + tc::tensor_dim_size(k), d.size[k]);
      set(base + tc::tensor_dim_stride(k), static_cast<uint32_t>(d.stride[k]));
    }
  }
  set(tc::kDescSyncObjectMessage, so_message);
  set(tc::kDescSyncObjectAddr, static_cast<uint32_t>(spec.sob_address));
  set(tc::kDescKernelBaseAddressLow, static_cast<uint32_t>(spec.kernel_address));
  set(tc::kDescKernelBaseAddressHigh, static_cast<uint32_t>(spec.kernel_address >> 32));
  for (unsigned k = 0; k < kDims; ++k) {
    set(tc::desc_tid_base_dim(k), static_cast<uint32_t>(range.offset[k]));
    set(tc::desc_tid_size_dim(k), static_cast<uint32_t>(range.size[k]));
  }
  for (unsigned i = 0; i < tc::kNumSrfs; ++i) set(tc::desc_srf(i), spec.srf[i]);
  return w;
}

std::vector<TpcCommandBuffer> build_tpc_command_buffers(const TpcLaunchSpec& spec) {
  if (spec.tensors.size() > kMaxTensors) throw std::invalid_argument("a TPC launch takes at most 16 tensors");
  for (const TensorDescriptor& d : spec.tensors) {
    if (d.dims < 1 || d.dims > kDims) throw std::invalid_argument("a tensor descriptor needs 1..5 dims");
  }
  if (spec.kernel_address % kBundleBytes != 0) throw std::invalid_argument("kernel address not 32-byte aligned");
  std::vector<IndexRange> parts = partition_index_space(spec);
  for (IndexRange& part : parts)
    for (unsigned d = 0; d < kDims; ++d) part.offset[d] += spec.index_offset[d];
  std::vector<TpcCommandBuffer> out;
  for (unsigned tpc = 0; tpc < spec.tpcs; ++tpc) {
    TpcCommandBuffer cb;
    cb.tpc = tpc;
    for (size_t p = tpc; p < parts.size(); p += spec.tpcs) cb.partitions.push_back(parts[p]);
    if (cb.partitions.empty()) continue;
    qman::CommandBufferBuilder b;
    // The upper half of the sync-object address (the descriptor holds the low 32 bits).
    // The descriptor writes carry no barriers (they reach the CFG block in order, pipelined);
    // TPC_CMD's RB waits for them all.
    b.wreg32(static_cast<uint16_t>(tc::kSmBaseAddressHigh), static_cast<uint32_t>(spec.sob_address >> 32),
             qman::kNoBarriers);
    for (size_t i = 0; i < cb.partitions.size(); ++i) {
      const bool last = i + 1 == cb.partitions.size();
      const std::vector<uint32_t> w =
          tpc_descriptor_words(spec, cb.partitions[i], qman::sob_write_value(last ? 1 : 0, true));
      const auto put = [&b, &w](uint32_t offset) {
        b.wreg32(static_cast<uint16_t>(tc::kQmDesc + offset), w[offset / 4], qman::kNoBarriers);
      };
      // Used tensors in full; the others only their tensor_config (0 = not set), so nothing of an
      // earlier launch's descriptors stays valid.
      for (unsigned t = 0; t < kMaxTensors; ++t) {
        const uint32_t base = t * tc::kTensorStride;
        if (t < spec.tensors.size()) {
          for (uint32_t o = 0; o < tc::kTensorStride; o += 4) put(base + o);
        } else {
          put(base + tc::kTensorConfig);
        }
      }
      for (uint32_t o = tc::kDescSyncObjectMessage; o < tc::kDescSize; o += 4) put(o);
      if (spec.icache_prefetch) {
        b.wreg32(static_cast<uint16_t>(tc::kIcacheBaseAddressLow), static_cast<uint32_t>(spec.kernel_address),
                 qman::kNoBarriers);
        b.wreg32(static_cast<uint16_t>(tc::kIcacheBaseAddressHigh),
                 static_cast<uint32_t>(spec.kernel_address >> 32), qman::kNoBarriers);
      }
      // TPC_CMD waits for the previous kernel (EB), then invalidates and asks for the prefetch;
      // TPC_EXECUTE starts this one.
      const bool invalidate = spec.invalidate_caches && (spec.keep_caches_tpcs & (1u << tpc)) == 0;
      const uint32_t command = (invalidate ? regs::tpc_cmd::kAllInvalidate : 0) |
                               (spec.icache_prefetch ? regs::tpc_cmd::kIcachePrefetch32K : 0);
      b.wreg32(static_cast<uint16_t>(tc::kTpcCmd), command, qman::Barriers{true, true, true});
      b.wreg32(static_cast<uint16_t>(tc::kTpcExecute), 1);
    }
    cb.bytes = b.take();
    out.push_back(std::move(cb));
  }
  return out;
}

}  // namespace hpusim::tpc
