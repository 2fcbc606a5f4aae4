// The Gaudi 1 (HL-205) CFG-space register map as data.
//
// Every offset here is relative to CFG_BASE (0x7FFC000000), exactly like the driver's mm*
// constants, so `kCfgBase + offset` is the device address a QMAN message, a monitor payload or a
// PCIe MMIO access uses. Values were read from the public habanalabs headers (see README.md) and
// re-expressed as compact tables and functions; only what the simulator needs is modelled:
//
//   * block bases of the QMANs (DMA0..7, MME0..3, TPC0..7, NIC0..4 QM0/QM1), DMA cores, MME
//     control blocks, TPC CFG blocks, the four sync managers, PCIe MSI, CPU-IF, PSOC timestamp, GIC;
//   * the QMAN register file (identical in every QMAN), indexed by stream (PQ) or CP (0..4);
//   * DMA core, TPC CFG, MME control and sync-manager registers and the bit fields the models use;
//   * the driver's queue ids (enum gaudi_queue_id) and which QMAN/stream serves each of them;
//   * names for traces: describe_cfg_offset(0x508334) == "DMA0_QM.CP_FENCE2_RDATA_1".
//
// Index arguments out of range throw std::out_of_range (a compile error in a constant expression).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpusim::regs {

// ---------------------------------------------------------------------------------------------
// The CFG window
// ---------------------------------------------------------------------------------------------

inline constexpr uint64_t kCfgBase = 0x7FFC000000ull;
inline constexpr uint64_t kCfgSize = 0x4000000ull;          // 32 MB registers + 32 MB debug
inline constexpr uint64_t kCfgRegisterSpan = 0x2000000ull;  // every runtime block is in here

constexpr uint64_t cfg_address(uint64_t cfg_offset) { return kCfgBase + cfg_offset; }
constexpr bool in_cfg_window(uint64_t device_address) {
  return device_address >= kCfgBase && device_address - kCfgBase < kCfgSize;
}

// Engine counts of the HL-205 (the Gaudi 1 map).
inline constexpr unsigned kGaudi1DmaChannels = 8;  // DMA0/1 are the PCI (external) channels
inline constexpr unsigned kGaudi1MmeEngines = 4;   // MME0/2 masters with a QMAN each, MME1/3 slaves
inline constexpr unsigned kGaudi1TpcEngines = 8;
inline constexpr unsigned kGaudi1NicEngines = 10;  // 5 NIC macros x 2 QMANs
// hpusim's extension of the map for larger cards (README, "Beyond Gaudi 1"): the most engines of
// each kind a card can have. Engines past Gaudi 1's counts have blocks in the debug half of the
// CFG window and QMAN, engine, queue and event ids after Gaudi 1's; Gaudi 1's are unchanged.
inline constexpr unsigned kNumPciDmaChannels = 2;
inline constexpr unsigned kMaxDmaChannels = 10;    // 2 PCI + 8 internal (cpucp's edma_binning_mask has 8 bits)
inline constexpr unsigned kMaxMmeEngines = 16;     // 8 masters, each with its slave
inline constexpr unsigned kMaxMmeMasters = kMaxMmeEngines / 2;
inline constexpr unsigned kMaxTpcEngines = 64;     // tpc_enabled_mask_ext has 64 bits
inline constexpr unsigned kMaxNicEngines = 24;     // Gaudi 2 and 3: 24 ports (12 macros x 2)
inline constexpr unsigned kQmanStreams = 4;        // PQ + upper CP per stream
inline constexpr unsigned kQmanCps = 5;            // CPs 0..3 (upper) and 4 (lower / "CMDQ")
inline constexpr unsigned kLowerCp = 4;
inline constexpr unsigned kFencesPerCp = 4;
inline constexpr unsigned kCpMsgBases = 4;

// Every modelled block claims the 4 KB page its registers live in (the driver's protection bits
// sit at +0xF80 of each page), except the sync-manager object block and the GIC distributor.
inline constexpr uint64_t kBlockPage = 0x1000;

// ---------------------------------------------------------------------------------------------
// Block bases (gaudi_blocks.h)
// ---------------------------------------------------------------------------------------------

inline constexpr uint64_t kDmaCore0Base = 0x500000;   // mmDMA0_CORE_BASE - CFG_BASE
inline constexpr uint64_t kDmaQm0Base = 0x508000;     // mmDMA0_QM_BASE - CFG_BASE
inline constexpr uint64_t kDmaStride = 0x20000;
inline constexpr uint64_t kMmeCtrl0Base = 0x060000;   // mmMME0_CTRL_BASE - CFG_BASE
inline constexpr uint64_t kMmeQm0Base = 0x068000;     // mmMME0_QM_BASE - CFG_BASE
inline constexpr uint64_t kMmeStride = 0x80000;
inline constexpr uint64_t kTpcCfg0Base = 0xE06000;    // mmTPC0_CFG_BASE - CFG_BASE
inline constexpr uint64_t kTpcQm0Base = 0xE08000;     // mmTPC0_QM_BASE - CFG_BASE
inline constexpr uint64_t kTpcStride = 0x40000;
inline constexpr uint64_t kNic0Qm0Base = 0xCE0000;    // mmNIC0_QM0_BASE - CFG_BASE
inline constexpr uint64_t kNicMacroStride = 0x40000;  // NICn_QM0 - NIC(n-1)_QM0
inline constexpr uint64_t kNicQm1Delta = 0x2000;      // NICn_QM1 - NICn_QM0
inline constexpr uint64_t kSmGlbl0Base = 0x490000;    // mmSYNC_MNGR_GLBL_W_S_BASE - CFG_BASE
inline constexpr uint64_t kSmStride = 0x20000;        // W_S, E_S, W_N, E_N in address order
inline constexpr uint64_t kSmObjsDelta = 0x1000;      // SYNC_MNGR_OBJS_x_BASE - SYNC_MNGR_GLBL_x_BASE
inline constexpr uint64_t kCpuIfBase = 0x442000;      // mmCPU_IF_BASE - CFG_BASE
inline constexpr uint64_t kGicBase = 0x800000;        // mmGIC_BASE - CFG_BASE
inline constexpr uint64_t kGicSize = 0x10000;
inline constexpr uint64_t kPcieCoreBase = 0xC04000;   // mmPCIE_CORE_BASE - CFG_BASE
inline constexpr uint64_t kPcieMsiBase = 0xC13000;    // mmPCIE_MSI_BASE - CFG_BASE
inline constexpr uint64_t kPsocTimestampBase = 0xC49000;

// hpusim's extension: where the blocks of engines past Gaudi 1's counts live, in the debug half
// of the CFG window (which hpusim does not model). Each keeps its Gaudi 1 stride and the same
// layout inside its stride, so TPC n's QM is 0x2000 above its CFG and an MME's or DMA channel's
// QM is 0x8000 above its CTRL or core block.
inline constexpr uint64_t kExtTpcCfg8Base = 0x2006000;   // TPC8..63: 0x2000000 + 0x40000 (n - 8) + 0x6000
inline constexpr uint64_t kExtMmeCtrl4Base = 0x2E00000;  // MME4..15: 0x2E00000 + 0x80000 (n - 4)
inline constexpr uint64_t kExtDmaCore8Base = 0x3400000;  // DMA8..9:  0x3400000 + 0x20000 (n - 8)
inline constexpr uint64_t kExtNicMacro5Base = 0x3500000; // NIC macros 5..11 (engines 10..23): + 0x40000 (m - 5)
inline constexpr uint64_t kTpcQmFromCfg = kTpcQm0Base - kTpcCfg0Base;
inline constexpr uint64_t kMmeQmFromCtrl = kMmeQm0Base - kMmeCtrl0Base;
inline constexpr uint64_t kDmaQmFromCore = kDmaQm0Base - kDmaCore0Base;

constexpr uint64_t dma_core_base(unsigned ch) {
  if (ch >= kMaxDmaChannels) throw std::out_of_range("DMA channel out of range");
  return ch < kGaudi1DmaChannels ? kDmaCore0Base + ch * kDmaStride
                                 : kExtDmaCore8Base + (ch - kGaudi1DmaChannels) * kDmaStride;
}
constexpr uint64_t dma_qm_base(unsigned ch) { return dma_core_base(ch) + kDmaQmFromCore; }
constexpr uint64_t mme_ctrl_base(unsigned mme) {
  if (mme >= kMaxMmeEngines) throw std::out_of_range("MME index out of range");
  return mme < kGaudi1MmeEngines ? kMmeCtrl0Base + mme * kMmeStride
                                 : kExtMmeCtrl4Base + (mme - kGaudi1MmeEngines) * kMmeStride;
}
constexpr uint64_t mme_qm_base(unsigned mme) { return mme_ctrl_base(mme) + kMmeQmFromCtrl; }
constexpr uint64_t tpc_cfg_base(unsigned tpc) {
  if (tpc >= kMaxTpcEngines) throw std::out_of_range("TPC index out of range");
  return tpc < kGaudi1TpcEngines ? kTpcCfg0Base + tpc * kTpcStride
                                 : kExtTpcCfg8Base + (tpc - kGaudi1TpcEngines) * kTpcStride;
}
constexpr uint64_t tpc_qm_base(unsigned tpc) { return tpc_cfg_base(tpc) + kTpcQmFromCfg; }
// NIC engine n (queues NIC_n_x) is QMAN n%2 of NIC macro n/2.
constexpr uint64_t nic_qm_base(unsigned nic_engine) {
  if (nic_engine >= kMaxNicEngines) throw std::out_of_range("NIC engine out of range");
  const unsigned macro = nic_engine / 2;
  const uint64_t macro_base = nic_engine < kGaudi1NicEngines ? kNic0Qm0Base + macro * kNicMacroStride
                                                             : kExtNicMacro5Base + (macro - kGaudi1NicEngines / 2) * kNicMacroStride;
  return macro_base + (nic_engine % 2) * kNicQm1Delta;
}
// hpusim's NIC port engine block (hw/nic: its own register layout) of engine n: the page above its
// QMAN's, inside the NIC macro.
inline constexpr uint64_t kNicPortFromQm = 0x1000;
constexpr uint64_t nic_port_base(unsigned nic_engine) { return nic_qm_base(nic_engine) + kNicPortFromQm; }
// The port block's registers (hw/nic/README.md).
namespace nic_port {
inline constexpr uint32_t kCfg = 0x000;          // b0 EN
inline constexpr uint32_t kStatus = 0x004;       // RO: b31 busy, [15:0] sends, [30:16] receives
inline constexpr uint32_t kErrCause = 0x008;     // W1C
inline constexpr uint32_t kAddrLo = 0x010, kAddrHi = 0x014, kSize = 0x018;
inline constexpr uint32_t kCompAddrLo = 0x020, kCompAddrHi = 0x024, kCompWdata = 0x028;
inline constexpr uint32_t kCommit = 0x030;       // b0 COMP_EN, [2:1] op: 1 SEND, 2 RECV
inline constexpr uint32_t kNonSecureProps = 0x040;
inline constexpr uint32_t kPeer = 0x044;         // behind a switch: a send's destination, a receive's source
inline constexpr uint32_t kCfgEn = 1u << 0;
inline constexpr uint32_t kCommitCompEn = 1u << 0;
inline constexpr uint32_t kCommitOpShift = 1, kCommitOpMask = 3u << 1;
inline constexpr uint32_t kCommitSend = 1u << kCommitOpShift, kCommitRecv = 2u << kCommitOpShift;
inline constexpr uint32_t kErrReadFailed = 1u << 0, kErrWriteFailed = 1u << 1, kErrCompletionFailed = 1u << 2,
                          kErrQueueOverflow = 1u << 3, kErrBadCommit = 1u << 4;
}  // namespace nic_port

