// A whole card: the memory system plus the command-submission blocks on the engine map
// (arch/regs: Gaudi 1's CFG addresses, extended past its engine counts): the four sync managers,
// every DMA channel, TPC and MME master the preset names with their QMANs, the MMU (one
// translation stage in front of every engine master, one register front end), and optionally
// (CardOptions::device_cpu) the device CPU running the firmware.
#pragma once

#include <systemc>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "firmware/device_cpu.h"
#include "hw/card/memory_system.h"
#include "hw/dma/dma_core.h"
#include "hw/mme/mme_engine.h"
#include "hw/mmu/mmu.h"
#include "hw/mmu/mmu_controller.h"
#include "hw/nic/nic_port.h"
#include "hw/pcie/msi_block.h"
#include "hw/qman/qman.h"
#include "arch/regs/gaudi1_map.h"
#include "hw/syncmgr/sync_manager.h"
#include "hw/tpc/tpc_core.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct CardOptions {
  // The device CPU running the firmware (firmware::DeviceCpu), bound as a fabric master with its
  // registers (CPU_IF, GIC SETSPI, PSOC boot/reset) attached. Off by default: the firmware tests
  // assemble their own next to a bare card.
  bool device_cpu = false;
  // The region the firmware zeroes at boot. 0 bytes = the preset's reserved head of SRAM
  // (memory_map.sram_reserved_bytes at sram_base, which the driver never uses itself).
  uint64_t fw_init_region_base = 0;
  uint32_t fw_init_region_bytes = 0;
  // Where the blocks register their counters as the card builds them (sim/stats): under
  // `stats_prefix` (a box's "card1"; empty for a single card), qman.<name>, dma.ch<n>,
  // syncmgr.<name>, mmu.<master>, tpc.core<n>, mme.engine<n>, hbm, sram, pcie, fabric.
  // nullptr: none. The registry must not be dumped after the card is gone.
  stats::Registry* stats = nullptr;
  std::string stats_prefix;
  // The box's host memory, shared by its cards (must outlive the card; its size must cover the
  // preset's host window). nullptr: the card has its own.
  HostMemory* host_memory = nullptr;
};

class Card : public sc_core::sc_module, private RazwiTarget, private ResetTarget {
 public:
  Card(sc_core::sc_module_name name, const preset::Card& preset);
  Card(sc_core::sc_module_name name, const preset::Card& preset, const CardOptions& options);

  MemorySystem& memory() { return memory_; }
  const preset::Card& preset() const { return memory_.card(); }
  SyncManager& sync_manager(regs::SyncManager which) { return *sync_managers_.at(static_cast<unsigned>(which)); }
  // nullptr when this card has no such QMAN.
  Qman* qman(regs::QmanId id) { return qmans_.at(regs::to_index(id)).get(); }
  // nullptr when this card has no such channel.
  DmaCore* dma_core(unsigned channel) { return channel < dma_cores_.size() ? dma_cores_[channel].get() : nullptr; }
  // nullptr when this card has no such TPC (preset tpc.count).
  TpcCore* tpc_core(unsigned tpc) { return tpc < tpc_cores_.size() ? tpc_cores_[tpc].get() : nullptr; }
  // The MME master `mme` (0, 2, 4, ...: the masters carry the QMANs); nullptr for the slaves or
  // past the preset's masters.
  MmeEngine* mme_engine(unsigned mme) { return mme < mme_engines_.size() ? mme_engines_[mme].get() : nullptr; }
  // nullptr when this card has no such port (preset nic.ports).
  NicPort* nic_port(unsigned port) { return port < nic_ports_.size() ? nic_ports_[port].get() : nullptr; }
  unsigned nic_ports() const { return static_cast<unsigned>(nic_ports_.size()); }
  // MME numbers 0 .. mme_numbers() - 1 (masters and slaves; mme_engine is nullptr for a slave).
  unsigned mme_numbers() const { return static_cast<unsigned>(mme_engines_.size()); }

  MmuController& mmu_controller() { return *mmu_controller_; }
  // The MMU in front of an engine master, by its fabric port name ("dma0", "DMA0_QM", ...), and
  // all of them in the order they were built.
  Mmu* mmu(const std::string& master);
  std::vector<Mmu*> mmus();

  void set_qman_observer(QmanObserver* observer);
  void set_sync_manager_observer(SyncManagerObserver* observer);
  void set_dma_observer(DmaObserver* observer);
  void set_nic_observer(NicObserver* observer);   // every NIC port's
  // Every TPC core's kernels and every MME master's jobs.
  void set_engine_observers(TpcObserver* tpc, MmeObserver* mme);
  // Page faults of every MMU (after the MMU controller has captured them).
  void set_mmu_observer(MmuObserver* observer) { mmu_controller_->set_observer(observer); }
  // nullptr unless built with CardOptions::device_cpu.
  firmware::DeviceCpu* device_cpu() { return device_cpu_.get(); }

  // A modelled hard reset of the command-submission blocks (and of the device CPU, which then
  // boots again, when the card has one).
  void reset();

 private:
  stats::Registry* stats_ = nullptr;   // where blocks register their counters (CardOptions)
  std::string stats_prefix_;
  MemorySystem memory_;
  std::vector<std::unique_ptr<SyncManager>> sync_managers_;
  std::vector<std::unique_ptr<Qman>> qmans_;   // indexed by QmanId
  std::vector<std::unique_ptr<DmaCore>> dma_cores_;
  std::vector<std::unique_ptr<TpcCore>> tpc_cores_;
  std::vector<std::unique_ptr<MmeEngine>> mme_engines_;   // indexed by MME number (slaves empty)
  std::vector<std::unique_ptr<NicPort>> nic_ports_;
  std::unique_ptr<MmuController> mmu_controller_;
  std::vector<std::unique_ptr<Mmu>> mmus_;
  MsiBlock msi_;
  MsiRequestRegister msi_request_;
  std::unique_ptr<firmware::DeviceCpu> device_cpu_;

  // A translation stage bound as the fabric master `master` (plus its page-table walker); the
  // engine binds its own initiator socket to the returned MMU's target.
  Mmu& add_mmu(const std::string& master, uint32_t engine_id, std::function<uint32_t()> props);
  // The scope a block registers its counters in (nullopt without a registry).
  std::optional<stats::Scope> stats_scope(const std::string& path) const;
  void reset_blocks();   // QMANs, sync managers, DMA and TPC cores: what SW_ALL_RST resets besides the CPU
  // The board's wiring of the fabric's RAZWI report and the firmware's SW_ALL_RST.
  void report_razwi(const IllegalAccess& access) override;
  void reset_requested() override;
};

}  // namespace hpusim::hw
