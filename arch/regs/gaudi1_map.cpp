#include "arch/regs/gaudi1_map.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>

namespace hpusim::regs {

namespace {

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIX64, value);
  return buf;
}

std::string indexed(const char* name, unsigned i) { return std::string(name) + "_" + std::to_string(i); }

void add(std::vector<NamedRegister>& regs, uint32_t offset, std::string name) {
  regs.push_back(NamedRegister{offset, std::move(name)});
}

std::vector<NamedRegister> qman_registers() {
  std::vector<NamedRegister> regs;
  for (size_t i = 0; i < kNumQmRegs; ++i) {
    QmReg r = static_cast<QmReg>(i);
    const QmRegDesc& d = qm_reg_desc(r);
    for (unsigned k = 0; k < d.count; ++k) {
      add(regs, qm_reg_offset(r, k), d.count == 1 ? std::string(d.name) : indexed(d.name, k));
    }
  }
  return regs;
}

std::vector<NamedRegister> dma_core_registers() {
  using namespace dma_core;
  std::vector<NamedRegister> regs = {
      {kCfg0, "CFG_0"},
      {kCfg1, "CFG_1"},
      {kLbwMaxOutstand, "LBW_MAX_OUTSTAND"},
      {kSrcBaseLo, "SRC_BASE_LO"},
      {kSrcBaseHi, "SRC_BASE_HI"},
      {kDstBaseLo, "DST_BASE_LO"},
      {kDstBaseHi, "DST_BASE_HI"},
      {kCommit, "COMMIT"},
      {kWrCompWdata, "WR_COMP_WDATA"},
      {kWrCompAddrLo, "WR_COMP_ADDR_LO"},
      {kWrCompAddrHi, "WR_COMP_ADDR_HI"},
      {kWrCompAwuser, "WR_COMP_AWUSER_31_11"},
      {kTeNumrows, "TE_NUMROWS"},
      {kProt, "PROT"},
      {kSecureProps, "SECURE_PROPS"},
      {kNonSecureProps, "NON_SECURE_PROPS"},
      {kRdMaxOutstand, "RD_MAX_OUTSTAND"},
      {kRdMaxSize, "RD_MAX_SIZE"},
      {kRdArcache, "RD_ARCACHE"},
      {kRdAruser, "RD_ARUSER_31_11"},
      {kRdInflights, "RD_INFLIGHTS"},
      {kWrMaxOutstand, "WR_MAX_OUTSTAND"},
      {kWrMaxAwid, "WR_MAX_AWID"},
      {kWrAwcache, "WR_AWCACHE"},
      {kWrAwuser, "WR_AWUSER_31_11"},
      {kWrInflights, "WR_INFLIGHTS"},
      {kRdRateLimCfg0, "RD_RATE_LIM_CFG_0"},
      {kRdRateLimCfg1, "RD_RATE_LIM_CFG_1"},
      {kWrRateLimCfg0, "WR_RATE_LIM_CFG_0"},
      {kWrRateLimCfg1, "WR_RATE_LIM_CFG_1"},
      {kErrCfg, "ERR_CFG"},
      {kErrCause, "ERR_CAUSE"},
      {kErrmsgAddrLo, "ERRMSG_ADDR_LO"},
      {kErrmsgAddrHi, "ERRMSG_ADDR_HI"},
      {kErrmsgWdata, "ERRMSG_WDATA"},
      {kSts0, "STS0"},
      {kSts1, "STS1"},
  };
  for (unsigned d = 0; d < kNumDims; ++d) {
    add(regs, src_tsize(d), indexed("SRC_TSIZE", d));
    add(regs, dst_tsize(d), indexed("DST_TSIZE", d));
    if (d > 0) {
      add(regs, src_stride(d), indexed("SRC_STRIDE", d));
      add(regs, dst_stride(d), indexed("DST_STRIDE", d));
    }
  }
  return regs;
}

std::vector<NamedRegister> mme_ctrl_registers() {
  using namespace mme_ctrl;
  return {
      {kArchStatus, "ARCH_STATUS"}, {kArchBaseAddrHighS, "ARCH_BASE_ADDR_HIGH_S"},
      {kArchBaseAddrHighL, "ARCH_BASE_ADDR_HIGH_L"}, {kArchBaseAddrHighO, "ARCH_BASE_ADDR_HIGH_O"},
      {kCmd, "CMD"}, {kStatus1, "STATUS1"}, {kReset, "RESET"}, {kQmStall, "QM_STALL"},
  };
}