// ---------------------------------------------------------------------------------------------
// QMAN instances
// ---------------------------------------------------------------------------------------------

// Gaudi 1's 30 QMANs by name; the extension's follow them: DMA8..9 (30, 31), MME4..15 (32..43),
// TPC8..63 (44..99), NIC engines 10..23 (100..113). A QMAN's index is also its engine's id (enum gaudi_engine_id for Gaudi 1's):
// the id MMU page-fault captures and RAZWI reports carry.
enum class QmanId : uint8_t {
  DMA0, DMA1, DMA2, DMA3, DMA4, DMA5, DMA6, DMA7,
  MME0, MME1, MME2, MME3,  // only MME0 (S_W) and MME2 (N_W) serve queues; 1 and 3 are slaves
  TPC0, TPC1, TPC2, TPC3, TPC4, TPC5, TPC6, TPC7,
  NIC0_QM0, NIC0_QM1, NIC1_QM0, NIC1_QM1, NIC2_QM0, NIC2_QM1, NIC3_QM0, NIC3_QM1, NIC4_QM0, NIC4_QM1,
};
inline constexpr unsigned kNumGaudi1Qmans = 30;
inline constexpr unsigned kExtDmaQman0 = kNumGaudi1Qmans;                                         // DMA8
inline constexpr unsigned kExtMmeQman0 = kExtDmaQman0 + kMaxDmaChannels - kGaudi1DmaChannels;    // MME4
inline constexpr unsigned kExtTpcQman0 = kExtMmeQman0 + kMaxMmeEngines - kGaudi1MmeEngines;      // TPC8
inline constexpr unsigned kExtNicQman0 = kExtTpcQman0 + kMaxTpcEngines - kGaudi1TpcEngines;      // NIC engine 10
inline constexpr unsigned kNumQmans = kExtNicQman0 + kMaxNicEngines - kGaudi1NicEngines;

enum class QmanFamily : uint8_t { Dma, Mme, Tpc, Nic };

constexpr unsigned to_index(QmanId q) { return static_cast<unsigned>(q); }
constexpr QmanId qman_from_index(unsigned i) {
  if (i >= kNumQmans) throw std::out_of_range("QMAN index out of range");
  return static_cast<QmanId>(i);
}
constexpr QmanFamily qman_family(QmanId q) {
  const unsigned i = to_index(q);
  if (i >= kNumQmans) throw std::out_of_range("QMAN id out of range");
  if (i < kNumGaudi1Qmans) return i < 8 ? QmanFamily::Dma : i < 12 ? QmanFamily::Mme : i < 20 ? QmanFamily::Tpc : QmanFamily::Nic;
  return i < kExtMmeQman0 ? QmanFamily::Dma : i < kExtTpcQman0 ? QmanFamily::Mme : i < kExtNicQman0 ? QmanFamily::Tpc : QmanFamily::Nic;
}
// Engine number inside its family: DMA channel, MME index, TPC index or NIC engine.
constexpr unsigned qman_engine(QmanId q) {
  const unsigned i = to_index(q);
  const bool gaudi1 = i < kNumGaudi1Qmans;
  switch (qman_family(q)) {
    case QmanFamily::Dma: return gaudi1 ? i : kGaudi1DmaChannels + (i - kExtDmaQman0);
    case QmanFamily::Mme: return gaudi1 ? i - 8 : kGaudi1MmeEngines + (i - kExtMmeQman0);
    case QmanFamily::Tpc: return gaudi1 ? i - 12 : kGaudi1TpcEngines + (i - kExtTpcQman0);
    case QmanFamily::Nic: return gaudi1 ? i - 20 : kGaudi1NicEngines + (i - kExtNicQman0);
  }
  return 0;
}
constexpr QmanId dma_qman(unsigned ch) {
  if (ch >= kMaxDmaChannels) throw std::out_of_range("DMA channel out of range");
  return static_cast<QmanId>(ch < kGaudi1DmaChannels ? ch : kExtDmaQman0 + (ch - kGaudi1DmaChannels));
}
constexpr QmanId mme_qman(unsigned mme) {
  if (mme >= kMaxMmeEngines) throw std::out_of_range("MME index out of range");
  return static_cast<QmanId>(mme < kGaudi1MmeEngines ? 8 + mme : kExtMmeQman0 + (mme - kGaudi1MmeEngines));
}
constexpr QmanId tpc_qman(unsigned tpc) {
  if (tpc >= kMaxTpcEngines) throw std::out_of_range("TPC index out of range");
  return static_cast<QmanId>(tpc < kGaudi1TpcEngines ? 12 + tpc : kExtTpcQman0 + (tpc - kGaudi1TpcEngines));
}
constexpr QmanId nic_qman(unsigned nic_engine) {
  if (nic_engine >= kMaxNicEngines) throw std::out_of_range("NIC engine out of range");
  return static_cast<QmanId>(nic_engine < kGaudi1NicEngines ? 20 + nic_engine : kExtNicQman0 + (nic_engine - kGaudi1NicEngines));
}
// The engine id of a QMAN's engine (enum gaudi_engine_id for Gaudi 1's engines).
constexpr uint32_t engine_id(QmanId q) {
  if (to_index(q) >= kNumQmans) throw std::out_of_range("QMAN id out of range");
  return to_index(q);
}

constexpr uint64_t qman_base(QmanId q) {
  unsigned e = qman_engine(q);
  switch (qman_family(q)) {
    case QmanFamily::Dma: return dma_qm_base(e);
    case QmanFamily::Mme: return mme_qm_base(e);
    case QmanFamily::Tpc: return tpc_qm_base(e);
    case QmanFamily::Nic: return nic_qm_base(e);
  }
  return 0;
}

// The engine block a QMAN drives: WREG_32 / WREG_BULK reg_offset values are offsets inside it
// (DMA core, MME control block, TPC CFG block), as the public Synapse and hl-thunk command
// buffers use them (offsetof(block_tpc, qm_tensor_0) = 0xA00, mmDMA0_CORE_SRC_BASE_LO - core
// base = 0x14, MME address & 0xFFF); a NIC QMAN's is hpusim's NIC port block (nic_port_base).
constexpr std::optional<uint64_t> qman_engine_block(QmanId q) {
  unsigned e = qman_engine(q);
  switch (qman_family(q)) {
    case QmanFamily::Dma: return dma_core_base(e);
    case QmanFamily::Mme: return mme_ctrl_base(e);
    case QmanFamily::Tpc: return tpc_cfg_base(e);
    case QmanFamily::Nic: return nic_port_base(e);
  }
  return std::nullopt;
}

// The base the CP_LDMA_*_OFFSET registers are relative to: QMAN base - 0x8000 (the DMA core for
// DMA QMANs, the MME control block for MME QMANs). The driver programs every CP with offsets
// "relative to mmDMA0_CORE_CFG_0" and uses the same values for TPC QMANs, where
// base + 0x81B4 is the QMAN's own CQ_PTR_LO_4 (the upper-CP CP_DMA path into the lower CP).
constexpr uint64_t qman_ldma_base(QmanId q) { return qman_base(q) - 0x8000; }

// The offsets the driver writes into CP_LDMA_{TSIZE,SRC_BASE_LO,DST_BASE_LO}_OFFSET
// (gaudiP.h QMAN_LDMA_* and QMAN_CPDMA_*).
inline constexpr uint32_t kQmanLdmaSrcOffset = 0x14;     // DMA core SRC_BASE_LO
inline constexpr uint32_t kQmanLdmaDstOffset = 0x1C;     // DMA core DST_BASE_LO
inline constexpr uint32_t kQmanLdmaSizeOffset = 0x74;    // DMA core DST_TSIZE_0
inline constexpr uint32_t kQmanCpdmaSrcOffset = 0x81B4;  // own QMAN CQ_PTR_LO_4
inline constexpr uint32_t kQmanCpdmaDstOffset = 0x1C;
inline constexpr uint32_t kQmanCpdmaSizeOffset = 0x81BC; // own QMAN CQ_TSIZE_4

// "DMA0_QM", "MME2_QM", "TPC7_QM", "NIC3_QM1".
const char* qman_name(QmanId q);

// ---------------------------------------------------------------------------------------------
// QMAN registers (dma0_qm_regs.h; identical in every QMAN)
// ---------------------------------------------------------------------------------------------
// A register family has `count` instances: 1, one per stream (4, PQ side) or one per CP (5).
// Instance i sits at offset + i * stride, except GLBL_MSG_EN_4 (0x068, not 0x064).

struct QmRegDesc {
  const char* name;  // instance i of a multi-instance family is named "<name>_<i>"
  uint16_t offset;
  uint8_t count;
  uint8_t stride;
};

