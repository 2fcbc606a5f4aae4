#include "hw/card/card.h"

#include <algorithm>

#include "arch/cpucp/cpucp.h"
#include "sim/preset/preset.h"

namespace hpusim::hw {
namespace {

bool card_has_qman(const preset::Card& preset, regs::QmanId id) {
  const unsigned engine = regs::qman_engine(id);
  switch (regs::qman_family(id)) {
    case regs::QmanFamily::Dma:
      return engine < preset.dma().pci_channels() + preset.dma().internal_channels();
    case regs::QmanFamily::Mme:
      return engine % 2 == 0 && engine / 2 < preset.mme().masters();   // the masters carry the QMANs
    case regs::QmanFamily::Tpc:
      return engine < preset.tpc().count();
    case regs::QmanFamily::Nic:
      return engine < preset.nic().ports();
  }
  return false;
}

}  // namespace

Card::Card(sc_core::sc_module_name name, const preset::Card& preset) : Card(name, preset, CardOptions{}) {}

Card::Card(sc_core::sc_module_name name, const preset::Card& preset, const CardOptions& options)
    : sc_module(name),
      stats_(options.stats),
      stats_prefix_(options.stats_prefix),
      memory_("memory", preset, options.host_memory),
      msi_(memory_.pcie(), regs::pcie::kMsiEntries),
      msi_request_(memory_.pcie()) {
  memory_.cfg().attach("PCIE_MSI", regs::cfg_address(regs::pcie::kMsiIntr0), 4 * regs::pcie::kMsiEntries, msi_);
  memory_.cfg().attach("PCIE_CORE.MSI_REQ", regs::cfg_address(regs::pcie::kCoreMsiReq), 4, msi_request_);

  const auto& cs = preset.command_submission();
  const Picoseconds cp_cycle = period_ps_from_mhz(preset.clocks().dma_mhz());

  MmuControllerConfig mmu_config;
  mmu_config.period_ps = cp_cycle;
  mmu_config.config_cycles = preset.mmu().config_cycles();
  mmu_config.invalidate_cycles = preset.mmu().invalidate_cycles();
  mmu_controller_ = std::make_unique<MmuController>("mmu", mmu_config);
  memory_.cfg().attach("MMU", regs::cfg_address(MmuController::kCfgOffset), MmuController::kBlockBytes,
                       *mmu_controller_);

  for (unsigned i = 0; i < 4; ++i) {
    const auto which = static_cast<regs::SyncManager>(i);
    SyncManagerConfig config;
    config.name = std::string("sm_") + regs::sync_manager_name(which);
    config.layout.sob_obj = regs::sm::kObjsSobObj0;
    config.layout.mon_pay_addrl = regs::sm::kObjsMonPayAddrL0;
    config.layout.mon_pay_addrh = regs::sm::kObjsMonPayAddrH0;
    config.layout.mon_pay_data = regs::sm::kObjsMonPayData0;
    config.layout.mon_arm = regs::sm::kObjsMonArm0;
    config.layout.mon_status = regs::sm::kObjsMonStatus0;
    config.layout.block_bytes = regs::sm::kObjsSize;
    config.payload_latency_ps = Picoseconds{cs.monitor_payload_cycles()} * cp_cycle;
    auto sm = std::make_unique<SyncManager>(config);
    if (const auto scope = stats_scope(std::string("syncmgr.") + stats::path_component(regs::sync_manager_name(which)))) {
      sm->register_stats(*scope);
    }
    memory_.cfg().attach(config.name, regs::cfg_address(regs::sm_objs_base(which)), sm->size_bytes(), *sm);
    memory_.bind_master(sm->payload_socket, config.name);
    sync_managers_.push_back(std::move(sm));
  }

  // Every engine the preset names, on the engine map (arch/regs; the preset validation refused
  // what the map cannot hold).
  const uint32_t channels = preset.dma().pci_channels() + preset.dma().internal_channels();
  for (uint32_t ch = 0; ch < channels; ++ch) {
    auto core = std::make_unique<DmaCore>(dma_core_config_from(preset, ch));
    if (const auto scope = stats_scope("dma.ch" + std::to_string(ch))) core->register_stats(*scope);
    memory_.cfg().attach(core->config().name, regs::cfg_address(regs::dma_core_base(ch)), DmaCore::size_bytes(), *core);
    DmaCore* engine = core.get();
    core->bus().socket.bind(
        add_mmu(core->config().name, regs::engine_id(regs::dma_qman(ch)), [engine] { return engine->non_secure_props(); }).target);
    dma_cores_.push_back(std::move(core));
  }

  // The TPCs: a CFG block each, a fabric master through its own MMU (MMU props from the TPC's
  // ARUSER_LO, where the driver writes the ASID), and the kernel-error interrupt wired to the
  // device CPU's GIC (TPCn_KRN_ERR).
  const uint32_t tpcs = preset.tpc().count();
  for (uint32_t n = 0; n < tpcs; ++n) {
    auto core = std::make_unique<TpcCore>(tpc_core_params_from(preset, n));
    if (const auto scope = stats_scope("tpc.core" + std::to_string(n))) core->register_stats(*scope);
    memory_.cfg().attach(core->params().name, regs::cfg_address(regs::tpc_cfg_base(n)), TpcCore::size_bytes(), *core);
    TpcCore* engine = core.get();
    core->bus().socket.bind(
        add_mmu(core->params().name, regs::engine_id(regs::tpc_qman(n)), [engine] { return engine->mmu_props(); }).target);
    tpc_cores_.push_back(std::move(core));
  }

  // The MME masters (the even MMEs carry the QMANs; each engine models its master core with its
  // slave): a CTRL block each, a fabric master through its own MMU, and the job-error interrupt
  // (MMEn_ERR, hpusim's event).
  const uint32_t masters = preset.mme().masters();
  mme_engines_.resize(2 * masters);
  for (uint32_t m = 0; m < masters; ++m) {
    const unsigned mme = 2 * m;
    MmeEngineParams params = mme_engine_params_from(preset, m);
    params.index = mme;
    params.name = "mme" + std::to_string(mme);
    auto engine = std::make_unique<MmeEngine>(params);
    if (const auto scope = stats_scope("mme.engine" + std::to_string(mme))) engine->register_stats(*scope);
    memory_.cfg().attach(params.name, regs::cfg_address(regs::mme_ctrl_base(mme)), MmeEngine::size_bytes(), *engine);
    MmeEngine* e = engine.get();
    for (size_t i = 0; i < engine->port_count(); ++i) {
      const std::string port = params.name + "_" + engine->port(i).basename();
      engine->port(i).socket.bind(add_mmu(port, regs::engine_id(regs::mme_qman(mme)), [e] { return e->mmu_props(); }).target);
    }
    mme_engines_[mme] = std::move(engine);
  }

  // The NIC ports: hpusim's port block above each NIC QMAN, a fabric master through its own MMU.
  // Their links are joined by the box (sim/platform), per its topology.
  for (uint32_t n = 0; n < preset.nic().ports(); ++n) {
    auto port = std::make_unique<NicPort>(nic_port_config_from(preset, n));
    if (const auto scope = stats_scope("nic.port" + std::to_string(n))) port->register_stats(*scope);
    memory_.cfg().attach(port->config().name, regs::cfg_address(regs::nic_port_base(n)), NicPort::size_bytes(), *port);
    NicPort* engine = port.get();
    port->bus().socket.bind(
        add_mmu(port->config().name, regs::engine_id(regs::nic_qman(n)), [engine] { return engine->non_secure_props(); }).target);
    nic_ports_.push_back(std::move(port));
  }

  qmans_.resize(regs::kNumQmans);
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    const regs::QmanId id = regs::qman_from_index(i);
    if (!card_has_qman(preset, id)) continue;
    QmanConfig config;
    config.id = id;
    config.block_address = regs::cfg_address(regs::qman_base(id));
    config.engine_block_address = regs::cfg_address(regs::qman_engine_block(id).value_or(regs::qman_ldma_base(id)));
    config.ldma_block_address = regs::cfg_address(regs::qman_ldma_base(id));
    config.cycle_ps = cp_cycle;
    config.packet_cycles = cs.cp_packet_cycles();
    config.fetch_bytes = cs.cp_fetch_bytes();
    config.fetch_window = cs.cp_fetch_window();
    config.lower_cp_fifo = cs.lower_cp_fifo();
    // The engine barrier (EB) of a DMA QMAN waits for that channel's DMA core.
    if (regs::qman_family(id) == regs::QmanFamily::Dma && regs::qman_engine(id) < dma_cores_.size()) {
      config.engine = dma_cores_[regs::qman_engine(id)].get();
    }
    // The EB of a TPC QMAN waits for its TPC core (the TPC_CMD write before the next TPC_EXECUTE).
    if (regs::qman_family(id) == regs::QmanFamily::Tpc && regs::qman_engine(id) < tpc_cores_.size()) {
      config.engine = tpc_cores_[regs::qman_engine(id)].get();
    }
    // The EB of an MME QMAN waits for its MME engine.
    if (regs::qman_family(id) == regs::QmanFamily::Mme && regs::qman_engine(id) < mme_engines_.size() &&
        mme_engines_[regs::qman_engine(id)]) {
      config.engine = mme_engines_[regs::qman_engine(id)].get();
    }
    // The EB of a NIC QMAN waits for its port's operations.
    if (regs::qman_family(id) == regs::QmanFamily::Nic && regs::qman_engine(id) < nic_ports_.size()) {
      config.engine = nic_ports_[regs::qman_engine(id)].get();
      config.commit_register = regs::nic_port::kCommit;
    }
    auto qman = std::make_unique<Qman>(regs::qman_name(id), config);
    if (const auto scope = stats_scope("qman." + stats::path_component(regs::qman_name(id)))) qman->register_stats(*scope);
    memory_.cfg().attach(regs::qman_name(id), config.block_address, Qman::kBlockBytes, *qman);
    Qman* cp_owner = qman.get();
    qman->bus().socket.bind(
        add_mmu(regs::qman_name(id), regs::engine_id(id), [cp_owner] { return cp_owner->non_secure_props(0); }).target);
    qmans_[i] = std::move(qman);
  }

