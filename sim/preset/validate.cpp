// Timing-set resolution and the checks that every field the models need is present and sane.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>

#include "arch/regs/gaudi1_map.h"
#include "sim/preset/preset.h"

namespace hpusim::preset {
namespace {

// What the kernel library's kernels are built for (synapse/tpc_kernels: every built-in preset's TPC).
constexpr uint32_t kKernelLibraryVlmBytes = 80 * 1024, kKernelLibrarySlmBytes = 1024;

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Every singular field of every sub-message must be set: a preset states all of its parameters.
void require_all_fields(const Message& message, const std::string& prefix) {
  const auto* descriptor = message.GetDescriptor();
  const auto* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    if (field->is_repeated()) continue;
    if (prefix.empty() && field->name() == "base") continue;   // resolved by load_preset, then cleared
    if (!reflection->HasField(message, field)) {
      throw PresetError("preset '" + (prefix.empty() ? std::string("card") : prefix) + "' is missing field " + path);
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      require_all_fields(reflection->GetMessage(message, field), path);
    }
  }
}

void require(bool condition, const std::string& message) {
  if (!condition) throw PresetError("invalid preset: " + message);
}

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

void require_positive(uint64_t v, const std::string& path) {
  require(v > 0, path + " must be greater than 0");
}

void require_power_of_two(uint64_t v, const std::string& path) {
  require(power_of_two(v), path + " = " + std::to_string(v) + " must be a power of two");
}

uint64_t hbm_capacity(const HbmConfig& h) {
  return uint64_t{h.stacks()} * h.channels_per_stack() * h.pseudo_channels() * h.bank_groups() *
         h.banks_per_group() * h.rows() * h.columns() * h.timing().burst_bytes();
}

struct Region {
  const char* name;
  uint64_t base;
  uint64_t size;
};

}  // namespace