enum class QmReg : uint8_t {
  GlblCfg0, GlblCfg1, GlblProt, GlblErrCfg, GlblSecureProps, GlblNonSecureProps, GlblSts0,
  GlblSts1, GlblMsgEn,
  PqBaseLo, PqBaseHi, PqSize, PqPi, PqCi, PqCfg0, PqCfg1, PqAruser, PqSts0, PqSts1,
  CqCfg0, CqCfg1, CqAruser, CqSts0, CqSts1, CqPtrLo, CqPtrHi, CqTsize, CqCtl,
  CqPtrLoSts, CqPtrHiSts, CqTsizeSts, CqCtlSts, CqIfifoCnt,
  CpMsgBase0AddrLo, CpMsgBase0AddrHi, CpMsgBase1AddrLo, CpMsgBase1AddrHi,
  CpMsgBase2AddrLo, CpMsgBase2AddrHi, CpMsgBase3AddrLo, CpMsgBase3AddrHi,
  CpLdmaTsizeOffset, CpLdmaSrcBaseLoOffset, CpLdmaDstBaseLoOffset,
  CpFence0Rdata, CpFence1Rdata, CpFence2Rdata, CpFence3Rdata,
  CpFence0Cnt, CpFence1Cnt, CpFence2Cnt, CpFence3Cnt,
  CpSts, CpCurrentInstLo, CpCurrentInstHi, CpBarrierCfg, CpDbg0, CpAruser, CpAwuser,
  ArbCfg0, ArbChoiseQPush, ArbWrrWeight, ArbCfg1, ArbMstAvailCred, ArbMstCredInc,
  ArbMstChoisePushOfst, ArbSlvMasterIncCredOfst, ArbMstSlaveEn, ArbMstQuietPer, ArbSlvChoiseWdt,
  ArbSlvId, ArbMsgMaxInflight, ArbMsgAwuser, ArbMsgAwuserSecProp, ArbMsgAwuserNonSecProp,
  ArbBaseLo, ArbBaseHi, ArbStateSts, ArbChoiseFullnessSts, ArbMsgSts, ArbSlvChoiseQHead,
  ArbErrCause, ArbErrMsgEn, ArbErrStsDrp, ArbMstCredSts,
  CgmCfg, CgmSts, CgmCfg1, LocalRangeBase, LocalRangeSize, CsmrStrictPrioCfg,
  HbwRdRateLimCfg1, LbwWrRateLimCfg0, LbwWrRateLimCfg1, HbwRdRateLimCfg0, GlblAxcache,
  IndGwApbCfg, IndGwApbWdata, IndGwApbRdata, IndGwApbStatus,
  GlblErrAddrLo, GlblErrAddrHi, GlblErrWdata, GlblMemInitBusy,
  Count
};
inline constexpr size_t kNumQmRegs = static_cast<size_t>(QmReg::Count);

// Same order as QmReg.
inline constexpr QmRegDesc kQmRegTable[kNumQmRegs] = {
    {"GLBL_CFG0", 0x000, 1, 4},
    {"GLBL_CFG1", 0x004, 1, 4},
    {"GLBL_PROT", 0x008, 1, 4},
    {"GLBL_ERR_CFG", 0x00C, 1, 4},
    {"GLBL_SECURE_PROPS", 0x010, 5, 4},
    {"GLBL_NON_SECURE_PROPS", 0x024, 5, 4},
    {"GLBL_STS0", 0x038, 1, 4},
    {"GLBL_STS1", 0x040, 5, 4},
    {"GLBL_MSG_EN", 0x054, 5, 4},  // _4 at 0x068
    {"PQ_BASE_LO", 0x070, 4, 4},
    {"PQ_BASE_HI", 0x080, 4, 4},
    {"PQ_SIZE", 0x090, 4, 4},
    {"PQ_PI", 0x0A0, 4, 4},
    {"PQ_CI", 0x0B0, 4, 4},
    {"PQ_CFG0", 0x0C0, 4, 4},
    {"PQ_CFG1", 0x0D0, 4, 4},
    {"PQ_ARUSER_31_11", 0x0E0, 4, 4},
    {"PQ_STS0", 0x0F0, 4, 4},
    {"PQ_STS1", 0x100, 4, 4},
    {"CQ_CFG0", 0x110, 5, 4},
    {"CQ_CFG1", 0x124, 5, 4},
    {"CQ_ARUSER_31_11", 0x138, 5, 4},
    {"CQ_STS0", 0x14C, 5, 4},
    {"CQ_STS1", 0x160, 5, 4},
    {"CQ_PTR_LO", 0x174, 5, 0x10},  // grouped per CP: PTR_LO, PTR_HI, TSIZE, CTL
    {"CQ_PTR_HI", 0x178, 5, 0x10},
    {"CQ_TSIZE", 0x17C, 5, 0x10},
    {"CQ_CTL", 0x180, 5, 0x10},
    {"CQ_PTR_LO_STS", 0x1C4, 5, 4},
    {"CQ_PTR_HI_STS", 0x1D8, 5, 4},
    {"CQ_TSIZE_STS", 0x1EC, 5, 4},
    {"CQ_CTL_STS", 0x200, 5, 4},
    {"CQ_IFIFO_CNT", 0x214, 5, 4},
    {"CP_MSG_BASE0_ADDR_LO", 0x228, 5, 4},
    {"CP_MSG_BASE0_ADDR_HI", 0x23C, 5, 4},
    {"CP_MSG_BASE1_ADDR_LO", 0x250, 5, 4},
    {"CP_MSG_BASE1_ADDR_HI", 0x264, 5, 4},
    {"CP_MSG_BASE2_ADDR_LO", 0x278, 5, 4},
    {"CP_MSG_BASE2_ADDR_HI", 0x28C, 5, 4},
    {"CP_MSG_BASE3_ADDR_LO", 0x2A0, 5, 4},
    {"CP_MSG_BASE3_ADDR_HI", 0x2B4, 5, 4},
    {"CP_LDMA_TSIZE_OFFSET", 0x2C8, 5, 4},
    {"CP_LDMA_SRC_BASE_LO_OFFSET", 0x2E0, 5, 4},  // 0x2DC is a hole
    {"CP_LDMA_DST_BASE_LO_OFFSET", 0x2F4, 5, 4},
    {"CP_FENCE0_RDATA", 0x308, 5, 4},
    {"CP_FENCE1_RDATA", 0x31C, 5, 4},
    {"CP_FENCE2_RDATA", 0x330, 5, 4},
    {"CP_FENCE3_RDATA", 0x344, 5, 4},
    {"CP_FENCE0_CNT", 0x358, 5, 4},
    {"CP_FENCE1_CNT", 0x36C, 5, 4},
    {"CP_FENCE2_CNT", 0x380, 5, 4},
    {"CP_FENCE3_CNT", 0x394, 5, 4},
    {"CP_STS", 0x3A8, 5, 4},
    {"CP_CURRENT_INST_LO", 0x3BC, 5, 4},
    {"CP_CURRENT_INST_HI", 0x3D0, 5, 4},
    {"CP_BARRIER_CFG", 0x3F4, 5, 4},
    {"CP_DBG_0", 0x408, 5, 4},
    {"CP_ARUSER_31_11", 0x41C, 5, 4},
    {"CP_AWUSER_31_11", 0x430, 5, 4},
    {"ARB_CFG_0", 0xA00, 1, 4},
    {"ARB_CHOISE_Q_PUSH", 0xA04, 1, 4},
    {"ARB_WRR_WEIGHT", 0xA08, 4, 4},
    {"ARB_CFG_1", 0xA18, 1, 4},
    {"ARB_MST_AVAIL_CRED", 0xA20, 32, 4},
    {"ARB_MST_CRED_INC", 0xAA0, 1, 4},
    {"ARB_MST_CHOISE_PUSH_OFST", 0xAA4, 32, 4},
    {"ARB_SLV_MASTER_INC_CRED_OFST", 0xB28, 1, 4},
    {"ARB_MST_SLAVE_EN", 0xB2C, 1, 4},
    {"ARB_MST_QUIET_PER", 0xB34, 1, 4},
    {"ARB_SLV_CHOISE_WDT", 0xB38, 1, 4},
    {"ARB_SLV_ID", 0xB3C, 1, 4},
    {"ARB_MSG_MAX_INFLIGHT", 0xB44, 1, 4},
    {"ARB_MSG_AWUSER_31_11", 0xB48, 1, 4},
    {"ARB_MSG_AWUSER_SEC_PROP", 0xB4C, 1, 4},
    {"ARB_MSG_AWUSER_NON_SEC_PROP", 0xB50, 1, 4},
    {"ARB_BASE_LO", 0xB54, 1, 4},
    {"ARB_BASE_HI", 0xB58, 1, 4},
    {"ARB_STATE_STS", 0xB80, 1, 4},
    {"ARB_CHOISE_FULLNESS_STS", 0xB84, 1, 4},
    {"ARB_MSG_STS", 0xB88, 1, 4},
    {"ARB_SLV_CHOISE_Q_HEAD", 0xB8C, 1, 4},
    {"ARB_ERR_CAUSE", 0xB9C, 1, 4},
    {"ARB_ERR_MSG_EN", 0xBA0, 1, 4},
    {"ARB_ERR_STS_DRP", 0xBA8, 1, 4},
    {"ARB_MST_CRED_STS", 0xBB0, 32, 4},
    {"CGM_CFG", 0xC70, 1, 4},
    {"CGM_STS", 0xC74, 1, 4},
    {"CGM_CFG1", 0xC78, 1, 4},
    {"LOCAL_RANGE_BASE", 0xC80, 1, 4},
    {"LOCAL_RANGE_SIZE", 0xC84, 1, 4},
    {"CSMR_STRICT_PRIO_CFG", 0xC90, 1, 4},
    {"HBW_RD_RATE_LIM_CFG_1", 0xC94, 1, 4},
    {"LBW_WR_RATE_LIM_CFG_0", 0xC98, 1, 4},
    {"LBW_WR_RATE_LIM_CFG_1", 0xC9C, 1, 4},
    {"HBW_RD_RATE_LIM_CFG_0", 0xCA0, 1, 4},
    {"GLBL_AXCACHE", 0xCA4, 1, 4},
    {"IND_GW_APB_CFG", 0xCB0, 1, 4},
    {"IND_GW_APB_WDATA", 0xCB4, 1, 4},
    {"IND_GW_APB_RDATA", 0xCB8, 1, 4},
    {"IND_GW_APB_STATUS", 0xCBC, 1, 4},
    {"GLBL_ERR_ADDR_LO", 0xCD0, 1, 4},
    {"GLBL_ERR_ADDR_HI", 0xCD4, 1, 4},
    {"GLBL_ERR_WDATA", 0xCD8, 1, 4},
    {"GLBL_MEM_INIT_BUSY", 0xD00, 1, 4},
};