  // The memory system last: its fabric lists every target attached by now.
  if (const auto scope = stats_scope("")) memory_.register_stats(*scope);

  if (options.device_cpu) {
    firmware::DeviceCpuConfig config = firmware::device_cpu_config_from(preset);
    config.info.dram_size = memory_.dram_size();
    fw_if::cpucp::set_make_up(config.info, static_cast<unsigned>(tpc_cores_.size()),
                              static_cast<unsigned>(dma_cores_.size()), masters);
    config.info.tpc_vector_bits = static_cast<uint16_t>(preset.tpc().vector_bits());
    config.info.tpc_prefetch_entries = preset.tpc().prefetch_entries();
    config.info.nic_ports_mask = nic_ports_.size() >= 64 ? ~0ull : (1ull << nic_ports_.size()) - 1;
    config.info.mme_geometries = static_cast<uint8_t>(std::max(1, preset.mme().geometries_size()));
    for (const auto& engine : mme_engines_)
      if (engine) {
        config.info.mme_super_tile_rows = engine->super_tile_rows();
        break;
      }
    const auto& map = preset.memory_map();
    config.info.memory_map = {map.dram_base(), map.dram_user_base(), map.sram_base(), preset::sram_scratchpad_bytes(preset),
                              map.sram_reserved_bytes()};
    if (options.fw_init_region_bytes != 0) {
      config.init_region_base = options.fw_init_region_base;
      config.init_region_bytes = options.fw_init_region_bytes;
    } else {
      config.init_region_base = map.sram_base();
      config.init_region_bytes = static_cast<uint32_t>(map.sram_reserved_bytes());
      if (config.init_region_bytes == 0) config.init_region_bytes = 0x80;
    }
    device_cpu_ = std::make_unique<firmware::DeviceCpu>("device_cpu", config);
    // The wires into the device CPU: each engine's error interrupt and the MMU's page fault to its
    // GIC SPI; an access no target serves (RAZWI) through the card, which names the engine; and
    // SW_ALL_RST from the firmware back to the card.
    mmu_controller_->interrupt().bind(*device_cpu_, fw_if::event::spi_of(fw_if::event::kMmuPageFault));
    for (unsigned n = 0; n < tpc_cores_.size(); ++n) {
      tpc_cores_[n]->interrupt().bind(*device_cpu_, fw_if::event::spi_of(fw_if::event::tpc_krn_err(n)));
    }
    for (unsigned mme = 0; mme < mme_engines_.size(); ++mme) {
      if (mme_engines_[mme]) mme_engines_[mme]->interrupt().bind(*device_cpu_, fw_if::event::spi_of(fw_if::event::mme_err(mme)));
    }
    memory_.fabric().razwi().bind(*this);
    memory_.bind_master(device_cpu_->bus().socket, "device_cpu");
    device_cpu_->attach_registers(memory_.cfg());
    // SW_ALL_RST: the firmware's reset process resets the rest of the card, then itself.
    device_cpu_->reset_out().bind(*this);
  }
}