void add_tpc_descriptor(std::vector<NamedRegister>& regs, uint32_t base, const std::string& p) {
  using namespace tpc_cfg;
  for (unsigned t = 0; t < kNumTensors; ++t) {
    uint32_t tb = base + t * kTensorStride;
    std::string tn = p + "TENSOR_" + std::to_string(t) + "_";
    add(regs, tb + kTensorBaseAddrLow, tn + "BASE_ADDR_LOW");
    add(regs, tb + kTensorBaseAddrHigh, tn + "BASE_ADDR_HIGH");
    add(regs, tb + kTensorPaddingValue, tn + "PADDING_VALUE");
    add(regs, tb + kTensorConfig, tn + "TENSOR_CONFIG");
    for (unsigned d = 0; d < kNumDims; ++d) {
      add(regs, tb + tensor_dim_size(d), tn + "DIM_" + std::to_string(d) + "_SIZE");
      add(regs, tb + tensor_dim_stride(d), tn + "DIM_" + std::to_string(d) + "_STRIDE");
    }
  }
  add(regs, base + kDescSyncObjectMessage, p + "SYNC_OBJECT_MESSAGE");
  add(regs, base + kDescSyncObjectAddr, p + "SYNC_OBJECT_ADDR");
  add(regs, base + kDescKernelBaseAddressLow, p + "KERNEL_BASE_ADDRESS_LOW");
  add(regs, base + kDescKernelBaseAddressHigh, p + "KERNEL_BASE_ADDRESS_HIGH");
  for (unsigned d = 0; d < kNumDims; ++d) {
    add(regs, base + desc_tid_base_dim(d), p + "TID_BASE_DIM_" + std::to_string(d));
    add(regs, base + desc_tid_size_dim(d), p + "TID_SIZE_DIM_" + std::to_string(d));
  }
  add(regs, base + kDescKernelConfig, p + "KERNEL_CONFIG");
  add(regs, base + kDescKernelId, p + "KERNEL_ID");
  for (unsigned i = 0; i < kNumSrfs; ++i) add(regs, base + desc_srf(i), p + "SRF_" + std::to_string(i));
}

std::vector<NamedRegister> tpc_cfg_registers() {
  using namespace tpc_cfg;
  std::vector<NamedRegister> regs;
  add_tpc_descriptor(regs, kKernelDesc, "KERNEL_");
  const NamedRegister controls[] = {
      {kRoundCsr, "ROUND_CSR"},
      {kProt, "PROT"},
      {kSemaphore, "SEMAPHORE"},
      {kVflags, "VFLAGS"},
      {kSflags, "SFLAGS"},
      {kLfsrPolynom, "LFSR_POLYNOM"},
      {kStatus, "STATUS"},
      {kCfgBaseAddressHigh, "CFG_BASE_ADDRESS_HIGH"},
      {kCfgSubtractValue, "CFG_SUBTRACT_VALUE"},
      {kSmBaseAddressHigh, "SM_BASE_ADDRESS_HIGH"},
      {kTpcCmd, "TPC_CMD"},
      {kTpcExecute, "TPC_EXECUTE"},
      {kTpcStall, "TPC_STALL"},
      {kIcacheBaseAddressLow, "ICACHE_BASE_ADDERESS_LOW"},
      {kIcacheBaseAddressHigh, "ICACHE_BASE_ADDERESS_HIGH"},
      {kRdRateLimit, "RD_RATE_LIMIT"},
      {kWrRateLimit, "WR_RATE_LIMIT"},
      {kMssConfig, "MSS_CONFIG"},
      {kTpcIntrCause, "TPC_INTR_CAUSE"},
      {kTpcIntrMask, "TPC_INTR_MASK"},
      {kWqCredits, "WQ_CREDITS"},
      {kAruserLo, "ARUSER_LO"},
      {kAruserHi, "ARUSER_HI"},
      {kAwuserLo, "AWUSER_LO"},
      {kAwuserHi, "AWUSER_HI"},
      {kOpcodeExec, "OPCODE_EXEC"},
      {kLutFunc32BaseAddrLo, "LUT_FUNC32_BASE_ADDR_LO"},
      {kLutFunc32BaseAddrHi, "LUT_FUNC32_BASE_ADDR_HI"},
      {kLutFunc64BaseAddrLo, "LUT_FUNC64_BASE_ADDR_LO"},
      {kLutFunc64BaseAddrHi, "LUT_FUNC64_BASE_ADDR_HI"},
      {kLutFunc128BaseAddrLo, "LUT_FUNC128_BASE_ADDR_LO"},
      {kLutFunc128BaseAddrHi, "LUT_FUNC128_BASE_ADDR_HI"},
      {kLutFunc256BaseAddrLo, "LUT_FUNC256_BASE_ADDR_LO"},
      {kLutFunc256BaseAddrHi, "LUT_FUNC256_BASE_ADDR_HI"},
      {kTsbCfgMaxSize, "TSB_CFG_MAX_SIZE"},
      {kTsbCfg, "TSB_CFG"},
      {kTsbInflightCntr, "TSB_INFLIGHT_CNTR"},
      {kWqInflightCntr, "WQ_INFLIGHT_CNTR"},
      {kWqLbwTotalCntr, "WQ_LBW_TOTAL_CNTR"},
      {kWqHbwTotalCntr, "WQ_HBW_TOTAL_CNTR"},
      {kIrqOccoupyCntr, "IRQ_OCCOUPY_CNTR"},
  };
  regs.insert(regs.end(), std::begin(controls), std::end(controls));
  add_tpc_descriptor(regs, kQmDesc, "QM_");
  return regs;
}