constexpr const QmRegDesc& qm_reg_desc(QmReg r) {
  if (static_cast<size_t>(r) >= kNumQmRegs) throw std::out_of_range("QMAN register out of range");
  return kQmRegTable[static_cast<size_t>(r)];
}

// Offset inside a QMAN block of instance `index` (stream or CP) of register family `r`.
constexpr uint32_t qm_reg_offset(QmReg r, unsigned index = 0) {
  const QmRegDesc& d = qm_reg_desc(r);
  if (index >= d.count) throw std::out_of_range("QMAN register instance out of range");
  if (r == QmReg::GlblMsgEn && index == 4) return 0x068;
  return d.offset + index * d.stride;
}

// CFG offset of a QMAN register: qman_reg(QmanId::DMA0, QmReg::CpFence2Rdata, 1) == 0x508334.
constexpr uint64_t qman_reg(QmanId q, QmReg r, unsigned index = 0) {
  return qman_base(q) + qm_reg_offset(r, index);
}

// Families that come in fence / message-base groups.
constexpr QmReg qm_fence_rdata(unsigned fence) {
  if (fence >= kFencesPerCp) throw std::out_of_range("fence id out of range");
  return static_cast<QmReg>(static_cast<unsigned>(QmReg::CpFence0Rdata) + fence);
}
constexpr QmReg qm_fence_cnt(unsigned fence) {
  if (fence >= kFencesPerCp) throw std::out_of_range("fence id out of range");
  return static_cast<QmReg>(static_cast<unsigned>(QmReg::CpFence0Cnt) + fence);
}
constexpr QmReg qm_msg_base_lo(unsigned base) {
  if (base >= kCpMsgBases) throw std::out_of_range("message base out of range");
  return static_cast<QmReg>(static_cast<unsigned>(QmReg::CpMsgBase0AddrLo) + 2 * base);
}
constexpr QmReg qm_msg_base_hi(unsigned base) {
  if (base >= kCpMsgBases) throw std::out_of_range("message base out of range");
  return static_cast<QmReg>(static_cast<unsigned>(QmReg::CpMsgBase0AddrHi) + 2 * base);
}
// CFG offset of CP_FENCE<fence>_RDATA_<cp>: the address a monitor payload writes to wake a FENCE.
constexpr uint64_t qman_fence_rdata(QmanId q, unsigned fence, unsigned cp) {
  return qman_reg(q, qm_fence_rdata(fence), cp);
}

struct QmRegRef {
  QmReg reg;
  uint8_t index;
};

// Which register family and instance a QMAN-relative offset is; nullopt for holes.
constexpr std::optional<QmRegRef> decode_qm_reg(uint32_t offset) {
  if (offset & 3u) return std::nullopt;
  if (offset == 0x068) return QmRegRef{QmReg::GlblMsgEn, 4};
  for (size_t i = 0; i < kNumQmRegs; ++i) {
    const QmRegDesc& d = kQmRegTable[i];
    unsigned count = static_cast<QmReg>(i) == QmReg::GlblMsgEn ? 4u : d.count;
    if (offset < d.offset) continue;
    uint32_t delta = offset - d.offset;
    if (delta % d.stride == 0 && delta / d.stride < count) {
      return QmRegRef{static_cast<QmReg>(i), static_cast<uint8_t>(delta / d.stride)};
    }
  }
  return std::nullopt;
}

// "CP_FENCE2_RDATA_1", "GLBL_CFG0".
std::string qm_reg_name(QmRegRef ref);

// QMAN bit fields (dma0_qm_masks.h). The PQF/CQF/CP groups have one bit per stream / CP.
namespace qm {
inline constexpr unsigned kGlblCfg0PqfEnShift = 0;     // [3:0]
inline constexpr unsigned kGlblCfg0CqfEnShift = 4;     // [8:4]
inline constexpr unsigned kGlblCfg0CpEnShift = 9;      // [13:9]
inline constexpr uint32_t kGlblCfg0PqfEnMask = 0xFu;
inline constexpr uint32_t kGlblCfg0CqfEnMask = 0x1F0u;
inline constexpr uint32_t kGlblCfg0CpEnMask = 0x3E00u;
inline constexpr unsigned kGlblCfg1PqfStopShift = 0;   // [3:0]
inline constexpr unsigned kGlblCfg1CqfStopShift = 4;   // [8:4]
inline constexpr unsigned kGlblCfg1CpStopShift = 9;    // [13:9]
inline constexpr unsigned kGlblCfg1PqfFlushShift = 16; // [19:16]
inline constexpr unsigned kGlblCfg1CqfFlushShift = 20; // [24:20]
inline constexpr unsigned kGlblCfg1CpFlushShift = 25;  // [29:25]
inline constexpr unsigned kGlblProtPqfShift = 0;
inline constexpr unsigned kGlblProtCqfShift = 4;
inline constexpr unsigned kGlblProtCpShift = 9;
inline constexpr uint32_t kGlblProtErr = 1u << 14;
inline constexpr uint32_t kGlblProtArb = 1u << 15;
inline constexpr unsigned kGlblErrCfgPqfMsgEnShift = 0;
inline constexpr unsigned kGlblErrCfgCqfMsgEnShift = 4;
inline constexpr unsigned kGlblErrCfgCpMsgEnShift = 9;
inline constexpr unsigned kGlblErrCfgPqfStopOnErrShift = 16;
inline constexpr unsigned kGlblErrCfgCqfStopOnErrShift = 20;
inline constexpr unsigned kGlblErrCfgCpStopOnErrShift = 25;
inline constexpr uint32_t kGlblErrCfgArbStopOnErr = 1u << 31;
inline constexpr unsigned kGlblSts0PqfIdleShift = 0;    // [3:0]
inline constexpr unsigned kGlblSts0CqfIdleShift = 4;    // [8:4]
inline constexpr unsigned kGlblSts0CpIdleShift = 9;     // [13:9]
inline constexpr unsigned kGlblSts0PqfIsStopShift = 16; // [19:16]
inline constexpr unsigned kGlblSts0CqfIsStopShift = 20; // [24:20]
inline constexpr unsigned kGlblSts0CpIsStopShift = 25;  // [29:25]
inline constexpr uint32_t kGlblSts0ArbIsStop = 1u << 31;
// GLBL_STS1_<cp> error causes (also the GLBL_MSG_EN_<cp> bits).
inline constexpr uint32_t kGlblSts1PqfRdErr = 1u << 0;
inline constexpr uint32_t kGlblSts1CqfRdErr = 1u << 1;
inline constexpr uint32_t kGlblSts1CpRdErr = 1u << 2;
inline constexpr uint32_t kGlblSts1CpUndefCmdErr = 1u << 3;
inline constexpr uint32_t kGlblSts1CpStopOp = 1u << 4;
inline constexpr uint32_t kGlblSts1CpMsgWrErr = 1u << 5;
inline constexpr uint32_t kGlblSts1CpWregErr = 1u << 6;
constexpr uint32_t glbl_sts1_fence_ovf(unsigned fence) { return 1u << (8 + fence); }
constexpr uint32_t glbl_sts1_fence_udf(unsigned fence) { return 1u << (12 + fence); }
inline constexpr uint32_t kCpFenceRdataIncValMask = 0xFu;  // a write adds value[3:0]
inline constexpr uint32_t kCpFenceCntMask = 0x3FFFu;       // CP_FENCEn_CNT [13:0]
inline constexpr uint32_t kCpStsMsgInflightCntMask = 0xFFFFu;
inline constexpr uint32_t kCpStsErdy = 1u << 16;
inline constexpr uint32_t kCpStsRrdy = 1u << 17;
inline constexpr uint32_t kCpStsMrdy = 1u << 18;
inline constexpr uint32_t kCpStsSwStop = 1u << 19;
inline constexpr unsigned kCpStsFenceIdShift = 20;         // [21:20]
inline constexpr uint32_t kCpStsFenceIdMask = 0x300000u;
inline constexpr uint32_t kCpStsFenceInProgress = 1u << 22;
inline constexpr uint32_t kCpBarrierCfgEbGuardMask = 0xFFFu;
inline constexpr unsigned kCpBarrierCfgRbGuardShift = 16;  // [19:16]
inline constexpr uint32_t kCqCtlRptMask = 0xFFFFu;
inline constexpr unsigned kCqCtlCtlShift = 16;
inline constexpr uint32_t kPqSts1Busy = 1u << 31;
inline constexpr uint32_t kPqSts1BufEmpty = 1u << 30;
inline constexpr uint32_t kArbCfg0Type = 1u << 0;          // 0 = priority, 1 = WRR
inline constexpr uint32_t kArbCfg0IsMaster = 1u << 4;
inline constexpr uint32_t kArbCfg0En = 1u << 8;
inline constexpr unsigned kArbCfg0MaskShift = 12;          // [15:12], one bit per stream
inline constexpr uint32_t kArbCfg0MstMsgNostall = 1u << 16;
inline constexpr uint32_t kArbChoiseQPushMask = 0x3u;
inline constexpr uint32_t kArbErrChoiseOvf = 1u << 0;      // ARB_ERR_CAUSE / ARB_ERR_MSG_EN
inline constexpr uint32_t kArbErrChoiseWdt = 1u << 1;
inline constexpr uint32_t kArbErrAxiLbwErr = 1u << 2;
inline constexpr uint32_t kCgmStsAgentIdle = 1u << 8;
inline constexpr uint32_t kCgmStsAxiIdle = 1u << 9;
inline constexpr uint32_t kCgmStsCpIdle = 1u << 10;
}  // namespace qm

// ---------------------------------------------------------------------------------------------
// DMA core registers (dma0_core_regs.h, dma0_core_masks.h), relative to dma_core_base(ch)
// ---------------------------------------------------------------------------------------------