void resolve_and_validate(Card& card) {
  if (card.has_base()) {
    throw PresetError("preset '" + card.name() + "' names base '" + card.base() +
                      "', which only load_preset resolves");
  }
  HbmConfig& hbm = *card.mutable_hbm();
  if (hbm.has_timing_set()) {
    const HbmTimingLibrary library = builtin_timing_sets();
    const HbmTimingSet* named = nullptr;
    std::string known;
    for (const HbmTimingSet& set : library.timing_set()) {
      known += (known.empty() ? "" : ", ") + set.name();
      if (set.name() == hbm.timing_set()) named = &set;
    }
    if (named == nullptr) {
      throw PresetError("unknown hbm.timing_set '" + hbm.timing_set() + "' (known: " + known + ")");
    }
    HbmTimingSet resolved = *named;
    resolved.MergeFrom(hbm.timing());  // explicit fields override the named set
    if (!hbm.timing().has_name()) resolved.set_name(named->name());
    *hbm.mutable_timing() = resolved;
  } else if (!hbm.has_timing()) {
    throw PresetError("preset 'hbm' needs timing_set or a complete hbm.timing");
  } else {
    hbm.set_timing_set(hbm.timing().name());
  }
  require_all_fields(card, "");

  const auto& clocks = card.clocks();
  require_positive(clocks.tpc_mhz(), "clocks.tpc_mhz");
  require_positive(clocks.mme_mhz(), "clocks.mme_mhz");
  require_positive(clocks.fabric_mhz(), "clocks.fabric_mhz");
  require_positive(clocks.dma_mhz(), "clocks.dma_mhz");
  require_positive(clocks.cpu_mhz(), "clocks.cpu_mhz");
  require_positive(clocks.nic_mhz(), "clocks.nic_mhz");
  require(card.generation() >= 1 && card.generation() <= 3, "generation must be 1, 2 or 3");

  require_positive(card.tpc().count(), "tpc.count");
  // A generation 1 card is the Gaudi 1 engine map; later generations extend it (arch/regs,
  // "Beyond Gaudi 1"). What the map cannot hold is refused, naming the field.
  const bool gaudi1 = card.generation() == 1;
  const std::string limit = gaudi1 ? "a generation 1 card has at most " : "the engine map holds at most ";
  const std::string map_name = gaudi1 ? " (the Gaudi 1 engine map)" : "";
  const unsigned max_tpcs = gaudi1 ? regs::kGaudi1TpcEngines : regs::kMaxTpcEngines;
  const unsigned max_masters = gaudi1 ? regs::kGaudi1MmeEngines / 2 : regs::kMaxMmeMasters;
  const unsigned max_dma = gaudi1 ? regs::kGaudi1DmaChannels : regs::kMaxDmaChannels;
  require(card.tpc().count() <= max_tpcs, "tpc.count = " + std::to_string(card.tpc().count()) + ": " + limit +
                                              std::to_string(max_tpcs) + " TPCs" + map_name);
  require(card.mme().masters() <= max_masters, "mme.masters = " + std::to_string(card.mme().masters()) + ": " +
                                                   limit + std::to_string(max_masters) + " MME masters" + map_name);
  const unsigned max_nics = gaudi1 ? regs::kGaudi1NicEngines : regs::kMaxNicEngines;
  require(card.nic().ports() <= max_nics, "nic.ports = " + std::to_string(card.nic().ports()) + ": " + limit +
                                              std::to_string(max_nics) + " NIC ports" + map_name);
  require(card.dma().pci_channels() == regs::kNumPciDmaChannels,
          "dma.pci_channels = " + std::to_string(card.dma().pci_channels()) + ": a card has " +
              std::to_string(regs::kNumPciDmaChannels) + " PCI DMA channels (DMA0 and DMA1, the external queues)");
  require(card.dma().pci_channels() + card.dma().internal_channels() <= max_dma,
          "dma.pci_channels + dma.internal_channels = " +
              std::to_string(card.dma().pci_channels() + card.dma().internal_channels()) + ": " + limit +
              std::to_string(max_dma) + " DMA channels" + map_name);
  require(card.tpc().vector_bits() >= 256 && card.tpc().vector_bits() <= 16384 && power_of_two(card.tpc().vector_bits()),
          "tpc.vector_bits = " + std::to_string(card.tpc().vector_bits()) +
              ": the TPC's vector width must be a power of two in 256 .. 16384 bits");
  // The kernel library's kernels are built for the local memories every built-in preset gives:
  // refused below that, rather than faulting in the first kernel that reaches past them.
  require(card.tpc().vlm_bytes() >= kKernelLibraryVlmBytes && card.tpc().vlm_bytes() % (card.tpc().vector_bits() / 8) == 0,
          "tpc.vlm_bytes = " + std::to_string(card.tpc().vlm_bytes()) +
              ": the kernel library's kernels are built for 80 KB of VLM (embedding backward's accumulators "
              "take 64 KB of it); at least 81920, a multiple of the vector's bytes");
  require(card.tpc().slm_bytes() >= kKernelLibrarySlmBytes && card.tpc().slm_bytes() % 4 == 0,
          "tpc.slm_bytes = " + std::to_string(card.tpc().slm_bytes()) +
              ": the kernel library's kernels use up to 1 KB of SLM (embedding backward's bucket counters); at "
              "least 1024, a multiple of 4");
  require_positive(card.tpc().vpu_latency(), "tpc.vpu_latency");
  require_positive(card.tpc().spu_latency(), "tpc.spu_latency");
  require_positive(card.tpc().special_latency(), "tpc.special_latency");
  require_positive(card.tpc().local_latency(), "tpc.local_latency");
  require(power_of_two(card.tpc().icache_line_bytes()) && card.tpc().icache_line_bytes() >= 32,
          "tpc.icache_line_bytes must be a power of two >= 32 (one bundle)");
  require_positive(card.tpc().icache_fill_lines(), "tpc.icache_fill_lines");
  require_positive(card.tpc().max_outstanding_loads(), "tpc.max_outstanding_loads");
  require_positive(card.mme().read_ports(), "mme.read_ports");
  require_positive(card.mme().write_ports(), "mme.write_ports");
  require_positive(card.tpc().prefetch_hit_latency(), "tpc.prefetch_hit_latency");
  require_positive(card.tpc().prefetch_stale_cycles(), "tpc.prefetch_stale_cycles");
  require_positive(card.tpc().launch_queue_depth(), "tpc.launch_queue_depth");
  require_positive(card.tpc().max_posted_writes(), "tpc.max_posted_writes");
  require_positive(card.tpc().quantum_cycles(), "tpc.quantum_cycles");
  require(card.mme().max_request_bytes() >= 4, "mme.max_request_bytes must be at least 4");
  require_positive(card.mme().max_posted_writes(), "mme.max_posted_writes");
  require_positive(card.mme().launch_queue_depth(), "mme.launch_queue_depth");
  require(card.mme().f32_array_cycles_per_k() >= 1 && card.mme().f32_array_cycles_per_k() <= 64,
          "mme.f32_array_cycles_per_k must be between 1 and 64");
  require_positive(card.driver().tdr_timeout_ms(), "driver.tdr_timeout_ms");
  const auto& nic = card.nic();
  require_positive(nic.gbps_per_port(), "nic.gbps_per_port");
  require(nic.mtu_bytes() >= 256 && nic.mtu_bytes() <= 65536, "nic.mtu_bytes must be between 256 and 65536");
  require_positive(nic.rx_buffer_packets(), "nic.rx_buffer_packets");
  require_positive(nic.tx_window_packets(), "nic.tx_window_packets");
  require_positive(nic.queue_depth(), "nic.queue_depth");
  require(card.tpc().icache_bytes() >= card.tpc().icache_line_bytes() && card.tpc().icache_bytes() % card.tpc().icache_line_bytes() == 0,
          "tpc.icache_bytes must be a multiple of tpc.icache_line_bytes");
  require_positive(card.mme().cores(), "mme.cores");
  require(card.mme().masters() > 0 && card.mme().masters() <= card.mme().cores(),
          "mme.masters must be between 1 and mme.cores");
  require_positive(card.mme().array_rows(), "mme.array_rows");
  require_positive(card.mme().array_cols(), "mme.array_cols");

  const auto& sram = card.sram();
  require_positive(sram.size_bytes(), "sram.size_bytes");
  require_power_of_two(sram.banks(), "sram.banks");
  require_power_of_two(sram.bank_width_bytes(), "sram.bank_width_bytes");
  require_power_of_two(sram.interleave_bytes(), "sram.interleave_bytes");
  require(sram.interleave_bytes() >= sram.bank_width_bytes(), "sram.interleave_bytes must be >= sram.bank_width_bytes");
  require_positive(sram.clock_mhz(), "sram.clock_mhz");
  require_power_of_two(sram.hbm_cache_ways(), "sram.hbm_cache_ways");
  if (sram.hbm_cache_bytes() > 0) {
    const uint64_t set_bytes = uint64_t{sram.hbm_cache_ways()} * sram.interleave_bytes();
    require(sram.hbm_cache_bytes() % set_bytes == 0,
            "sram.hbm_cache_bytes = " + std::to_string(sram.hbm_cache_bytes()) +
                " must be a multiple of sram.hbm_cache_ways x sram.interleave_bytes (" + std::to_string(set_bytes) +
                ": whole sets of lines)");
    require(sram.hbm_cache_bytes() < sram.size_bytes(),
            "sram.hbm_cache_bytes = " + std::to_string(sram.hbm_cache_bytes()) +
                " must leave some of sram.size_bytes = " + std::to_string(sram.size_bytes()) +
                " as scratchpad (the driver keeps its reserved bytes there)");
  }

  require_positive(hbm.stacks(), "hbm.stacks");  // any count: the address mapper interleaves by modulo
  require_power_of_two(hbm.channels_per_stack(), "hbm.channels_per_stack");
  require_power_of_two(hbm.pseudo_channels(), "hbm.pseudo_channels");
  require_power_of_two(hbm.bank_groups(), "hbm.bank_groups");
  require_power_of_two(hbm.banks_per_group(), "hbm.banks_per_group");
  require_power_of_two(hbm.rows(), "hbm.rows");
  require_power_of_two(hbm.columns(), "hbm.columns");
  const auto& t = hbm.timing();
  require_power_of_two(t.burst_bytes(), "hbm.timing.burst_bytes");
  require_power_of_two(hbm.interleave_bytes(), "hbm.interleave_bytes");
  require(hbm.interleave_bytes() >= t.burst_bytes() &&
              hbm.interleave_bytes() <= uint64_t{t.burst_bytes()} * hbm.columns(),
          "hbm.interleave_bytes must be between one burst and one row");
  require_positive(t.tck_ps(), "hbm.timing.tck_ps");
  require_positive(t.n_bl(), "hbm.timing.n_bl");
  require(t.n_ccds() >= t.n_bl(), "hbm.timing.n_ccds must be >= n_bl (one burst at a time on the data bus)");
  require(t.n_ccdl() >= t.n_ccds(), "hbm.timing.n_ccdl must be >= n_ccds");
  require(t.n_rrdl() >= t.n_rrds(), "hbm.timing.n_rrdl must be >= n_rrds");
  require(t.n_rc() >= t.n_ras(), "hbm.timing.n_rc must be >= n_ras");
  require(t.n_refi() > t.n_rfc(), "hbm.timing.n_refi must be > n_rfc");
  require(t.n_refi() > t.n_rfcsb(), "hbm.timing.n_refi must be > n_rfcsb");
  require(hbm.refresh_mode() == "per_bank" || hbm.refresh_mode() == "all_bank",
          "hbm.refresh_mode = '" + hbm.refresh_mode() + "' must be per_bank or all_bank");
  require(hbm.self_refresh_after_refi() != 1,
          "hbm.self_refresh_after_refi = 1: it must be 0 (never) or at least 2 (every bank refreshed before the channel stops)");
  const uint32_t chunk_bursts = t.burst_bytes() ? hbm.interleave_bytes() / t.burst_bytes() : 0;
  require(hbm.queue_bursts() >= chunk_bursts && hbm.queue_bursts() > 0,
          "hbm.queue_bursts = " + std::to_string(hbm.queue_bursts()) + " must hold one interleave chunk (" +
              std::to_string(chunk_bursts) + " bursts)");
  require(hbm.write_queue_bursts() == 0 || hbm.write_queue_bursts() >= chunk_bursts,
          "hbm.write_queue_bursts = " + std::to_string(hbm.write_queue_bursts()) +
              " must be 0 (shared queue) or hold one interleave chunk (" + std::to_string(chunk_bursts) + " bursts)");
  require(hbm.bank_queue_bursts() == 0 || hbm.bank_queue_bursts() >= chunk_bursts,
          "hbm.bank_queue_bursts = " + std::to_string(hbm.bank_queue_bursts()) +
              " must be 0 (one-level queue) or hold one interleave chunk (" + std::to_string(chunk_bursts) + " bursts)");
  require(hbm.scheduler() == "fr_fcfs" || hbm.scheduler() == "bank_round_robin",
          "hbm.scheduler = '" + hbm.scheduler() + "' must be fr_fcfs or bank_round_robin");
  const uint32_t write_capacity = hbm.write_queue_bursts() ? hbm.write_queue_bursts() : hbm.queue_bursts();
  require(hbm.write_low_watermark_bursts() < hbm.write_high_watermark_bursts() &&
              hbm.write_high_watermark_bursts() <= write_capacity,
          "hbm watermarks need write_low_watermark_bursts < write_high_watermark_bursts <= the write capacity (" +
              std::to_string(write_capacity) + " bursts)");

  const auto& pcie = card.pcie();
  require(pcie.generation() >= 3 && pcie.generation() <= 6, "pcie.generation must be 3, 4, 5 or 6");
  require(pcie.lanes() == 1 || pcie.lanes() == 2 || pcie.lanes() == 4 || pcie.lanes() == 8 || pcie.lanes() == 16,
          "pcie.lanes must be 1, 2, 4, 8 or 16");
  require(power_of_two(pcie.max_payload_bytes()) && pcie.max_payload_bytes() >= 128 && pcie.max_payload_bytes() <= 4096,
          "pcie.max_payload_bytes must be a power of two in [128, 4096]");
  require(power_of_two(pcie.max_read_request_bytes()) && pcie.max_read_request_bytes() >= 128 &&
              pcie.max_read_request_bytes() <= 4096,
          "pcie.max_read_request_bytes must be a power of two in [128, 4096]");
  require(pcie.dllp_overhead_pct() >= 0 && pcie.dllp_overhead_pct() < 50, "pcie.dllp_overhead_pct must be in [0, 50)");

  const auto& fabric = card.fabric();
  require_positive(fabric.clock_mhz(), "fabric.clock_mhz");
  require_positive(fabric.master_port_bytes_per_cycle(), "fabric.master_port_bytes_per_cycle");
  require_positive(fabric.hbm_port_bytes_per_cycle(), "fabric.hbm_port_bytes_per_cycle");
  require_positive(fabric.sram_port_bytes_per_cycle(), "fabric.sram_port_bytes_per_cycle");
  require_positive(fabric.pcie_port_bytes_per_cycle(), "fabric.pcie_port_bytes_per_cycle");
  require_positive(fabric.cfg_port_bytes_per_cycle(), "fabric.cfg_port_bytes_per_cycle");

  const auto& dma = card.dma();
  require(power_of_two(dma.max_burst_bytes()) && dma.max_burst_bytes() >= 8, "dma.max_burst_bytes must be a power of two >= 8");
  require_positive(dma.outstanding(), "dma.outstanding");
  require_positive(dma.pci_outstanding(), "dma.pci_outstanding");
  require_positive(dma.posted_writes(), "dma.posted_writes");
  require_positive(dma.queue_depth(), "dma.queue_depth");

  const auto& cs = card.command_submission();
  require_positive(cs.cp_packet_cycles(), "command_submission.cp_packet_cycles");
  require(cs.cp_fetch_bytes() >= 16 && power_of_two(cs.cp_fetch_bytes()),
          "command_submission.cp_fetch_bytes must be a power of two >= 16");
  require_positive(cs.lower_cp_fifo(), "command_submission.lower_cp_fifo");
  require_positive(cs.cp_fetch_window(), "command_submission.cp_fetch_window");

  const auto& mmu = card.mmu();
  require_positive(mmu.tlb_entries(), "mmu.tlb_entries");
  require_positive(mmu.lookup_cycles(), "mmu.lookup_cycles");
  require_positive(mmu.config_cycles(), "mmu.config_cycles");
  require_positive(mmu.invalidate_cycles(), "mmu.invalidate_cycles");

  const auto& map = card.memory_map();
  std::vector<Region> regions = {
      {"DRAM", map.dram_base(), hbm_capacity(hbm)},
      {"SRAM", map.sram_base(), sram_scratchpad_bytes(card)},
      {"CFG", map.cfg_base(), map.cfg_size()},
      {"host window", map.host_phys_base(), map.host_phys_size()},
  };
  for (const Region& r : regions) {
    require(r.size > 0 && r.base + r.size > r.base, std::string(r.name) + " region is empty or wraps around");
  }
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
  for (size_t i = 1; i < regions.size(); ++i) {
    require(regions[i - 1].base + regions[i - 1].size <= regions[i].base,
            std::string("memory_map: ") + regions[i - 1].name + " overlaps " + regions[i].name);
  }
  require(map.dram_user_base() >= map.dram_base() && map.dram_user_base() < map.dram_base() + hbm_capacity(hbm),
          "memory_map.dram_user_base must lie inside DRAM");
  require(map.sram_reserved_bytes() < sram_scratchpad_bytes(card),
          "memory_map.sram_reserved_bytes must be < the SRAM scratchpad (sram.size_bytes - sram.hbm_cache_bytes)");
}

}  // namespace hpusim::preset