std::vector<NamedRegister> sm_objs_registers() {
  using namespace sm;
  std::vector<NamedRegister> regs;
  regs.reserve(kNumSobs + 5 * kNumMonitors + kNumSmSec);
  for (unsigned i = 0; i < kNumSobs; ++i) add(regs, kObjsSobObj0 + 4 * i, indexed("SOB_OBJ", i));
  const std::pair<uint32_t, const char*> mon[] = {
      {kObjsMonPayAddrL0, "MON_PAY_ADDRL"}, {kObjsMonPayAddrH0, "MON_PAY_ADDRH"},
      {kObjsMonPayData0, "MON_PAY_DATA"},   {kObjsMonArm0, "MON_ARM"},
      {kObjsMonStatus0, "MON_STATUS"},
  };
  for (const auto& [base, name] : mon) {
    for (unsigned i = 0; i < kNumMonitors; ++i) add(regs, base + 4 * i, indexed(name, i));
  }
  for (unsigned i = 0; i < kNumSmSec; ++i) add(regs, kObjsSmSec0 + 4 * i, indexed("SM_SEC", i));
  return regs;
}

std::vector<NamedRegister> pcie_msi_registers() {
  std::vector<NamedRegister> regs;
  for (unsigned v = 0; v < pcie::kMsiEntries; ++v) {
    add(regs, static_cast<uint32_t>(pcie::msi_intr(v) - kPcieMsiBase), indexed("INTR", v));
  }
  return regs;
}

// Registers of a singleton block given as absolute CFG offsets.
std::vector<NamedRegister> relative(uint64_t base, std::initializer_list<std::pair<uint64_t, const char*>> list) {
  std::vector<NamedRegister> regs;
  for (const auto& [offset, name] : list) add(regs, static_cast<uint32_t>(offset - base), name);
  return regs;
}