namespace dma_core {
inline constexpr uint32_t kCfg0 = 0x000;
inline constexpr uint32_t kCfg1 = 0x004;
inline constexpr uint32_t kLbwMaxOutstand = 0x008;
inline constexpr uint32_t kSrcBaseLo = 0x014;
inline constexpr uint32_t kSrcBaseHi = 0x018;
inline constexpr uint32_t kDstBaseLo = 0x01C;
inline constexpr uint32_t kDstBaseHi = 0x020;
inline constexpr uint32_t kSrcTsize0 = 0x04C;  // dimension 0 sits after dimensions 1..4
inline constexpr uint32_t kDstTsize0 = 0x074;
inline constexpr uint32_t kCommit = 0x078;
inline constexpr uint32_t kWrCompWdata = 0x07C;
inline constexpr uint32_t kWrCompAddrLo = 0x080;
inline constexpr uint32_t kWrCompAddrHi = 0x084;
inline constexpr uint32_t kWrCompAwuser = 0x088;
inline constexpr uint32_t kTeNumrows = 0x094;
inline constexpr uint32_t kProt = 0x0B8;
inline constexpr uint32_t kSecureProps = 0x0F0;
inline constexpr uint32_t kNonSecureProps = 0x0F4;
inline constexpr uint32_t kRdMaxOutstand = 0x100;
inline constexpr uint32_t kRdMaxSize = 0x104;
inline constexpr uint32_t kRdArcache = 0x108;
inline constexpr uint32_t kRdAruser = 0x110;
inline constexpr uint32_t kRdInflights = 0x114;
inline constexpr uint32_t kWrMaxOutstand = 0x120;
inline constexpr uint32_t kWrMaxAwid = 0x124;
inline constexpr uint32_t kWrAwcache = 0x128;
inline constexpr uint32_t kWrAwuser = 0x130;
inline constexpr uint32_t kWrInflights = 0x134;
inline constexpr uint32_t kRdRateLimCfg0 = 0x150;
inline constexpr uint32_t kRdRateLimCfg1 = 0x154;
inline constexpr uint32_t kWrRateLimCfg0 = 0x158;
inline constexpr uint32_t kWrRateLimCfg1 = 0x15C;
inline constexpr uint32_t kErrCfg = 0x160;
inline constexpr uint32_t kErrCause = 0x164;
inline constexpr uint32_t kErrmsgAddrLo = 0x170;
inline constexpr uint32_t kErrmsgAddrHi = 0x174;
inline constexpr uint32_t kErrmsgWdata = 0x178;
inline constexpr uint32_t kSts0 = 0x190;
inline constexpr uint32_t kSts1 = 0x194;
// hpusim's reduction mode (not in Gaudi 1's map; Gaudi 2's engines reduce on the write): with
// EN set, a copy writes op(destination, source) element by element instead of the source. Latched
// at COMMIT like the other transfer registers.
inline constexpr uint32_t kReduceCfg = 0x1A0;
inline constexpr uint32_t kReduceEn = 1u << 0;
inline constexpr unsigned kReduceOpShift = 1;               // [2:1]: 0 sum, 1 min, 2 max
inline constexpr uint32_t kReduceOpMask = 3u << kReduceOpShift;
inline constexpr unsigned kReduceTypeShift = 4;             // [7:4]: 0 f32, 1 bf16
inline constexpr uint32_t kReduceTypeMask = 0xFu << kReduceTypeShift;
inline constexpr unsigned kNumDims = 5;

// Strided transfer: TSIZE_d for d = 0..4, STRIDE_d for d = 1..4.
constexpr uint32_t src_tsize(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("DMA dimension out of range");
  return d == 0 ? kSrcTsize0 : 0x02C + 8 * (d - 1);
}
constexpr uint32_t src_stride(unsigned d) {
  if (d == 0 || d >= kNumDims) throw std::out_of_range("DMA stride dimension out of range");
  return 0x030 + 8 * (d - 1);
}
constexpr uint32_t dst_tsize(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("DMA dimension out of range");
  return d == 0 ? kDstTsize0 : 0x054 + 8 * (d - 1);
}
constexpr uint32_t dst_stride(unsigned d) {
  if (d == 0 || d >= kNumDims) throw std::out_of_range("DMA stride dimension out of range");
  return 0x058 + 8 * (d - 1);
}

inline constexpr uint32_t kCfg0En = 1u << 0;
inline constexpr uint32_t kCfg1Halt = 1u << 0;
inline constexpr uint32_t kCfg1Flush = 1u << 1;
inline constexpr uint32_t kCfg1SbForceMiss = 1u << 2;
inline constexpr uint32_t kDstBaseHiValMask = 0xFFFFFFu;   // address bits [55:32]
inline constexpr unsigned kDstBaseHiCtxIdHiShift = 24;      // context id [15:8]
inline constexpr uint32_t kCommitWrCompEn = 1u << 0;
inline constexpr uint32_t kCommitTranspose = 1u << 1;
inline constexpr uint32_t kCommitDtype = 1u << 2;
inline constexpr uint32_t kCommitLin = 1u << 3;
inline constexpr uint32_t kCommitMemSet = 1u << 4;
inline constexpr uint32_t kCommitCompress = 1u << 5;
inline constexpr uint32_t kCommitDecompress = 1u << 6;
inline constexpr unsigned kCommitCtxIdShift = 16;           // context id [7:0] in [23:16]
inline constexpr uint32_t kCommitCtxIdMask = 0xFF0000u;
inline constexpr uint32_t kProtVal = 1u << 0;
inline constexpr uint32_t kProtErrVal = 1u << 1;
inline constexpr uint32_t kPropsAsidMask = 0x3FFu;          // SECURE_PROPS / NON_SECURE_PROPS
inline constexpr uint32_t kPropsMmbp = 1u << 10;            // MMU bypass
inline constexpr uint32_t kErrCfgErrMsgEn = 1u << 0;
inline constexpr uint32_t kErrCfgStopOnErr = 1u << 1;
inline constexpr uint32_t kErrCauseHbwRdErr = 1u << 0;
inline constexpr uint32_t kErrCauseHbwWrErr = 1u << 1;
inline constexpr uint32_t kErrCauseLbwWrErr = 1u << 2;
inline constexpr uint32_t kErrCauseDescOvf = 1u << 3;
inline constexpr uint32_t kSts0RdReqCntMask = 0x7FFFu;
inline constexpr unsigned kSts0WrReqCntShift = 16;          // [30:16]
inline constexpr uint32_t kSts0Busy = 1u << 31;
inline constexpr uint32_t kSts1IsHalt = 1u << 0;
}  // namespace dma_core

// ---------------------------------------------------------------------------------------------
// TPC CFG registers (tpc0_cfg_regs.h), relative to tpc_cfg_base(tpc)
// ---------------------------------------------------------------------------------------------
// The block holds two identical descriptor sets: KERNEL_* at 0x400 and QM_* at 0xA00 (the one
// Synapse writes through the QMAN, starting at "qm_tensor_0"). Each set: 16 tensor descriptors of
// 0x38 bytes, the end-of-kernel sync object (message, addr), the kernel base address, the
// index-space base/size per dimension, kernel_config, kernel_id and 32 scalar registers (SRF).

namespace tpc_cfg {
inline constexpr uint32_t kKernelDesc = 0x400;   // KERNEL_TENSOR_0_BASE_ADDR_LOW
inline constexpr uint32_t kQmDesc = 0xA00;       // QM_TENSOR_0_BASE_ADDR_LOW ("qm_tensor_0")
inline constexpr unsigned kNumTensors = 16;
inline constexpr unsigned kNumDims = 5;
inline constexpr unsigned kNumSrfs = 32;

// Offsets inside one descriptor set.
inline constexpr uint32_t kTensorStride = 0x38;
inline constexpr uint32_t kTensorBaseAddrLow = 0x00;  // inside one tensor descriptor
inline constexpr uint32_t kTensorBaseAddrHigh = 0x04;
inline constexpr uint32_t kTensorPaddingValue = 0x08;
inline constexpr uint32_t kTensorConfig = 0x0C;
constexpr uint32_t tensor_dim_size(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("tensor dimension out of range");
  return 0x10 + 8 * d;
}
constexpr uint32_t tensor_dim_stride(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("tensor dimension out of range");
  return 0x14 + 8 * d;
}
inline constexpr uint32_t kDescSyncObjectMessage = 0x380;
inline constexpr uint32_t kDescSyncObjectAddr = 0x384;
inline constexpr uint32_t kDescKernelBaseAddressLow = 0x388;
inline constexpr uint32_t kDescKernelBaseAddressHigh = 0x38C;
constexpr uint32_t desc_tid_base_dim(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("index-space dimension out of range");
  return 0x390 + 8 * d;
}
constexpr uint32_t desc_tid_size_dim(unsigned d) {
  if (d >= kNumDims) throw std::out_of_range("index-space dimension out of range");
  return 0x394 + 8 * d;
}
inline constexpr uint32_t kDescKernelConfig = 0x3B8;
inline constexpr uint32_t kDescKernelId = 0x3BC;
constexpr uint32_t desc_srf(unsigned i) {
  if (i >= kNumSrfs) throw std::out_of_range("SRF index out of range");
  return 0x3C0 + 4 * i;
}
inline constexpr uint32_t kDescSize = 0x440;

// Block-relative offsets of the QM descriptor set (what the QMAN path programs).
constexpr uint32_t qm_tensor(unsigned t) {
  if (t >= kNumTensors) throw std::out_of_range("tensor index out of range");
  return kQmDesc + t * kTensorStride;
}
inline constexpr uint32_t kQmTensor0 = kQmDesc;
inline constexpr uint32_t kQmSyncObjectMessage = kQmDesc + kDescSyncObjectMessage;        // 0xD80
inline constexpr uint32_t kQmSyncObjectAddr = kQmDesc + kDescSyncObjectAddr;              // 0xD84
inline constexpr uint32_t kQmKernelBaseAddressLow = kQmDesc + kDescKernelBaseAddressLow;  // 0xD88
inline constexpr uint32_t kQmKernelBaseAddressHigh = kQmDesc + kDescKernelBaseAddressHigh;
constexpr uint32_t qm_tid_base_dim(unsigned d) { return kQmDesc + desc_tid_base_dim(d); }
constexpr uint32_t qm_tid_size_dim(unsigned d) { return kQmDesc + desc_tid_size_dim(d); }
inline constexpr uint32_t kQmKernelConfig = kQmDesc + kDescKernelConfig;                  // 0xDB8
inline constexpr uint32_t kQmKernelId = kQmDesc + kDescKernelId;
constexpr uint32_t qm_srf(unsigned i) { return kQmDesc + desc_srf(i); }                   // 0xDC0..

// Block-relative offsets of the KERNEL descriptor set.
constexpr uint32_t kernel_tensor(unsigned t) {
  if (t >= kNumTensors) throw std::out_of_range("tensor index out of range");
  return kKernelDesc + t * kTensorStride;
}
inline constexpr uint32_t kKernelSyncObjectMessage = kKernelDesc + kDescSyncObjectMessage;  // 0x780
inline constexpr uint32_t kKernelSyncObjectAddr = kKernelDesc + kDescSyncObjectAddr;
inline constexpr uint32_t kKernelKernelBaseAddressLow = kKernelDesc + kDescKernelBaseAddressLow;
inline constexpr uint32_t kKernelKernelBaseAddressHigh = kKernelDesc + kDescKernelBaseAddressHigh;
constexpr uint32_t kernel_tid_base_dim(unsigned d) { return kKernelDesc + desc_tid_base_dim(d); }
constexpr uint32_t kernel_tid_size_dim(unsigned d) { return kKernelDesc + desc_tid_size_dim(d); }
inline constexpr uint32_t kKernelKernelConfig = kKernelDesc + kDescKernelConfig;            // 0x7B8
inline constexpr uint32_t kKernelKernelId = kKernelDesc + kDescKernelId;
constexpr uint32_t kernel_srf(unsigned i) { return kKernelDesc + desc_srf(i); }             // 0x7C0..

// Control and status.
inline constexpr uint32_t kRoundCsr = 0x8FC;
inline constexpr uint32_t kProt = 0x900;
inline constexpr uint32_t kSemaphore = 0x908;
inline constexpr uint32_t kVflags = 0x90C;
inline constexpr uint32_t kSflags = 0x910;
inline constexpr uint32_t kLfsrPolynom = 0x918;
inline constexpr uint32_t kStatus = 0x91C;
inline constexpr uint32_t kCfgBaseAddressHigh = 0x920;
inline constexpr uint32_t kCfgSubtractValue = 0x924;
inline constexpr uint32_t kSmBaseAddressHigh = 0x92C;
inline constexpr uint32_t kTpcCmd = 0x930;
inline constexpr uint32_t kTpcExecute = 0x938;
inline constexpr uint32_t kTpcStall = 0x93C;
inline constexpr uint32_t kIcacheBaseAddressLow = 0x940;   // hardware name: ICACHE_BASE_ADDERESS_LOW
inline constexpr uint32_t kIcacheBaseAddressHigh = 0x944;
inline constexpr uint32_t kRdRateLimit = 0x948;
inline constexpr uint32_t kWrRateLimit = 0x950;
inline constexpr uint32_t kMssConfig = 0x954;
inline constexpr uint32_t kTpcIntrCause = 0x958;
inline constexpr uint32_t kTpcIntrMask = 0x95C;
inline constexpr uint32_t kWqCredits = 0x960;
inline constexpr uint32_t kAruserLo = 0x964;
inline constexpr uint32_t kAruserHi = 0x968;
inline constexpr uint32_t kAwuserLo = 0x96C;
inline constexpr uint32_t kAwuserHi = 0x970;
inline constexpr uint32_t kOpcodeExec = 0x974;
inline constexpr uint32_t kLutFunc32BaseAddrLo = 0x978;
inline constexpr uint32_t kLutFunc32BaseAddrHi = 0x97C;
inline constexpr uint32_t kLutFunc64BaseAddrLo = 0x980;
inline constexpr uint32_t kLutFunc64BaseAddrHi = 0x984;
inline constexpr uint32_t kLutFunc128BaseAddrLo = 0x988;
inline constexpr uint32_t kLutFunc128BaseAddrHi = 0x98C;
inline constexpr uint32_t kLutFunc256BaseAddrLo = 0x990;
inline constexpr uint32_t kLutFunc256BaseAddrHi = 0x994;
inline constexpr uint32_t kTsbCfgMaxSize = 0x998;
inline constexpr uint32_t kTsbCfg = 0x99C;
inline constexpr uint32_t kTsbInflightCntr = 0x9B4;
inline constexpr uint32_t kWqInflightCntr = 0x9B8;
inline constexpr uint32_t kWqLbwTotalCntr = 0x9BC;
inline constexpr uint32_t kWqHbwTotalCntr = 0x9C0;
inline constexpr uint32_t kIrqOccoupyCntr = 0x9C4;
}  // namespace tpc_cfg

