// The card's memory system as the HL-205 device map lays it out: the fabric with HBM at
// dram_base, SRAM at sram_base, the CFG register space at cfg_base and the PCIe host window at
// host_phys_base, plus the host memory the device reaches through PCIe. Engines bind their
// initiator sockets as fabric masters.
#pragma once

#include <systemc>

#include <memory>
#include <string>

#include "card_preset.pb.h"
#include "hw/backing_store/backing_store.h"
#include "hw/cfg/cfg_space.h"
#include "hw/fabric/fabric.h"
#include "hw/hbm/hbm_subsystem.h"
#include "hw/pcie/host_memory.h"
#include "hw/pcie/pcie_link.h"
#include "hw/sram/hbm_cache.h"
#include "hw/sram/sram.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

// Conversions from the preset to the models' parameter structs.
hbm::SubsystemConfig hbm_config_from(const preset::Card& card);
SramConfig sram_config_from(const preset::Card& card);
HbmCacheConfig hbm_cache_config_from(const preset::Card& card);
PcieConfig pcie_config_from(const preset::Card& card);
FabricConfig fabric_config_from(const preset::Card& card);

class MemorySystem : public sc_core::sc_module {
 public:
  // `host_memory`: the box's host memory, shared by its cards (it must outlive the card);
  // nullptr: the card has its own (a card built alone).
  MemorySystem(sc_core::sc_module_name name, const preset::Card& card, HostMemory* host_memory = nullptr);

  // Binds an engine's (or a bench generator's) initiator socket as a fabric master.
  template <typename Socket>
  unsigned bind_master(Socket& socket, const std::string& name) {
    return fabric_.bind_master(socket, name, card_.fabric().master_port_bytes_per_cycle());
  }

  const preset::Card& card() const { return card_; }
  Fabric& fabric() { return fabric_; }
  hbm::HbmSubsystem& hbm() { return hbm_; }
  Sram& sram() { return sram_; }
  // The SRAM's HBM cache, when the preset gives it bytes (sram.hbm_cache_bytes); else nullptr.
  HbmCache* hbm_cache() { return hbm_cache_.get(); }
  CfgSpace& cfg() { return cfg_; }
  PcieLink& pcie() { return pcie_; }
  // Registers the blocks' counters under `scope`: hbm, sram (and sram.hbm_cache), pcie, fabric. The fabric lists the
  // targets attached so far.
  void register_stats(stats::Scope scope);
  // Host physical memory as the device sees it through the host window (sparse store plus
  // pinned process buffers).
  HostMemory& host_memory() { return *host_memory_; }
  bool owns_host_memory() const { return own_host_memory_ != nullptr; }

  uint64_t dram_base() const { return card_.memory_map().dram_base(); }
  uint64_t dram_size() const { return hbm_.mapper().capacity_bytes(); }
  uint64_t sram_base() const { return card_.memory_map().sram_base(); }
  uint64_t host_window_base() const { return card_.memory_map().host_phys_base(); }

 private:
  preset::Card card_;
  std::unique_ptr<HostMemory> own_host_memory_;
  HostMemory* host_memory_;
  Fabric fabric_;
  hbm::HbmSubsystem hbm_;
  Sram sram_;
  std::unique_ptr<HbmCache> hbm_cache_;
  CfgSpace cfg_;
  PcieLink pcie_;
};

}  // namespace hpusim::hw