// A RAZWI: the firmware reports it with the address, the direction and the initiator's engine id
// (0xFFFF for masters that are not engines).
void Card::report_razwi(const IllegalAccess& access) {
  uint64_t engine = 0xFFFF;
  for (const auto& m : mmus_) {
    if (m->config().engine == access.master) engine = m->config().engine_id;
  }
  device_cpu_->report_event(fw_if::event::kRazwiOrAdc, {access.address, access.is_write ? 1u : 0u, engine});
}

void Card::reset_requested() { reset_blocks(); }

std::optional<stats::Scope> Card::stats_scope(const std::string& path) const {
  if (stats_ == nullptr) return std::nullopt;
  std::string full = stats_prefix_;
  if (!path.empty()) full += (full.empty() ? "" : ".") + path;
  return stats::Scope(*stats_, full);
}

Mmu& Card::add_mmu(const std::string& master, uint32_t engine_id, std::function<uint32_t()> props) {
  const auto& p = memory_.card().mmu();
  MmuConfig config;
  config.engine = master;
  config.engine_id = engine_id;
  config.period_ps = period_ps_from_mhz(memory_.card().clocks().dma_mhz());
  config.tlb_entries = p.tlb_entries();
  config.pte_cache_lines = p.pte_cache_lines();
  config.lookup_cycles = p.lookup_cycles();
  config.fault_cycles = p.fault_cycles();
  auto mmu = std::make_unique<Mmu>((master + "_mmu").c_str(), config);
  if (const auto scope = stats_scope("mmu." + stats::path_component(master))) mmu->register_stats(*scope);
  memory_.bind_master(mmu->initiator, master);
  memory_.bind_master(mmu->walker.socket, master + ".mmu_walk");
  if (props) mmu->set_props_source(std::move(props));
  mmu_controller_->add(*mmu);
  mmus_.push_back(std::move(mmu));
  return *mmus_.back();
}