// ---------------------------------------------------------------------------------------------
// MME control block (mme0_ctrl_regs.h), relative to mme_ctrl_base(mme)
// ---------------------------------------------------------------------------------------------

namespace mme_ctrl {
inline constexpr uint32_t kArchStatus = 0x000;
inline constexpr uint32_t kArchBaseAddrHighS = 0x008;  // the "arch" descriptor starts here
inline constexpr uint32_t kArchBaseAddrHighL = 0x00C;
inline constexpr uint32_t kArchBaseAddrHighO = 0x010;
inline constexpr uint32_t kArchDescEnd = 0x228;        // one past ARCH_DESC_DUMMY (0x224)
inline constexpr uint32_t kCmd = 0x280;
inline constexpr uint32_t kStatus1 = 0x284;
inline constexpr uint32_t kReset = 0x288;
inline constexpr uint32_t kQmStall = 0x28C;
}  // namespace mme_ctrl

// ---------------------------------------------------------------------------------------------
// Sync managers (gaudi_blocks.h, gaudi_regs.h, gaudi_masks.h, sob_objs block layout)
// ---------------------------------------------------------------------------------------------

// Hardware index order; also the address order (W_S lowest, stride 0x20000).
enum class SyncManager : uint8_t { W_S = 0, E_S = 1, W_N = 2, E_N = 3 };
inline constexpr unsigned kNumSyncManagers = 4;

const char* sync_manager_name(SyncManager sm);  // "W_S", "E_S", "W_N", "E_N"

namespace sm {
inline constexpr unsigned kNumSobs = 2048;
inline constexpr unsigned kNumMonitors = 512;
inline constexpr unsigned kNumSmSec = 256;
inline constexpr unsigned kSobsPerGroup = 8;  // a monitor watches one group of 8 SOBs

// Offsets inside a SYNC_MNGR_OBJS block (the first 4 KB of the block are not registers).
inline constexpr uint32_t kObjsSobObj0 = 0x1000;
inline constexpr uint32_t kObjsMonPayAddrL0 = 0x3000;
inline constexpr uint32_t kObjsMonPayAddrH0 = 0x3800;
inline constexpr uint32_t kObjsMonPayData0 = 0x4000;
inline constexpr uint32_t kObjsMonArm0 = 0x4800;
inline constexpr uint32_t kObjsMonStatus0 = 0x5000;
inline constexpr uint32_t kObjsSmSec0 = 0x5800;
inline constexpr uint32_t kObjsSize = 0x5C00;

// SOB_OBJ: val[14:0]; a write with inc=1 adds val, inc=0 sets it.
inline constexpr uint32_t kSobValMask = 0x7FFFu;
inline constexpr uint32_t kSobTraceEvict = 1u << 30;
inline constexpr uint32_t kSobInc = 1u << 31;
// MON_ARM: sid[7:0] = sob / 8, mask[15:8] (set bit = SOB ignored), sop b16 (0: >=, 1: ==),
// sod[31:17] = 15-bit target value.
inline constexpr uint32_t kMonArmSidMask = 0xFFu;
inline constexpr unsigned kMonArmMaskShift = 8;
inline constexpr uint32_t kMonArmMaskMask = 0xFF00u;
inline constexpr uint32_t kMonArmSop = 1u << 16;
inline constexpr unsigned kMonArmSodShift = 17;
inline constexpr uint32_t kMonArmSodMask = 0xFFFE0000u;
// MON_STATUS: valid b0, pending[8:1], prot b9.
inline constexpr uint32_t kMonStatusValid = 1u << 0;
inline constexpr unsigned kMonStatusPendingShift = 1;
inline constexpr uint32_t kMonStatusPendingMask = 0x1FEu;
inline constexpr uint32_t kMonStatusProt = 1u << 9;

constexpr uint32_t make_mon_arm(unsigned sync_group, uint8_t mask, bool equal, uint32_t target) {
  if (sync_group >= kNumSobs / kSobsPerGroup) throw std::out_of_range("sync group out of range");
  if (target > kSobValMask) throw std::out_of_range("monitor target exceeds 15 bits");
  return sync_group | (uint32_t{mask} << kMonArmMaskShift) | (equal ? kMonArmSop : 0u) |
         (target << kMonArmSodShift);
}
// The arm mask that watches only `sob` inside its group.
constexpr uint8_t single_sob_mask(unsigned sob) { return static_cast<uint8_t>(~(1u << (sob % 8))); }
}  // namespace sm

constexpr uint64_t sm_glbl_base(SyncManager s) {
  unsigned i = static_cast<unsigned>(s);
  if (i >= kNumSyncManagers) throw std::out_of_range("sync manager out of range");
  return kSmGlbl0Base + i * kSmStride;
}
constexpr uint64_t sm_objs_base(SyncManager s) { return sm_glbl_base(s) + kSmObjsDelta; }
constexpr uint64_t sm_sob(SyncManager s, unsigned sob) {
  if (sob >= sm::kNumSobs) throw std::out_of_range("sync object out of range");
  return sm_objs_base(s) + sm::kObjsSobObj0 + 4 * sob;
}
constexpr uint64_t sm_mon_reg(SyncManager s, uint32_t family_offset, unsigned mon) {
  if (mon >= sm::kNumMonitors) throw std::out_of_range("monitor out of range");
  return sm_objs_base(s) + family_offset + 4 * mon;
}
constexpr uint64_t sm_mon_pay_addrl(SyncManager s, unsigned mon) { return sm_mon_reg(s, sm::kObjsMonPayAddrL0, mon); }
constexpr uint64_t sm_mon_pay_addrh(SyncManager s, unsigned mon) { return sm_mon_reg(s, sm::kObjsMonPayAddrH0, mon); }
constexpr uint64_t sm_mon_pay_data(SyncManager s, unsigned mon) { return sm_mon_reg(s, sm::kObjsMonPayData0, mon); }
constexpr uint64_t sm_mon_arm(SyncManager s, unsigned mon) { return sm_mon_reg(s, sm::kObjsMonArm0, mon); }
constexpr uint64_t sm_mon_status(SyncManager s, unsigned mon) { return sm_mon_reg(s, sm::kObjsMonStatus0, mon); }

