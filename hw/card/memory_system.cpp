#include "hw/card/memory_system.h"

#include "sim/preset/preset.h"

namespace hpusim::hw {

hbm::SubsystemConfig hbm_config_from(const preset::Card& card) {
  const auto& h = card.hbm();
  const auto& t = h.timing();
  hbm::SubsystemConfig c;
  c.organization.stacks = h.stacks();
  c.organization.channels_per_stack = h.channels_per_stack();
  c.organization.pseudo_channels = h.pseudo_channels();
  c.organization.bank_groups = h.bank_groups();
  c.organization.banks_per_group = h.banks_per_group();
  c.organization.rows = h.rows();
  c.organization.columns = h.columns();
  c.organization.pc_width_bits = h.pc_width_bits();
  c.timing.name = t.name();
  c.timing.tck_ps = t.tck_ps();
  c.timing.burst_bytes = t.burst_bytes();
  c.timing.nBL = t.n_bl();
  c.timing.nCL = t.n_cl();
  c.timing.nCWL = t.n_cwl();
  c.timing.nRCDRD = t.n_rcdrd();
  c.timing.nRCDWR = t.n_rcdwr();
  c.timing.nRP = t.n_rp();
  c.timing.nRAS = t.n_ras();
  c.timing.nRC = t.n_rc();
  c.timing.nWR = t.n_wr();
  c.timing.nRTP = t.n_rtp();
  c.timing.nCCDS = t.n_ccds();
  c.timing.nCCDL = t.n_ccdl();
  c.timing.nRRDS = t.n_rrds();
  c.timing.nRRDL = t.n_rrdl();
  c.timing.nFAW = t.n_faw();
  c.timing.nWTRS = t.n_wtrs();
  c.timing.nWTRL = t.n_wtrl();
  c.timing.nRTW = t.n_rtw();
  c.timing.nRFC = t.n_rfc();
  c.timing.nREFI = t.n_refi();
  c.timing.nRFCSB = t.n_rfcsb();
  c.timing.nRREFD = t.n_rrefd();
  c.controller.queue_bursts = h.queue_bursts();
  c.controller.write_queue_bursts = h.write_queue_bursts();
  c.controller.write_high_watermark = h.write_high_watermark_bursts();
  c.controller.write_low_watermark = h.write_low_watermark_bursts();
  c.controller.posted_writes = h.posted_writes();
  c.controller.bank_queue_bursts = h.bank_queue_bursts();
  c.controller.scheduler = h.scheduler() == "bank_round_robin" ? hbm::ControllerConfig::Scheduler::kBankRoundRobin
                                                                : hbm::ControllerConfig::Scheduler::kFrFcfs;
  c.controller.interleave_bytes = h.interleave_bytes();
  c.controller.address_mapping = h.address_mapping();
  c.controller.channel_hash = h.channel_hash();
  c.controller.refresh_enabled = h.refresh_enabled();
  c.controller.refresh_mode = h.refresh_mode() == "all_bank" ? hbm::RefreshMode::kAllBank : hbm::RefreshMode::kPerBank;
  c.controller.self_refresh_after_refi = h.self_refresh_after_refi();
  c.base = card.memory_map().dram_base();
  return c;
}

SramConfig sram_config_from(const preset::Card& card) {
  const auto& s = card.sram();
  SramConfig c;
  c.base = card.memory_map().sram_base();
  c.size_bytes = preset::sram_scratchpad_bytes(card);
  c.banks = s.banks();
  c.bank_width_bytes = s.bank_width_bytes();
  c.interleave_bytes = s.interleave_bytes();
  c.period_ps = period_ps_from_mhz(s.clock_mhz());
  c.latency_cycles = s.latency_cycles();
  return c;
}

HbmCacheConfig hbm_cache_config_from(const preset::Card& card) {
  const auto& s = card.sram();
  HbmCacheConfig c;
  c.cache_bytes = s.hbm_cache_bytes();
  c.ways = s.hbm_cache_ways();
  c.line_bytes = s.interleave_bytes();
  c.data_offset = preset::sram_scratchpad_bytes(card);
  c.period_ps = period_ps_from_mhz(s.clock_mhz());
  return c;
}

PcieConfig pcie_config_from(const preset::Card& card) {
  const auto& p = card.pcie();
  PcieConfig c;
  c.generation = p.generation();
  c.lanes = p.lanes();
  c.max_payload_bytes = p.max_payload_bytes();
  c.max_read_request_bytes = p.max_read_request_bytes();
  c.tlp_overhead_bytes = p.tlp_overhead_bytes();
  c.dllp_overhead_pct = p.dllp_overhead_pct();
  c.link_latency_ps = Picoseconds{p.link_latency_ns()} * 1000;
  c.host_memory_latency_ps = Picoseconds{p.host_memory_latency_ns()} * 1000;
  c.host_window_base = card.memory_map().host_phys_base();
  c.host_window_size = card.memory_map().host_phys_size();
  return c;
}

FabricConfig fabric_config_from(const preset::Card& card) {
  FabricConfig c;
  c.period_ps = period_ps_from_mhz(card.fabric().clock_mhz());
  c.latency_cycles = card.fabric().latency_cycles();
  return c;
}

MemorySystem::MemorySystem(sc_core::sc_module_name name, const preset::Card& card, HostMemory* host_memory)
    : sc_module(name),
      card_(card),
      own_host_memory_(host_memory != nullptr
                           ? nullptr
                           : std::make_unique<HostMemory>("host_memory", card.memory_map().host_phys_size())),
      host_memory_(host_memory != nullptr ? host_memory : own_host_memory_.get()),
      fabric_("fabric", fabric_config_from(card)),
      hbm_("hbm", hbm_config_from(card)),
      sram_("sram", sram_config_from(card)),
      cfg_("cfg", card.memory_map().cfg_base(), card.memory_map().cfg_size(),
           period_ps_from_mhz(card.fabric().clock_mhz()) * card.fabric().cfg_access_cycles()),
      pcie_("pcie", pcie_config_from(card), *host_memory_) {
  require_picosecond_resolution();
  const auto& map = card.memory_map();
  const auto& f = card.fabric();
  if (card.sram().hbm_cache_bytes() > 0) {
    // Every HBM access goes through the cache: its port is the SRAM's (hits come from the banks;
    // the HBM behind bounds the misses).
    hbm_cache_ = std::make_unique<HbmCache>("hbm_cache", hbm_cache_config_from(card), sram_);
    hbm_cache_->to_hbm.bind(hbm_.socket);
    fabric_.bind_target(hbm_cache_->socket, "hbm", f.sram_port_bytes_per_cycle(), map.dram_base(),
                        hbm_.mapper().capacity_bytes());
  } else {
    fabric_.bind_target(hbm_.socket, "hbm", double(f.hbm_port_bytes_per_cycle()) * card.hbm().stacks(),
                        map.dram_base(), hbm_.mapper().capacity_bytes());
  }
  fabric_.bind_target(sram_.socket, "sram", f.sram_port_bytes_per_cycle(), map.sram_base(),
                      preset::sram_scratchpad_bytes(card));
  fabric_.bind_target(cfg_.socket, "cfg", f.cfg_port_bytes_per_cycle(), map.cfg_base(), map.cfg_size());
  fabric_.bind_target(pcie_.device_side, "pcie", f.pcie_port_bytes_per_cycle(), map.host_phys_base(),
                      map.host_phys_size());
  fabric_.bind_master(pcie_.to_fabric, "pcie_inbound", f.pcie_port_bytes_per_cycle());
}

void MemorySystem::register_stats(stats::Scope scope) {
  hbm_.register_stats(scope.scope("hbm"));
  sram_.register_stats(scope.scope("sram"));
  if (hbm_cache_) hbm_cache_->register_stats(scope.scope("sram").scope("hbm_cache"));
  pcie_.register_stats(scope.scope("pcie"));
  fabric_.register_stats(scope.scope("fabric"));
}

}  // namespace hpusim::hw