std::vector<Mmu*> Card::mmus() {
  std::vector<Mmu*> all;
  for (auto& m : mmus_) all.push_back(m.get());
  return all;
}

Mmu* Card::mmu(const std::string& master) {
  for (auto& m : mmus_) {
    if (m->config().engine == master) return m.get();
  }
  return nullptr;
}

void Card::set_qman_observer(QmanObserver* observer) {
  for (auto& qman : qmans_) {
    if (qman) qman->set_observer(observer);
  }
}

void Card::set_dma_observer(DmaObserver* observer) {
  for (auto& core : dma_cores_) core->set_observer(observer);
}

void Card::set_nic_observer(NicObserver* observer) {
  for (auto& port : nic_ports_) port->set_observer(observer);
}

void Card::set_engine_observers(TpcObserver* tpc, MmeObserver* mme) {
  for (auto& core : tpc_cores_) core->set_observer(tpc);
  for (auto& engine : mme_engines_)
    if (engine) engine->set_observer(mme);
}

void Card::set_sync_manager_observer(SyncManagerObserver* observer) {
  for (auto& sm : sync_managers_) sm->set_observer(observer);
}

void Card::reset() {
  reset_blocks();
  if (device_cpu_) device_cpu_->reset();
}

void Card::reset_blocks() {
  for (auto& sm : sync_managers_) sm->reset();
  for (auto& qman : qmans_) {
    if (qman) qman->reset();
  }
  for (auto& core : dma_cores_) core->reset();
  for (auto& port : nic_ports_) port->reset();
  for (auto& core : tpc_cores_) core->reset();
  for (auto& engine : mme_engines_) {
    if (engine) engine->reset();
  }
  mmu_controller_->reset();   // and every MMU
}

}  // namespace hpusim::hw