// What the driver programs into CP_MSG_BASE<k>_ADDR of every CP (CFG offsets; add kCfgBase):
// 0 = E_N monitors (MON_PAY_ADDRL_0), 1 = E_N sync objects (SOB_OBJ_0), 2 = W_S monitors,
// 3 = W_S sync objects. A MSG_SHORT with base k writes kCfgBase + cp_msg_base_default(k) + offset.
constexpr uint64_t cp_msg_base_default(unsigned base) {
  switch (base) {
    case 0: return sm_mon_pay_addrl(SyncManager::E_N, 0);
    case 1: return sm_sob(SyncManager::E_N, 0);
    case 2: return sm_mon_pay_addrl(SyncManager::W_S, 0);
    case 3: return sm_sob(SyncManager::W_S, 0);
    default: throw std::out_of_range("message base out of range");
  }
}

// ---------------------------------------------------------------------------------------------
// PCIe MSI / doorbells, CPU-IF, PSOC timestamp, GIC (gaudi_regs.h, cpu_if_regs.h,
// psoc_timestamp_regs.h). Absolute CFG offsets, like the driver's mm* names.
// ---------------------------------------------------------------------------------------------

namespace pcie {
// Completion MSI: the driver's second end-of-CB MSG_PROT writes 1 to CFG_BASE +
// mmPCIE_MSI_INTR_0 + 4 * vector (multi-MSI mode) or to CFG_BASE + mmPCIE_CORE_MSI_REQ.
inline constexpr uint64_t kMsiIntr0 = 0xC13000;   // mmPCIE_MSI_INTR_0 (PCIE_MSI block)
inline constexpr unsigned kMsiEntries = 32;       // GAUDI_MSI_ENTRIES
inline constexpr uint64_t kCoreMsiReq = 0xC04100; // mmPCIE_CORE_MSI_REQ (PCIE_CORE block)
constexpr uint64_t msi_intr(unsigned vector) {
  if (vector >= kMsiEntries) throw std::out_of_range("MSI vector out of range");
  return kMsiIntr0 + 4 * vector;
}
}  // namespace pcie

namespace cpu_if {
inline constexpr uint64_t kPfPqPi = 0x442200;     // CPU_PQ doorbell (mmCPU_IF_PF_PQ_PI)
inline constexpr uint64_t kPqBaseAddrLow = 0x442204;
inline constexpr uint64_t kPqBaseAddrHigh = 0x442208;
inline constexpr uint64_t kPqLength = 0x44220C;
inline constexpr uint64_t kCqBaseAddrLow = 0x442210;
inline constexpr uint64_t kCqBaseAddrHigh = 0x442214;
inline constexpr uint64_t kCqLength = 0x442218;
inline constexpr uint64_t kEqBaseAddrLow = 0x442220;
inline constexpr uint64_t kEqBaseAddrHigh = 0x442224;
inline constexpr uint64_t kEqLength = 0x442228;
inline constexpr uint64_t kEqRdOffs = 0x44222C;   // driver writes the EQ consumer index here
inline constexpr uint64_t kQueueInit = 0x442230;
}  // namespace cpu_if

namespace psoc_timestamp {
inline constexpr uint64_t kCntcr = 0xC49000;
inline constexpr uint64_t kCntsr = 0xC49004;
inline constexpr uint64_t kCntcvl = 0xC49008;     // counter value [31:0]
inline constexpr uint64_t kCntcvu = 0xC4900C;     // counter value [63:32]
inline constexpr uint64_t kCntfid0 = 0xC49020;
}  // namespace psoc_timestamp

// enum gaudi_engine_id: DMA_0..7 = 0..7, MME_0..3 = 8..11, TPC_0..7 = 12..19, NIC_0..9 = 20..29.
inline std::string engine_name(uint32_t engine_id) {
  if (engine_id < 8) return "DMA" + std::to_string(engine_id);
  if (engine_id < 12) return "MME" + std::to_string(engine_id - 8);
  if (engine_id < 20) return "TPC" + std::to_string(engine_id - 12);
  if (engine_id < 30) return "NIC" + std::to_string(engine_id - 20);
  return "engine " + std::to_string(engine_id);
}

namespace mmu {
// The MMU's register blocks (mmu_up_regs.h, stlb_regs.h, mmu_v1_1.h): MMU_UP at 0xC11000, STLB
// at 0xC12000.
inline constexpr uint64_t kMmuUpBase = 0xC11000;
inline constexpr uint64_t kMmuUpEnable = 0xC1100C;           // mmMMU_UP_MMU_ENABLE
inline constexpr uint64_t kMmuUpSpiMask = 0xC1102C;          // mmMMU_UP_SPI_MASK
inline constexpr uint64_t kPageErrorCapture = 0xC11034;      // mmMMU_UP_PAGE_ERROR_CAPTURE
inline constexpr uint64_t kPageErrorCaptureVa = 0xC11038;    // mmMMU_UP_PAGE_ERROR_CAPTURE_VA
inline constexpr uint32_t kCaptureVa4932Mask = 0x3FFFF;      // VA[49:32]
inline constexpr uint32_t kCaptureEntryValid = 1u << 18;
inline constexpr uint32_t kCaptureWrite = 1u << 19;          // hpusim: the access was a write
inline constexpr unsigned kCaptureEngineShift = 24;          // hpusim: [30:24] the master's engine id
inline constexpr uint32_t kCaptureEngineMask = 0x7Fu << kCaptureEngineShift;
inline constexpr uint64_t kBusy = 0xC12000;                  // MMU_BUSY
inline constexpr uint64_t kAsid = 0xC12004;                  // MMU_ASID
inline constexpr uint64_t kHop0Pa4312 = 0xC12008;            // MMU_HOP0_PA43_12
inline constexpr uint64_t kHop0Pa4944 = 0xC1200C;            // MMU_HOP0_PA49_44
inline constexpr uint32_t kBusyBit = 0x80000000u;
inline constexpr uint64_t kStlbCacheInv = 0xC12010;          // mmSTLB_CACHE_INV
inline constexpr uint64_t kStlbInvAllStart = 0xC12034;       // mmSTLB_INV_ALL_START
inline constexpr uint64_t kStlbInvPs = 0xC1203C;             // mmSTLB_INV_PS
inline constexpr uint64_t kStlbInvConsumerIndex = 0xC12040;  // mmSTLB_INV_CONSUMER_INDEX
inline constexpr uint64_t kStlbInvSet = 0xC12048;            // mmSTLB_INV_SET
}  // namespace mmu

namespace gic {
// QMAN/DMA error messages (GLBL_ERR_ADDR / ERRMSG_ADDR) and the CPU_PQ doorbell event go here.
inline constexpr uint64_t kGicdSetspiNsr = 0x800040;  // mmGIC_DISTRIBUTOR__5_GICD_SETSPI_NSR
}  // namespace gic

// ---------------------------------------------------------------------------------------------
// Queue ids (enum gaudi_queue_id, include/uapi/drm/habanalabs_accel.h)
// ---------------------------------------------------------------------------------------------

enum class QueueId : uint32_t {
  DMA_0_0 = 0, DMA_0_1, DMA_0_2, DMA_0_3,
  DMA_1_0, DMA_1_1, DMA_1_2, DMA_1_3,
  CPU_PQ = 8,
  DMA_2_0 = 9, DMA_2_1, DMA_2_2, DMA_2_3,
  DMA_3_0, DMA_3_1, DMA_3_2, DMA_3_3,
  DMA_4_0, DMA_4_1, DMA_4_2, DMA_4_3,
  DMA_5_0, DMA_5_1, DMA_5_2, DMA_5_3,
  DMA_6_0, DMA_6_1, DMA_6_2, DMA_6_3,
  DMA_7_0, DMA_7_1, DMA_7_2, DMA_7_3,
  MME_0_0 = 33, MME_0_1, MME_0_2, MME_0_3,
  MME_1_0, MME_1_1, MME_1_2, MME_1_3,
  TPC_0_0 = 41, TPC_0_1, TPC_0_2, TPC_0_3,
  TPC_1_0, TPC_1_1, TPC_1_2, TPC_1_3,
  TPC_2_0, TPC_2_1, TPC_2_2, TPC_2_3,
  TPC_3_0, TPC_3_1, TPC_3_2, TPC_3_3,
  TPC_4_0, TPC_4_1, TPC_4_2, TPC_4_3,
  TPC_5_0, TPC_5_1, TPC_5_2, TPC_5_3,
  TPC_6_0, TPC_6_1, TPC_6_2, TPC_6_3,
  TPC_7_0, TPC_7_1, TPC_7_2, TPC_7_3,
  NIC_0_0 = 73, NIC_0_1, NIC_0_2, NIC_0_3,
  NIC_1_0, NIC_1_1, NIC_1_2, NIC_1_3,
  NIC_2_0, NIC_2_1, NIC_2_2, NIC_2_3,
  NIC_3_0, NIC_3_1, NIC_3_2, NIC_3_3,
  NIC_4_0, NIC_4_1, NIC_4_2, NIC_4_3,
  NIC_5_0, NIC_5_1, NIC_5_2, NIC_5_3,
  NIC_6_0, NIC_6_1, NIC_6_2, NIC_6_3,
  NIC_7_0, NIC_7_1, NIC_7_2, NIC_7_3,
  NIC_8_0, NIC_8_1, NIC_8_2, NIC_8_3,
  NIC_9_0, NIC_9_1, NIC_9_2, NIC_9_3,
};
inline constexpr unsigned kNumGaudi1Queues = 113;   // GAUDI_QUEUE_ID_SIZE
// hpusim's extension: the queues of engines past Gaudi 1's follow, four streams each:
// DMA_8_x..DMA_9_x (113..120), MME_2_x..MME_7_x (121..144, MME group g >= 2 runs on master 2g),
// TPC_8_x..TPC_63_x (145..368), NIC_10_x..NIC_23_x (369..424).
inline constexpr unsigned kExtDmaQueue0 = kNumGaudi1Queues;
inline constexpr unsigned kExtMmeQueue0 = kExtDmaQueue0 + 4 * (kMaxDmaChannels - kGaudi1DmaChannels);
inline constexpr unsigned kExtTpcQueue0 = kExtMmeQueue0 + 4 * (kMaxMmeMasters - kGaudi1MmeEngines / 2);
inline constexpr unsigned kExtNicQueue0 = kExtTpcQueue0 + 4 * (kMaxTpcEngines - kGaudi1TpcEngines);
inline constexpr unsigned kNumQueues = kExtNicQueue0 + 4 * (kMaxNicEngines - kGaudi1NicEngines);

enum class QueueKind : uint8_t { Dma, Cpu, Mme, Tpc, Nic };