std::vector<NamedRegister> build_block_registers(BlockKind kind) {
  switch (kind) {
    case BlockKind::Qman: return qman_registers();
    case BlockKind::DmaCore: return dma_core_registers();
    case BlockKind::MmeCtrl: return mme_ctrl_registers();
    case BlockKind::TpcCfg: return tpc_cfg_registers();
    case BlockKind::SmGlbl: return {};
    case BlockKind::SmObjs: return sm_objs_registers();
    case BlockKind::PcieCore: return relative(kPcieCoreBase, {{pcie::kCoreMsiReq, "MSI_REQ"}});
    case BlockKind::PcieMsi: return pcie_msi_registers();
    case BlockKind::CpuIf:
      return relative(kCpuIfBase, {
                                      {cpu_if::kPfPqPi, "PF_PQ_PI"},
                                      {cpu_if::kPqBaseAddrLow, "PQ_BASE_ADDR_LOW"},
                                      {cpu_if::kPqBaseAddrHigh, "PQ_BASE_ADDR_HIGH"},
                                      {cpu_if::kPqLength, "PQ_LENGTH"},
                                      {cpu_if::kCqBaseAddrLow, "CQ_BASE_ADDR_LOW"},
                                      {cpu_if::kCqBaseAddrHigh, "CQ_BASE_ADDR_HIGH"},
                                      {cpu_if::kCqLength, "CQ_LENGTH"},
                                      {cpu_if::kEqBaseAddrLow, "EQ_BASE_ADDR_LOW"},
                                      {cpu_if::kEqBaseAddrHigh, "EQ_BASE_ADDR_HIGH"},
                                      {cpu_if::kEqLength, "EQ_LENGTH"},
                                      {cpu_if::kEqRdOffs, "EQ_RD_OFFS"},
                                      {cpu_if::kQueueInit, "QUEUE_INIT"},
                                  });
    case BlockKind::PsocTimestamp:
      return relative(kPsocTimestampBase, {
                                              {psoc_timestamp::kCntcr, "CNTCR"},
                                              {psoc_timestamp::kCntsr, "CNTSR"},
                                              {psoc_timestamp::kCntcvl, "CNTCVL"},
                                              {psoc_timestamp::kCntcvu, "CNTCVU"},
                                              {psoc_timestamp::kCntfid0, "CNTFID0"},
                                          });
    case BlockKind::Gic: return relative(kGicBase, {{gic::kGicdSetspiNsr, "GICD_SETSPI_NSR"}});
  }
  return {};
}

constexpr unsigned kNumBlockKinds = static_cast<unsigned>(BlockKind::Gic) + 1;

std::vector<BlockInfo> build_blocks() {
  std::vector<BlockInfo> blocks;
  for (unsigned i = 0; i < kNumQmans; ++i) {
    QmanId q = qman_from_index(i);
    blocks.push_back({qman_name(q), BlockKind::Qman, i, qman_base(q), kBlockPage});
  }
  for (unsigned ch = 0; ch < kMaxDmaChannels; ++ch) {
    blocks.push_back({"DMA" + std::to_string(ch) + "_CORE", BlockKind::DmaCore, ch, dma_core_base(ch), kBlockPage});
  }
  for (unsigned m = 0; m < kMaxMmeEngines; ++m) {
    blocks.push_back({"MME" + std::to_string(m) + "_CTRL", BlockKind::MmeCtrl, m, mme_ctrl_base(m), kBlockPage});
  }
  for (unsigned t = 0; t < kMaxTpcEngines; ++t) {
    blocks.push_back({"TPC" + std::to_string(t) + "_CFG", BlockKind::TpcCfg, t, tpc_cfg_base(t), kBlockPage});
  }
  for (unsigned s = 0; s < kNumSyncManagers; ++s) {
    SyncManager sm = static_cast<SyncManager>(s);
    std::string prefix = std::string("SYNC_MNGR_") + sync_manager_name(sm);
    blocks.push_back({prefix + "_GLBL", BlockKind::SmGlbl, s, sm_glbl_base(sm), kBlockPage});
    blocks.push_back({prefix + "_OBJS", BlockKind::SmObjs, s, sm_objs_base(sm), sm::kObjsSize});
  }
  blocks.push_back({"PCIE_CORE", BlockKind::PcieCore, 0, kPcieCoreBase, kBlockPage});
  blocks.push_back({"PCIE_MSI", BlockKind::PcieMsi, 0, kPcieMsiBase, kBlockPage});
  blocks.push_back({"CPU_IF", BlockKind::CpuIf, 0, kCpuIfBase, kBlockPage});
  blocks.push_back({"PSOC_TIMESTAMP", BlockKind::PsocTimestamp, 0, kPsocTimestampBase, kBlockPage});
  blocks.push_back({"GIC", BlockKind::Gic, 0, kGicBase, kGicSize});
  std::sort(blocks.begin(), blocks.end(), [](const BlockInfo& a, const BlockInfo& b) { return a.base < b.base; });
  return blocks;
}

const std::unordered_map<uint32_t, std::string>& register_index(BlockKind kind) {
  static const std::vector<std::unordered_map<uint32_t, std::string>> indexes = [] {
    std::vector<std::unordered_map<uint32_t, std::string>> all(kNumBlockKinds);
    for (unsigned k = 0; k < kNumBlockKinds; ++k) {
      for (const NamedRegister& r : block_registers(static_cast<BlockKind>(k))) all[k].emplace(r.offset, r.name);
    }
    return all;
  }();
  return indexes[static_cast<unsigned>(kind)];
}

}  // namespace

const char* qman_name(QmanId q) {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (unsigned i = 0; i < kNumQmans; ++i) {
      const QmanId id = qman_from_index(i);
      const std::string engine = std::to_string(qman_engine(id));
      switch (qman_family(id)) {
        case QmanFamily::Dma: names.push_back("DMA" + engine + "_QM"); break;
        case QmanFamily::Mme: names.push_back("MME" + engine + "_QM"); break;
        case QmanFamily::Tpc: names.push_back("TPC" + engine + "_QM"); break;
        case QmanFamily::Nic:
          names.push_back("NIC" + std::to_string(qman_engine(id) / 2) + "_QM" + std::to_string(qman_engine(id) % 2));
          break;
      }
    }
    return names;
  }();
  const unsigned i = to_index(q);
  if (i >= kNumQmans) throw std::out_of_range("QMAN id out of range");
  return kNames[i].c_str();
}

std::string qm_reg_name(QmRegRef ref) {
  const QmRegDesc& d = qm_reg_desc(ref.reg);
  if (ref.index >= d.count) throw std::out_of_range("QMAN register instance out of range");
  return d.count == 1 ? std::string(d.name) : indexed(d.name, ref.index);
}

const char* sync_manager_name(SyncManager s) {
  switch (s) {
    case SyncManager::W_S: return "W_S";
    case SyncManager::E_S: return "E_S";
    case SyncManager::W_N: return "W_N";
    case SyncManager::E_N: return "E_N";
  }
  throw std::out_of_range("sync manager out of range");
}

std::string queue_name(QueueId q) {
  unsigned e = queue_engine(q);
  unsigned s = queue_stream(q);
  const char* kind = "";
  switch (queue_kind(q)) {
    case QueueKind::Dma: kind = "DMA"; break;
    case QueueKind::Cpu: return "CPU_PQ";
    case QueueKind::Mme: kind = "MME"; break;
    case QueueKind::Tpc: kind = "TPC"; break;
    case QueueKind::Nic: kind = "NIC"; break;
  }
  return std::string(kind) + "_" + std::to_string(e) + "_" + std::to_string(s);
}

const std::vector<BlockInfo>& modelled_blocks() {
  static const std::vector<BlockInfo> blocks = build_blocks();
  return blocks;
}

const BlockInfo* find_block(uint64_t cfg_offset) {
  const std::vector<BlockInfo>& blocks = modelled_blocks();
  auto it = std::upper_bound(blocks.begin(), blocks.end(), cfg_offset,
                             [](uint64_t off, const BlockInfo& b) { return off < b.base; });
  if (it == blocks.begin()) return nullptr;
  --it;
  return cfg_offset - it->base < it->size ? &*it : nullptr;
}

const std::vector<NamedRegister>& block_registers(BlockKind kind) {
  static const std::vector<std::vector<NamedRegister>> all = [] {
    std::vector<std::vector<NamedRegister>> v;
    for (unsigned k = 0; k < kNumBlockKinds; ++k) v.push_back(build_block_registers(static_cast<BlockKind>(k)));
    return v;
  }();
  unsigned k = static_cast<unsigned>(kind);
  if (k >= kNumBlockKinds) throw std::out_of_range("block kind out of range");
  return all[k];
}

std::vector<MappedRegister> modelled_registers() {
  std::vector<MappedRegister> out;
  for (const BlockInfo& b : modelled_blocks()) {
    for (const NamedRegister& r : block_registers(b.kind)) out.push_back({b.base + r.offset, b.name + "." + r.name});
  }
  std::sort(out.begin(), out.end(), [](const MappedRegister& a, const MappedRegister& b) { return a.offset < b.offset; });
  return out;
}

std::string describe_cfg_offset(uint64_t cfg_offset) {
  const BlockInfo* b = find_block(cfg_offset);
  if (!b) return "unmapped " + hex(cfg_offset);
  uint64_t rel = cfg_offset - b->base;
  const auto& index = register_index(b->kind);
  auto it = index.find(static_cast<uint32_t>(rel));
  if (it != index.end()) return b->name + "." + it->second;
  return b->name + "+" + hex(rel);
}

std::string describe_device_address(uint64_t address) {
  if (!in_cfg_window(address)) return "device " + hex(address);
  return describe_cfg_offset(address - kCfgBase);
}

}  // namespace hpusim::regs