// enum gaudi_engine_id (busy masks, error reports).
enum class EngineId : uint8_t {
  DMA_0 = 0, DMA_1, DMA_2, DMA_3, DMA_4, DMA_5, DMA_6, DMA_7,
  MME_0 = 8, MME_1, MME_2, MME_3,
  TPC_0 = 12, TPC_1, TPC_2, TPC_3, TPC_4, TPC_5, TPC_6, TPC_7,
  NIC_0 = 20, NIC_1, NIC_2, NIC_3, NIC_4, NIC_5, NIC_6, NIC_7, NIC_8, NIC_9,
};
inline constexpr unsigned kNumGaudi1Engines = 30;   // GAUDI_ENGINE_ID_SIZE
// Engine ids run on past Gaudi 1's like QMAN indexes (engine_id); "no engine" is past them all.
inline constexpr EngineId kNoEngine = static_cast<EngineId>(kNumQmans);

constexpr unsigned to_index(QueueId q) { return static_cast<unsigned>(q); }
constexpr QueueId queue_from_index(unsigned i) {
  if (i >= kNumQueues) throw std::out_of_range("queue id out of range");
  return static_cast<QueueId>(i);
}
constexpr QueueKind queue_kind(QueueId q) {
  const unsigned i = to_index(q);
  if (i >= kNumQueues) throw std::out_of_range("queue id out of range");
  if (i >= kNumGaudi1Queues)
    return i < kExtMmeQueue0 ? QueueKind::Dma : i < kExtTpcQueue0 ? QueueKind::Mme : i < kExtNicQueue0 ? QueueKind::Tpc : QueueKind::Nic;
  if (i < 8 || (i >= 9 && i < 33)) return QueueKind::Dma;
  if (i == 8) return QueueKind::Cpu;
  if (i < 41) return QueueKind::Mme;
  if (i < 73) return QueueKind::Tpc;
  return QueueKind::Nic;
}
namespace detail {
// The first queue id of an engine's four streams (CPU_PQ: its own id).
constexpr unsigned first_queue(QueueKind kind, unsigned engine) {
  switch (kind) {
    case QueueKind::Dma:
      return engine < 2 ? engine * 4 : engine < kGaudi1DmaChannels ? 9 + (engine - 2) * 4
                                                                    : kExtDmaQueue0 + (engine - kGaudi1DmaChannels) * 4;
    case QueueKind::Cpu: return 8;
    case QueueKind::Mme: return engine < 2 ? 33 + engine * 4 : kExtMmeQueue0 + (engine - 2) * 4;
    case QueueKind::Tpc:
      return engine < kGaudi1TpcEngines ? 41 + engine * 4 : kExtTpcQueue0 + (engine - kGaudi1TpcEngines) * 4;
    case QueueKind::Nic:
      return engine < kGaudi1NicEngines ? 73 + engine * 4 : kExtNicQueue0 + (engine - kGaudi1NicEngines) * 4;
  }
  return 0;
}
}  // namespace detail
// Engine number in the queue name: DMA channel, MME queue group, TPC or NIC engine. 0 for CPU_PQ.
constexpr unsigned queue_engine(QueueId q) {
  const unsigned i = to_index(q);
  switch (queue_kind(q)) {
    case QueueKind::Dma:
      return i < 8 ? i / 4 : i < kNumGaudi1Queues ? 2 + (i - 9) / 4 : kGaudi1DmaChannels + (i - kExtDmaQueue0) / 4;
    case QueueKind::Cpu: return 0;
    case QueueKind::Mme: return i < kNumGaudi1Queues ? (i - 33) / 4 : 2 + (i - kExtMmeQueue0) / 4;
    case QueueKind::Tpc: return i < kNumGaudi1Queues ? (i - 41) / 4 : kGaudi1TpcEngines + (i - kExtTpcQueue0) / 4;
    case QueueKind::Nic: return i < kNumGaudi1Queues ? (i - 73) / 4 : kGaudi1NicEngines + (i - kExtNicQueue0) / 4;
  }
  return 0;
}
// Stream (PQ / upper CP) 0..3 of the queue's QMAN; 0 for CPU_PQ.
constexpr unsigned queue_stream(QueueId q) {
  if (queue_kind(q) == QueueKind::Cpu) return 0;
  return to_index(q) - detail::first_queue(queue_kind(q), queue_engine(q));
}
// External queues (the PCI DMA channels DMA0/DMA1): parsed by the driver, completion + MSI.
constexpr bool queue_is_external(QueueId q) { return to_index(q) < 8; }
constexpr bool queue_is_cpu(QueueId q) { return q == QueueId::CPU_PQ; }
constexpr bool queue_is_internal(QueueId q) { return !queue_is_external(q) && !queue_is_cpu(q); }

// MME queue group g is served by a master MME: MME_0_x by MME2 ("N_W"), MME_1_x by MME0 ("S_W")
// as on Gaudi 1; in the extension MME_g_x by MME 2g.
constexpr unsigned mme_group_master(unsigned group) {
  if (group >= kMaxMmeMasters) throw std::out_of_range("MME queue group out of range");
  return group == 0 ? 2 : group == 1 ? 0 : 2 * group;
}
// The queue group a master MME serves (inverse of mme_group_master).
constexpr unsigned mme_master_group(unsigned mme) {
  if (mme >= kMaxMmeEngines || mme % 2 != 0) throw std::out_of_range("not an MME master");
  return mme == 2 ? 0 : mme == 0 ? 1 : mme / 2;
}

// The QMAN serving a queue; CPU_PQ has none (std::invalid_argument).
constexpr QmanId queue_qman(QueueId q) {
  unsigned e = queue_engine(q);
  switch (queue_kind(q)) {
    case QueueKind::Dma: return dma_qman(e);
    case QueueKind::Cpu: throw std::invalid_argument("CPU_PQ is not served by a QMAN");
    case QueueKind::Mme: return mme_qman(mme_group_master(e));
    case QueueKind::Tpc: return tpc_qman(e);
    case QueueKind::Nic: return nic_qman(e);
  }
  return QmanId::DMA0;
}

// The register the driver's ring_doorbell writes the new PI to: <QMAN>_PQ_PI_<stream>, or
// mmCPU_IF_PF_PQ_PI for CPU_PQ.
constexpr uint64_t queue_doorbell(QueueId q) {
  if (queue_is_cpu(q)) return cpu_if::kPfPqPi;
  return qman_reg(queue_qman(q), QmReg::PqPi, queue_stream(q));
}

// The queue of engine `engine`, stream `stream` (inverse of queue_engine / queue_stream).
constexpr QueueId make_queue(QueueKind kind, unsigned engine, unsigned stream) {
  if (kind == QueueKind::Cpu) return QueueId::CPU_PQ;
  if (stream >= kQmanStreams) throw std::out_of_range("stream out of range");
  switch (kind) {
    case QueueKind::Dma:
      if (engine >= kMaxDmaChannels) throw std::out_of_range("DMA channel out of range");
      break;
    case QueueKind::Mme:
      if (engine >= kMaxMmeMasters) throw std::out_of_range("MME queue group out of range");
      break;
    case QueueKind::Tpc:
      if (engine >= kMaxTpcEngines) throw std::out_of_range("TPC index out of range");
      break;
    case QueueKind::Nic:
      if (engine >= kMaxNicEngines) throw std::out_of_range("NIC engine out of range");
      break;
    case QueueKind::Cpu: break;
  }
  return static_cast<QueueId>(detail::first_queue(kind, engine) + stream);
}

// The driver's gaudi_queue_id_to_engine_id table (used in its error reports). Note it maps
// MME_0_x to MME_0 and MME_1_x to MME_2 although MME_0_x runs on the MME2 QMAN; extension
// queues map to their QMAN's engine id. CPU_PQ -> kNoEngine (GAUDI_ENGINE_ID_SIZE on Gaudi 1).
constexpr EngineId queue_driver_engine_id(QueueId q) {
  unsigned e = queue_engine(q);
  if (queue_is_cpu(q)) return kNoEngine;
  if (to_index(q) >= kNumGaudi1Queues) return static_cast<EngineId>(engine_id(queue_qman(q)));
  switch (queue_kind(q)) {
    case QueueKind::Dma: return static_cast<EngineId>(e);
    case QueueKind::Cpu: return kNoEngine;
    case QueueKind::Mme: return e == 0 ? EngineId::MME_0 : EngineId::MME_2;
    case QueueKind::Tpc: return static_cast<EngineId>(12 + e);
    case QueueKind::Nic: return static_cast<EngineId>(20 + e);
  }
  return kNoEngine;
}

// "DMA_0_0", "CPU_PQ", "MME_1_3", "NIC_9_3".
std::string queue_name(QueueId q);

// ---------------------------------------------------------------------------------------------
// Modelled blocks, registers and names
// ---------------------------------------------------------------------------------------------

enum class BlockKind : uint8_t { Qman, DmaCore, MmeCtrl, TpcCfg, SmGlbl, SmObjs, PcieCore, PcieMsi, CpuIf, PsocTimestamp, Gic };

struct BlockInfo {
  std::string name;  // "DMA0_QM", "TPC3_CFG", "SYNC_MNGR_E_N_OBJS", "PCIE_MSI"
  BlockKind kind;
  unsigned index;    // QmanId index, DMA channel, MME, TPC or SyncManager index; 0 for singletons
  uint64_t base;     // CFG offset
  uint64_t size;
};

// Every modelled block, sorted by base; no two overlap.
const std::vector<BlockInfo>& modelled_blocks();
// The block containing a CFG offset, or nullptr.
const BlockInfo* find_block(uint64_t cfg_offset);

struct NamedRegister {
  uint32_t offset;   // relative to the block base
  std::string name;  // "CP_FENCE2_RDATA_1"
};
// The named registers of one block kind, in table order (relative offsets).
const std::vector<NamedRegister>& block_registers(BlockKind kind);

struct MappedRegister {
  uint64_t offset;   // CFG offset
  std::string name;  // "DMA0_QM.CP_FENCE2_RDATA_1"
};
// Every named register of every modelled block, sorted by CFG offset.
std::vector<MappedRegister> modelled_registers();

// "DMA0_QM.CP_FENCE2_RDATA_1" for a named register, "DMA0_QM+0x444" inside a modelled block but
// not a named register, "unmapped 0x1234" elsewhere.
std::string describe_cfg_offset(uint64_t cfg_offset);
// The same for a device address: CFG addresses are described as above, anything else as
// "device 0x..." (not in the CFG window).
std::string describe_device_address(uint64_t address);

}  // namespace hpusim::regs
