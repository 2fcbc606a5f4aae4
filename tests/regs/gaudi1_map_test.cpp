// Spot checks of arch/regs against values read from the public habanalabs headers
// (drivers/accel/habanalabs/include/gaudi/... in the Linux kernel; file named on each check),
// plus consistency checks of the tables themselves.
#include "arch/regs/gaudi1_map.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hpusim::regs {
namespace {

// Compile-time use: the helpers are constexpr.
static_assert(qman_reg(QmanId::DMA0, QmReg::GlblCfg0) == 0x508000);
static_assert(qman_fence_rdata(QmanId::DMA0, 2, 1) == 0x508334);
static_assert(sm_sob(SyncManager::E_N, 0) == 0x4F2000);
static_assert(queue_doorbell(QueueId::TPC_7_3) == 0xFC80AC);
static_assert(decode_qm_reg(0x334)->reg == QmReg::CpFence2Rdata);

// ---------------------------------------------------------------------------------------------
// Spot checks
// ---------------------------------------------------------------------------------------------

TEST(RegsSpot, CfgWindow) {
  EXPECT_EQ(kCfgBase, 0x7FFC000000ull);  // gaudi.h CFG_BASE
  EXPECT_EQ(kCfgSize, 0x4000000ull);     // gaudi.h CFG_SIZE (32 MB CFG + 32 MB DBG)
  EXPECT_TRUE(in_cfg_window(0x7FFC508000ull));
  EXPECT_FALSE(in_cfg_window(0x7FF0000000ull));  // SRAM_BASE_ADDR
  EXPECT_FALSE(in_cfg_window(kCfgBase + kCfgSize));
}

TEST(RegsSpot, BlockBases) {
  // gaudi_blocks.h (absolute mm*_BASE values)
  EXPECT_EQ(cfg_address(dma_core_base(0)), 0x7FFC500000ull);   // mmDMA0_CORE_BASE
  EXPECT_EQ(cfg_address(dma_qm_base(0)), 0x7FFC508000ull);     // mmDMA0_QM_BASE
  EXPECT_EQ(cfg_address(dma_qm_base(1)), 0x7FFC528000ull);     // mmDMA1_QM_BASE
  EXPECT_EQ(cfg_address(dma_core_base(7)), 0x7FFC5E0000ull);   // mmDMA7_CORE_BASE
  EXPECT_EQ(cfg_address(dma_qm_base(7)), 0x7FFC5E8000ull);     // mmDMA7_QM_BASE
  EXPECT_EQ(cfg_address(mme_ctrl_base(0)), 0x7FFC060000ull);   // mmMME0_CTRL_BASE
  EXPECT_EQ(cfg_address(mme_ctrl_base(1)), 0x7FFC0E0000ull);   // mmMME1_CTRL_BASE
  EXPECT_EQ(cfg_address(mme_ctrl_base(3)), 0x7FFC1E0000ull);   // mmMME3_CTRL_BASE
  EXPECT_EQ(cfg_address(mme_qm_base(0)), 0x7FFC068000ull);     // mmMME0_QM_BASE
  EXPECT_EQ(cfg_address(mme_qm_base(2)), 0x7FFC168000ull);     // mmMME2_QM_BASE
  EXPECT_EQ(cfg_address(mme_qm_base(3)), 0x7FFC1E8000ull);     // mmMME3_QM_BASE
  EXPECT_EQ(cfg_address(tpc_cfg_base(0)), 0x7FFCE06000ull);    // mmTPC0_CFG_BASE
  EXPECT_EQ(cfg_address(tpc_qm_base(0)), 0x7FFCE08000ull);     // mmTPC0_QM_BASE
  EXPECT_EQ(cfg_address(tpc_cfg_base(1)), 0x7FFCE46000ull);    // mmTPC1_CFG_BASE
  EXPECT_EQ(cfg_address(tpc_qm_base(6)), 0x7FFCF88000ull);     // mmTPC6_QM_BASE
  EXPECT_EQ(cfg_address(tpc_cfg_base(7)), 0x7FFCFC6000ull);    // mmTPC7_CFG_BASE
  EXPECT_EQ(cfg_address(tpc_qm_base(7)), 0x7FFCFC8000ull);     // mmTPC7_QM_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(0)), 0x7FFCCE0000ull);     // mmNIC0_QM0_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(1)), 0x7FFCCE2000ull);     // mmNIC0_QM1_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(2)), 0x7FFCD20000ull);     // mmNIC1_QM0_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(4)), 0x7FFCD60000ull);     // mmNIC2_QM0_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(7)), 0x7FFCDA2000ull);     // mmNIC3_QM1_BASE
  EXPECT_EQ(cfg_address(nic_qm_base(9)), 0x7FFCDE2000ull);     // mmNIC4_QM1_BASE
  EXPECT_EQ(cfg_address(sm_glbl_base(SyncManager::W_S)), 0x7FFC490000ull);  // mmSYNC_MNGR_GLBL_W_S_BASE
  EXPECT_EQ(cfg_address(sm_objs_base(SyncManager::W_S)), 0x7FFC491000ull);  // mmSYNC_MNGR_OBJS_W_S_BASE
  EXPECT_EQ(cfg_address(sm_glbl_base(SyncManager::E_S)), 0x7FFC4B0000ull);  // mmSYNC_MNGR_GLBL_E_S_BASE
  EXPECT_EQ(cfg_address(sm_objs_base(SyncManager::W_N)), 0x7FFC4D1000ull);  // mmSYNC_MNGR_OBJS_W_N_BASE
  EXPECT_EQ(cfg_address(sm_glbl_base(SyncManager::E_N)), 0x7FFC4F0000ull);  // mmSYNC_MNGR_GLBL_E_N_BASE
  EXPECT_EQ(cfg_address(sm_objs_base(SyncManager::E_N)), 0x7FFC4F1000ull);  // mmSYNC_MNGR_OBJS_E_N_BASE
  EXPECT_EQ(cfg_address(kCpuIfBase), 0x7FFC442000ull);          // mmCPU_IF_BASE
  EXPECT_EQ(cfg_address(kGicBase), 0x7FFC800000ull);            // mmGIC_BASE
  EXPECT_EQ(cfg_address(kPcieCoreBase), 0x7FFCC04000ull);       // mmPCIE_CORE_BASE
  EXPECT_EQ(cfg_address(kPcieMsiBase), 0x7FFCC13000ull);        // mmPCIE_MSI_BASE
  EXPECT_EQ(cfg_address(kPsocTimestampBase), 0x7FFCC49000ull);  // mmPSOC_TIMESTAMP_BASE
}

TEST(RegsSpot, QmanRegisters) {
  // dma0_qm_regs.h
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblCfg0), 0x508000u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblCfg1), 0x508004u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblProt), 0x508008u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblErrCfg), 0x50800Cu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblSts0), 0x508038u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblMsgEn, 3), 0x508060u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblMsgEn, 4), 0x508068u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqBaseLo, 0), 0x508070u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqBaseHi, 3), 0x50808Cu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqSize, 0), 0x508090u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqPi, 3), 0x5080ACu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqCi, 0), 0x5080B0u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::PqCfg1, 3), 0x5080DCu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CqPtrLo, 4), 0x5081B4u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CqPtrHi, 4), 0x5081B8u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CqTsize, 4), 0x5081BCu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CqCtl, 4), 0x5081C0u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CqCtl, 0), 0x508180u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpMsgBase0AddrLo, 0), 0x508228u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, qm_msg_base_hi(3), 4), 0x5082C4u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpLdmaTsizeOffset, 4), 0x5082D8u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpLdmaSrcBaseLoOffset, 0), 0x5082E0u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpLdmaDstBaseLoOffset, 4), 0x508304u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpFence0Rdata, 0), 0x508308u);
  EXPECT_EQ(qman_fence_rdata(QmanId::DMA0, 2, 1), 0x508334u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, qm_fence_cnt(3), 4), 0x5083A4u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpSts, 0), 0x5083A8u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpBarrierCfg, 0), 0x5083F4u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CpAwuser, 4), 0x508440u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbCfg0), 0x508A00u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbChoiseQPush), 0x508A04u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbWrrWeight, 3), 0x508A14u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbMstAvailCred, 31), 0x508A9Cu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbMstChoisePushOfst, 31), 0x508B20u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbMstQuietPer), 0x508B34u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbSlvChoiseWdt), 0x508B38u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbErrMsgEn), 0x508BA0u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::ArbMstCredSts, 31), 0x508C2Cu);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::CgmSts), 0x508C74u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblErrAddrLo), 0x508CD0u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblErrAddrHi), 0x508CD4u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblErrWdata), 0x508CD8u);
  EXPECT_EQ(qman_reg(QmanId::DMA0, QmReg::GlblMemInitBusy), 0x508D00u);
  // The brief's DMA6 check: mmDMA6_QM_GLBL_CFG0 (dma6_qm_regs.h / gaudi_blocks.h).
  EXPECT_EQ(qman_reg(QmanId::DMA6, QmReg::GlblCfg0), 0x5C8000u);
  // Other QMAN files: mme2_qm_regs.h, tpc7_qm_regs.h, nic4_qm1_regs.h, gaudi_regs.h.
  EXPECT_EQ(qman_fence_rdata(QmanId::MME2, 2, 0), 0x168330u);       // mmMME2_QM_CP_FENCE2_RDATA_0
  EXPECT_EQ(qman_reg(QmanId::TPC7, QmReg::PqPi, 3), 0xFC80ACu);     // mmTPC7_QM_PQ_PI_3
  EXPECT_EQ(qman_reg(QmanId::NIC4_QM1, QmReg::GlblCfg0), 0xDE2000u);  // mmNIC4_QM1_GLBL_CFG0
  EXPECT_EQ(qman_reg(QmanId::MME1, QmReg::GlblCfg0), 0xE8000u);     // mmMME1_QM_GLBL_CFG0
  EXPECT_EQ(qman_reg(QmanId::MME1, QmReg::GlblSts0), 0xE8038u);     // mmMME1_QM_GLBL_STS0
}

TEST(RegsSpot, LdmaOffsets) {
  // gaudiP.h: QMAN_LDMA_* = mmDMA0_CORE_x - mmDMA0_CORE_CFG_0,
  // QMAN_CPDMA_SRC/SIZE = mmDMA0_QM_CQ_PTR_LO_4 / CQ_TSIZE_4 - mmDMA0_CORE_CFG_0.
  EXPECT_EQ(kQmanLdmaSrcOffset, dma_core::kSrcBaseLo);
  EXPECT_EQ(kQmanLdmaDstOffset, dma_core::kDstBaseLo);
  EXPECT_EQ(kQmanLdmaSizeOffset, dma_core::kDstTsize0);
  EXPECT_EQ(kQmanCpdmaSrcOffset, qman_reg(QmanId::DMA0, QmReg::CqPtrLo, 4) - dma_core_base(0));
  EXPECT_EQ(kQmanCpdmaSizeOffset, qman_reg(QmanId::DMA0, QmReg::CqTsize, 4) - dma_core_base(0));
  // The same values land on every QMAN's own lower-CP CQ registers and engine registers.
  for (QmanId q : {QmanId::DMA3, QmanId::MME0, QmanId::MME2, QmanId::TPC0, QmanId::TPC5}) {
    EXPECT_EQ(qman_ldma_base(q) + kQmanCpdmaSrcOffset, qman_reg(q, QmReg::CqPtrLo, 4)) << qman_name(q);
    EXPECT_EQ(qman_ldma_base(q) + kQmanCpdmaSizeOffset, qman_reg(q, QmReg::CqTsize, 4)) << qman_name(q);
  }
  EXPECT_EQ(qman_ldma_base(QmanId::DMA5), dma_core_base(5));
  EXPECT_EQ(qman_ldma_base(QmanId::MME2), mme_ctrl_base(2));
  EXPECT_EQ(*qman_engine_block(QmanId::TPC2), tpc_cfg_base(2));
  EXPECT_EQ(*qman_engine_block(QmanId::NIC0_QM1), nic_port_base(1));
  EXPECT_EQ(nic_port_base(1), nic_qm_base(1) + 0x1000) << "hpusim's port block, the page above its QMAN";
}

TEST(RegsSpot, DmaCoreRegisters) {
  // dma0_core_regs.h
  uint64_t b = dma_core_base(0);
  EXPECT_EQ(b + dma_core::kCfg0, 0x500000u);
  EXPECT_EQ(b + dma_core::kCfg1, 0x500004u);
  EXPECT_EQ(b + dma_core::kSrcBaseLo, 0x500014u);
  EXPECT_EQ(b + dma_core::kSrcBaseHi, 0x500018u);
  EXPECT_EQ(b + dma_core::kDstBaseLo, 0x50001Cu);
  EXPECT_EQ(b + dma_core::kDstBaseHi, 0x500020u);
  EXPECT_EQ(b + dma_core::src_tsize(1), 0x50002Cu);
  EXPECT_EQ(b + dma_core::src_stride(1), 0x500030u);
  EXPECT_EQ(b + dma_core::src_stride(4), 0x500048u);
  EXPECT_EQ(b + dma_core::src_tsize(0), 0x50004Cu);
  EXPECT_EQ(b + dma_core::dst_tsize(1), 0x500054u);
  EXPECT_EQ(b + dma_core::dst_tsize(4), 0x50006Cu);
  EXPECT_EQ(b + dma_core::dst_stride(4), 0x500070u);
  EXPECT_EQ(b + dma_core::dst_tsize(0), 0x500074u);
  EXPECT_EQ(b + dma_core::kCommit, 0x500078u);
  EXPECT_EQ(b + dma_core::kWrCompWdata, 0x50007Cu);
  EXPECT_EQ(b + dma_core::kWrCompAddrLo, 0x500080u);
  EXPECT_EQ(b + dma_core::kWrCompAddrHi, 0x500084u);
  EXPECT_EQ(b + dma_core::kProt, 0x5000B8u);
  EXPECT_EQ(b + dma_core::kSecureProps, 0x5000F0u);
  EXPECT_EQ(b + dma_core::kErrCause, 0x500164u);
  EXPECT_EQ(b + dma_core::kSts0, 0x500190u);
  EXPECT_EQ(b + dma_core::kSts1, 0x500194u);
  // dma0_core_masks.h
  EXPECT_EQ(dma_core::kCommitWrCompEn, 0x1u);
  EXPECT_EQ(dma_core::kCommitLin, 0x8u);
  EXPECT_EQ(dma_core::kCommitMemSet, 0x10u);
  EXPECT_EQ(dma_core::kCommitCtxIdMask, 0xFF0000u);
  EXPECT_EQ(dma_core::kSts0Busy, 0x80000000u);
  EXPECT_EQ(dma_core::kCfg0En, 0x1u);
  EXPECT_EQ(dma_core::kCfg1Halt, 0x1u);
  EXPECT_EQ(dma_core::kPropsMmbp, 0x400u);
  EXPECT_THROW((void)dma_core::src_stride(0), std::out_of_range);
}

TEST(RegsSpot, SyncManager) {
  // gaudi_regs.h
  EXPECT_EQ(sm_sob(SyncManager::E_N, 0), 0x4F2000u);             // ..._E_N_..._SOB_OBJ_0
  EXPECT_EQ(sm_sob(SyncManager::E_N, 1), 0x4F2004u);             // SOB_OBJ_1
  EXPECT_EQ(sm_sob(SyncManager::E_N, 2047), 0x4F3FFCu);          // SOB_OBJ_2047
  EXPECT_EQ(sm_mon_pay_addrl(SyncManager::E_N, 0), 0x4F4000u);
  EXPECT_EQ(sm_mon_pay_addrh(SyncManager::E_N, 0), 0x4F4800u);
  EXPECT_EQ(sm_mon_pay_data(SyncManager::E_N, 0), 0x4F5000u);
  EXPECT_EQ(sm_mon_arm(SyncManager::E_N, 0), 0x4F5800u);
  EXPECT_EQ(sm_mon_status(SyncManager::E_N, 0), 0x4F6000u);
  EXPECT_EQ(sm_mon_status(SyncManager::E_N, 511), 0x4F67FCu);    // MON_STATUS_511
  EXPECT_EQ(sm_sob(SyncManager::W_S, 0), 0x492000u);
  EXPECT_EQ(sm_mon_pay_addrl(SyncManager::W_S, 0), 0x494000u);
  EXPECT_EQ(sm_mon_pay_addrh(SyncManager::W_S, 0), 0x494800u);
  EXPECT_EQ(sm_mon_pay_data(SyncManager::W_S, 0), 0x495000u);
  EXPECT_EQ(sm_mon_arm(SyncManager::W_S, 0), 0x495800u);
  EXPECT_EQ(sm_mon_status(SyncManager::W_S, 0), 0x496000u);
  EXPECT_EQ(sm_sob(SyncManager::E_S, 0), 0x4B2000u);
  EXPECT_EQ(sm_mon_status(SyncManager::E_S, 0), 0x4B6000u);
  EXPECT_EQ(sm_sob(SyncManager::W_N, 0), 0x4D2000u);
  EXPECT_EQ(sm_mon_status(SyncManager::W_N, 0), 0x4D6000u);
  // gaudi_masks.h (W_S monitor fields; all four managers are the same block type)
  EXPECT_EQ(sm::kMonArmSidMask, 0xFFu);
  EXPECT_EQ(sm::kMonArmMaskMask, 0xFF00u);
  EXPECT_EQ(sm::kMonArmSop, 0x10000u);
  EXPECT_EQ(sm::kMonArmSodMask, 0xFFFE0000u);
  EXPECT_EQ(sm::kMonStatusPendingMask, 0x1FEu);
  // Reference §4.2: arm value for "SOB 13 >= 1" = sid 1, mask ~(1 << 5), GE, target 1.
  EXPECT_EQ(sm::make_mon_arm(13 / 8, sm::single_sob_mask(13), false, 1), 0x1u | (0xDFu << 8) | (1u << 17));
  // Driver's CP_MSG_BASE programming (gaudi.c gaudi_init_*_qman).
  EXPECT_EQ(cp_msg_base_default(0), 0x4F4000u);  // mmSYNC_MNGR_E_N_SYNC_MNGR_OBJS_MON_PAY_ADDRL_0
  EXPECT_EQ(cp_msg_base_default(1), 0x4F2000u);  // mmSYNC_MNGR_E_N_SYNC_MNGR_OBJS_SOB_OBJ_0
  EXPECT_EQ(cp_msg_base_default(2), 0x494000u);  // mmSYNC_MNGR_W_S_SYNC_MNGR_OBJS_MON_PAY_ADDRL_0
  EXPECT_EQ(cp_msg_base_default(3), 0x492000u);  // mmSYNC_MNGR_W_S_SYNC_MNGR_OBJS_SOB_OBJ_0
}

TEST(RegsSpot, TpcCfg) {
  // tpc0_cfg_regs.h
  uint64_t b = tpc_cfg_base(0);
  EXPECT_EQ(b + tpc_cfg::kernel_tensor(0), 0xE06400u);   // KERNEL_TENSOR_0_BASE_ADDR_LOW
  EXPECT_EQ(b + tpc_cfg::kernel_tensor(1), 0xE06438u);   // KERNEL_TENSOR_1_BASE_ADDR_LOW
  EXPECT_EQ(b + tpc_cfg::kernel_tensor(15) + tpc_cfg::tensor_dim_stride(4), 0xE0677Cu);
  EXPECT_EQ(b + tpc_cfg::kKernelSyncObjectMessage, 0xE06780u);
  EXPECT_EQ(b + tpc_cfg::kKernelKernelBaseAddressLow, 0xE06788u);
  EXPECT_EQ(b + tpc_cfg::kernel_tid_base_dim(0), 0xE06790u);
  EXPECT_EQ(b + tpc_cfg::kernel_tid_size_dim(4), 0xE067B4u);
  EXPECT_EQ(b + tpc_cfg::kKernelKernelConfig, 0xE067B8u);
  EXPECT_EQ(b + tpc_cfg::kernel_srf(31), 0xE0683Cu);
  EXPECT_EQ(b + tpc_cfg::kStatus, 0xE0691Cu);
  EXPECT_EQ(b + tpc_cfg::kTpcCmd, 0xE06930u);
  EXPECT_EQ(b + tpc_cfg::kTpcExecute, 0xE06938u);
  EXPECT_EQ(b + tpc_cfg::kIcacheBaseAddressLow, 0xE06940u);
  EXPECT_EQ(b + tpc_cfg::kLutFunc256BaseAddrLo, 0xE06990u);
  EXPECT_EQ(b + tpc_cfg::kWqInflightCntr, 0xE069B8u);
  EXPECT_EQ(b + tpc_cfg::kQmTensor0, 0xE06A00u);         // QM_TENSOR_0_BASE_ADDR_LOW
  EXPECT_EQ(b + tpc_cfg::qm_tensor(1) + tpc_cfg::tensor_dim_size(0), 0xE06A48u);
  EXPECT_EQ(b + tpc_cfg::qm_tensor(15) + tpc_cfg::tensor_dim_stride(4), 0xE06D7Cu);
  EXPECT_EQ(b + tpc_cfg::kQmSyncObjectMessage, 0xE06D80u);
  EXPECT_EQ(b + tpc_cfg::kQmSyncObjectAddr, 0xE06D84u);
  EXPECT_EQ(b + tpc_cfg::kQmKernelBaseAddressLow, 0xE06D88u);
  EXPECT_EQ(b + tpc_cfg::kQmKernelBaseAddressHigh, 0xE06D8Cu);
  EXPECT_EQ(b + tpc_cfg::qm_tid_base_dim(0), 0xE06D90u);
  EXPECT_EQ(b + tpc_cfg::qm_tid_size_dim(0), 0xE06D94u);
  EXPECT_EQ(b + tpc_cfg::kQmKernelConfig, 0xE06DB8u);
  EXPECT_EQ(b + tpc_cfg::kQmKernelId, 0xE06DBCu);
  EXPECT_EQ(b + tpc_cfg::qm_srf(0), 0xE06DC0u);
  EXPECT_EQ(b + tpc_cfg::qm_srf(31), 0xE06E3Cu);          // last register of the file
  // gaudi_blocks.h sub-block bases of TPC7
  EXPECT_EQ(cfg_address(tpc_cfg_base(7) + tpc_cfg::kQmSyncObjectMessage), 0x7FFCFC6D80ull);  // mmQM_SYNC_OBJECT_TPC7_CFG_BASE
  EXPECT_EQ(cfg_address(tpc_cfg_base(7) + tpc_cfg::kQmKernelBaseAddressLow), 0x7FFCFC6D88ull);  // mmQM_TPC7_CFG_BASE
}

TEST(RegsSpot, MmeCtrlAndSingletons) {
  // mme0_ctrl_regs.h
  EXPECT_EQ(mme_ctrl_base(0) + mme_ctrl::kArchStatus, 0x60000u);
  EXPECT_EQ(mme_ctrl_base(0) + mme_ctrl::kArchBaseAddrHighS, 0x60008u);
  EXPECT_EQ(mme_ctrl_base(0) + mme_ctrl::kCmd, 0x60280u);
  EXPECT_EQ(mme_ctrl_base(0) + mme_ctrl::kQmStall, 0x6028Cu);
  // gaudi_regs.h
  EXPECT_EQ(pcie::msi_intr(0), 0xC13000u);   // mmPCIE_MSI_INTR_0
  EXPECT_EQ(pcie::kCoreMsiReq, 0xC04100u);   // mmPCIE_CORE_MSI_REQ
  EXPECT_EQ(gic::kGicdSetspiNsr, 0x800040u); // mmGIC_DISTRIBUTOR__5_GICD_SETSPI_NSR
  // cpu_if_regs.h, psoc_timestamp_regs.h
  EXPECT_EQ(cpu_if::kPfPqPi, 0x442200u);
  EXPECT_EQ(cpu_if::kEqRdOffs, 0x44222Cu);
  EXPECT_EQ(psoc_timestamp::kCntcvl, 0xC49008u);
  EXPECT_EQ(psoc_timestamp::kCntcvu, 0xC4900Cu);
}

TEST(RegsSpot, QueueIds) {
  // include/uapi/drm/habanalabs_accel.h enum gaudi_queue_id
  EXPECT_EQ(to_index(QueueId::DMA_0_0), 0u);
  EXPECT_EQ(to_index(QueueId::DMA_1_3), 7u);
  EXPECT_EQ(to_index(QueueId::CPU_PQ), 8u);
  EXPECT_EQ(to_index(QueueId::DMA_2_0), 9u);
  EXPECT_EQ(to_index(QueueId::DMA_5_0), 21u);
  EXPECT_EQ(to_index(QueueId::DMA_7_3), 32u);
  EXPECT_EQ(to_index(QueueId::MME_0_0), 33u);
  EXPECT_EQ(to_index(QueueId::MME_1_3), 40u);
  EXPECT_EQ(to_index(QueueId::TPC_0_0), 41u);
  EXPECT_EQ(to_index(QueueId::TPC_7_0), 69u);
  EXPECT_EQ(to_index(QueueId::TPC_7_3), 72u);
  EXPECT_EQ(to_index(QueueId::NIC_0_0), 73u);
  EXPECT_EQ(to_index(QueueId::NIC_9_3), 112u);
  EXPECT_EQ(kNumGaudi1Queues, 113u);  // GAUDI_QUEUE_ID_SIZE
  // enum gaudi_engine_id
  EXPECT_EQ(static_cast<unsigned>(EngineId::MME_0), 8u);
  EXPECT_EQ(static_cast<unsigned>(EngineId::TPC_0), 12u);
  EXPECT_EQ(static_cast<unsigned>(EngineId::NIC_9), 29u);
  EXPECT_EQ(kNumGaudi1Engines, 30u);  // GAUDI_ENGINE_ID_SIZE
}

TEST(RegsSpot, QueueToQman) {
  // gaudi.c gaudi_ring_doorbell / gaudi_get_fence_addr
  EXPECT_EQ(queue_doorbell(QueueId::DMA_0_0), 0x5080A0u);   // mmDMA0_QM_PQ_PI_0
  EXPECT_EQ(queue_doorbell(QueueId::DMA_1_2), 0x5280A8u);   // mmDMA1_QM_PQ_PI_2
  EXPECT_EQ(queue_doorbell(QueueId::DMA_2_0), 0x5480A0u);   // mmDMA2_QM_PQ_PI_0
  EXPECT_EQ(queue_doorbell(QueueId::DMA_7_3), 0x5E80ACu);   // mmDMA7_QM_PQ_PI_3
  EXPECT_EQ(queue_doorbell(QueueId::MME_0_0), 0x1680A0u);   // mmMME2_QM_PQ_PI_0
  EXPECT_EQ(queue_doorbell(QueueId::MME_1_1), 0x680A4u);    // mmMME0_QM_PQ_PI_1
  EXPECT_EQ(queue_doorbell(QueueId::TPC_7_3), 0xFC80ACu);   // mmTPC7_QM_PQ_PI_3
  EXPECT_EQ(queue_doorbell(QueueId::NIC_1_0), 0xCE20A0u);   // mmNIC0_QM1_PQ_PI_0
  EXPECT_EQ(queue_doorbell(QueueId::NIC_2_0), 0xD200A0u);   // mmNIC1_QM0_PQ_PI_0
  EXPECT_EQ(queue_doorbell(QueueId::CPU_PQ), 0x442200u);    // mmCPU_IF_PF_PQ_PI
  EXPECT_EQ(qman_fence_rdata(queue_qman(QueueId::MME_0_0), 0, 0), 0x168308u);  // mmMME2_QM_CP_FENCE0_RDATA_0
  EXPECT_EQ(queue_qman(QueueId::MME_0_2), QmanId::MME2);
  EXPECT_EQ(queue_qman(QueueId::MME_1_0), QmanId::MME0);
  EXPECT_THROW((void)queue_qman(QueueId::CPU_PQ), std::invalid_argument);
  // gaudi.c gaudi_queue_id_to_engine_id
  EXPECT_EQ(queue_driver_engine_id(QueueId::MME_0_1), EngineId::MME_0);
  EXPECT_EQ(queue_driver_engine_id(QueueId::MME_1_1), EngineId::MME_2);
  EXPECT_EQ(queue_driver_engine_id(QueueId::DMA_5_3), EngineId::DMA_5);
  EXPECT_EQ(queue_driver_engine_id(QueueId::NIC_9_0), EngineId::NIC_9);
  EXPECT_EQ(queue_driver_engine_id(QueueId::CPU_PQ), kNoEngine);
  // External = the PCI DMA channels only.
  EXPECT_TRUE(queue_is_external(QueueId::DMA_0_0));
  EXPECT_TRUE(queue_is_external(QueueId::DMA_1_3));
  EXPECT_FALSE(queue_is_external(QueueId::CPU_PQ));
  EXPECT_FALSE(queue_is_external(QueueId::DMA_5_0));
  EXPECT_TRUE(queue_is_internal(QueueId::DMA_2_0));
  EXPECT_FALSE(queue_is_internal(QueueId::CPU_PQ));
}

// ---------------------------------------------------------------------------------------------
// Consistency
// ---------------------------------------------------------------------------------------------

TEST(RegsConsistency, QmanOffsetsIdenticalInEveryQman) {
  const std::vector<NamedRegister>& regs = block_registers(BlockKind::Qman);
  ASSERT_FALSE(regs.empty());
  for (unsigned i = 0; i < kNumQmans; ++i) {
    QmanId q = qman_from_index(i);
    for (const NamedRegister& r : regs) {
      ASSERT_EQ(describe_cfg_offset(qman_base(q) + r.offset), std::string(qman_name(q)) + "." + r.name);
    }
    for (size_t k = 0; k < kNumQmRegs; ++k) {
      QmReg reg = static_cast<QmReg>(k);
      for (unsigned idx = 0; idx < qm_reg_desc(reg).count; ++idx) {
        ASSERT_EQ(qman_reg(q, reg, idx) - qman_base(q), qm_reg_offset(reg, idx));
      }
    }
  }
}

TEST(RegsConsistency, QmanTableHasNoOverlapAndDecodeAgrees) {
  std::set<uint32_t> seen;
  for (size_t k = 0; k < kNumQmRegs; ++k) {
    QmReg reg = static_cast<QmReg>(k);
    const QmRegDesc& d = qm_reg_desc(reg);
    for (unsigned idx = 0; idx < d.count; ++idx) {
      uint32_t off = qm_reg_offset(reg, idx);
      EXPECT_EQ(off % 4, 0u) << d.name;
      EXPECT_LT(off, kBlockPage) << d.name;
      EXPECT_TRUE(seen.insert(off).second) << d.name << "_" << idx << " collides";
      auto dec = decode_qm_reg(off);
      ASSERT_TRUE(dec.has_value()) << d.name;
      EXPECT_EQ(dec->reg, reg);
      EXPECT_EQ(dec->index, idx);
    }
  }
  for (uint32_t off = 0; off < kBlockPage; ++off) {
    EXPECT_EQ(decode_qm_reg(off).has_value(), seen.count(off) == 1) << off;
  }
  EXPECT_FALSE(decode_qm_reg(0x064).has_value());  // hole before GLBL_MSG_EN_4
  EXPECT_FALSE(decode_qm_reg(0x2DC).has_value());  // hole before CP_LDMA_SRC_BASE_LO_OFFSET_0
  EXPECT_EQ(qm_reg_name(*decode_qm_reg(0x334)), "CP_FENCE2_RDATA_1");
  EXPECT_THROW((void)qm_reg_offset(QmReg::PqPi, 4), std::out_of_range);  // PQ side has 4 streams
  EXPECT_EQ(qm_reg_offset(QmReg::CpSts, kLowerCp), 0x3B8u);
}

TEST(RegsConsistency, BlocksAreDisjointAndInsideTheWindow) {
  const std::vector<BlockInfo>& blocks = modelled_blocks();
  EXPECT_EQ(blocks.size(), size_t{kNumQmans + kMaxDmaChannels + kMaxMmeEngines + kMaxTpcEngines + 2 * 4 + 5});
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockInfo& b = blocks[i];
    EXPECT_GT(b.size, 0u);
    // Gaudi 1's blocks are in the register half of the window; the extension's in the debug half.
    EXPECT_LE(b.base + b.size, b.base < kCfgRegisterSpan ? kCfgRegisterSpan : kCfgSize) << b.name;
    EXPECT_EQ(b.base % 4, 0u) << b.name;
    if (i > 0) {
      EXPECT_LE(blocks[i - 1].base + blocks[i - 1].size, b.base) << blocks[i - 1].name << " / " << b.name;
    }
    EXPECT_EQ(find_block(b.base), &b);
    EXPECT_EQ(find_block(b.base + b.size - 1), &b);
  }
  EXPECT_EQ(find_block(0), nullptr);
}

TEST(RegsConsistency, NoTwoRegistersShareAnAddress) {
  // Per block kind, straight from the tables (a duplicate would be hidden by a lookup map).
  for (unsigned k = 0; k <= static_cast<unsigned>(BlockKind::Gic); ++k) {
    std::set<uint32_t> offsets;
    std::set<std::string> names;
    for (const NamedRegister& r : block_registers(static_cast<BlockKind>(k))) {
      EXPECT_EQ(r.offset % 4, 0u) << r.name;
      EXPECT_TRUE(offsets.insert(r.offset).second) << "kind " << k << ": " << r.name << " collides";
      EXPECT_TRUE(names.insert(r.name).second) << "kind " << k << ": name " << r.name << " repeated";
    }
  }
  std::vector<MappedRegister> all = modelled_registers();
  EXPECT_GT(all.size(), 30000u);
  for (size_t i = 0; i < all.size(); ++i) {
    const MappedRegister& r = all[i];
    EXPECT_LT(r.offset, kCfgSize) << r.name;
    if (i > 0) {
      EXPECT_LT(all[i - 1].offset, r.offset) << all[i - 1].name << " / " << r.name;
    }
    const BlockInfo* b = find_block(r.offset);
    ASSERT_NE(b, nullptr) << r.name;
    ASSERT_EQ(describe_cfg_offset(r.offset), r.name);
  }
}

TEST(RegsConsistency, QueueNumberingIsContiguous) {
  unsigned per_kind[5] = {0, 0, 0, 0, 0};
  std::set<std::pair<unsigned, unsigned>> qman_streams;
  for (unsigned i = 0; i < kNumQueues; ++i) {
    QueueId q = queue_from_index(i);
    QueueKind kind = queue_kind(q);
    ++per_kind[static_cast<unsigned>(kind)];
    EXPECT_EQ(make_queue(kind, queue_engine(q), queue_stream(q)), q) << queue_name(q);
    if (kind == QueueKind::Cpu) continue;
    EXPECT_LT(queue_stream(q), kQmanStreams);
    // Four consecutive ids share an engine, streams 0..3 in order.
    if (queue_stream(q) > 0) {
      QueueId prev = queue_from_index(i - 1);
      EXPECT_EQ(queue_engine(prev), queue_engine(q));
      EXPECT_EQ(queue_stream(prev) + 1, queue_stream(q));
    }
    EXPECT_TRUE(qman_streams.insert({to_index(queue_qman(q)), queue_stream(q)}).second) << queue_name(q);
  }
  EXPECT_EQ(per_kind[static_cast<unsigned>(QueueKind::Dma)], 4u * kMaxDmaChannels);
  EXPECT_EQ(per_kind[static_cast<unsigned>(QueueKind::Cpu)], 1u);
  EXPECT_EQ(per_kind[static_cast<unsigned>(QueueKind::Mme)], 4u * kMaxMmeMasters);
  EXPECT_EQ(per_kind[static_cast<unsigned>(QueueKind::Tpc)], 4u * kMaxTpcEngines);
  EXPECT_EQ(per_kind[static_cast<unsigned>(QueueKind::Nic)], 4u * kMaxNicEngines);
  // Every DMA, MME master, TPC and NIC QMAN serves queues; the slave MMEs serve none.
  EXPECT_EQ(qman_streams.size(), (kMaxDmaChannels + kMaxMmeMasters + kMaxTpcEngines + kMaxNicEngines) * kQmanStreams);
  EXPECT_EQ(queue_name(QueueId::DMA_0_0), "DMA_0_0");
  EXPECT_EQ(queue_name(QueueId::CPU_PQ), "CPU_PQ");
  EXPECT_EQ(queue_name(QueueId::DMA_2_1), "DMA_2_1");
  EXPECT_EQ(queue_name(QueueId::MME_1_3), "MME_1_3");
  EXPECT_EQ(queue_name(QueueId::NIC_9_3), "NIC_9_3");
  EXPECT_THROW((void)queue_from_index(kNumQueues), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// Beyond Gaudi 1: the extension keeps Gaudi 1's ids and addresses and appends the rest
// ---------------------------------------------------------------------------------------------

TEST(RegsExtension, IdsFollowGaudi1s) {
  EXPECT_EQ(kNumQueues, 425u);
  EXPECT_EQ(make_queue(QueueKind::Dma, 8, 0), queue_from_index(113));
  EXPECT_EQ(make_queue(QueueKind::Dma, 9, 3), queue_from_index(120));
  EXPECT_EQ(make_queue(QueueKind::Mme, 2, 0), queue_from_index(121));
  EXPECT_EQ(make_queue(QueueKind::Mme, 7, 3), queue_from_index(144));
  EXPECT_EQ(make_queue(QueueKind::Tpc, 8, 0), queue_from_index(145));
  EXPECT_EQ(make_queue(QueueKind::Tpc, 63, 3), queue_from_index(368));
  EXPECT_EQ(queue_name(make_queue(QueueKind::Tpc, 23, 1)), "TPC_23_1");
  EXPECT_EQ(make_queue(QueueKind::Nic, 9, 3), QueueId::NIC_9_3);
  EXPECT_EQ(make_queue(QueueKind::Nic, 10, 0), queue_from_index(369));
  EXPECT_EQ(make_queue(QueueKind::Nic, 23, 3), queue_from_index(424));
  EXPECT_EQ(queue_name(make_queue(QueueKind::Nic, 17, 2)), "NIC_17_2");
  EXPECT_EQ(kNumQmans, 114u);
  EXPECT_EQ(to_index(nic_qman(9)), 29u);
  EXPECT_EQ(to_index(nic_qman(10)), 100u);
  EXPECT_EQ(to_index(nic_qman(23)), 113u);
  EXPECT_STREQ(qman_name(nic_qman(23)), "NIC11_QM1");
  EXPECT_EQ(nic_qm_base(10), kExtNicMacro5Base);
  EXPECT_EQ(nic_qm_base(23), kExtNicMacro5Base + 6 * kNicMacroStride + kNicQm1Delta);
  EXPECT_EQ(to_index(dma_qman(8)), 30u);
  EXPECT_EQ(to_index(mme_qman(4)), 32u);
  EXPECT_EQ(to_index(tpc_qman(8)), 44u);
  EXPECT_EQ(to_index(tpc_qman(63)), 99u);
  EXPECT_STREQ(qman_name(tpc_qman(23)), "TPC23_QM");
  EXPECT_STREQ(qman_name(mme_qman(14)), "MME14_QM");
  // Engine ids are QMAN indexes: Gaudi 1's enum gaudi_engine_id, then the extension; all fit the
  // 7-bit engine field of the MMU's page-fault capture.
  EXPECT_EQ(engine_id(tpc_qman(3)), static_cast<uint32_t>(EngineId::TPC_3));
  EXPECT_EQ(engine_id(dma_qman(8)), kNumGaudi1Engines);
  EXPECT_LT(kNumQmans, 128u);
  for (unsigned i = 0; i < kNumQmans; ++i) {
    const QmanId q = qman_from_index(i);
    const unsigned e = qman_engine(q);
    switch (qman_family(q)) {
      case QmanFamily::Dma: EXPECT_EQ(dma_qman(e), q); break;
      case QmanFamily::Mme: EXPECT_EQ(mme_qman(e), q); break;
      case QmanFamily::Tpc: EXPECT_EQ(tpc_qman(e), q); break;
      case QmanFamily::Nic: EXPECT_EQ(nic_qman(e), q); break;
    }
  }
}

TEST(RegsExtension, MmeGroupsAndMastersPair) {
  EXPECT_EQ(mme_group_master(0), 2u);   // Gaudi 1: MME_0_x on MME2
  EXPECT_EQ(mme_group_master(1), 0u);   // MME_1_x on MME0
  for (unsigned g = 0; g < kMaxMmeMasters; ++g) EXPECT_EQ(mme_master_group(mme_group_master(g)), g);
  EXPECT_EQ(queue_qman(make_queue(QueueKind::Mme, 5, 2)), mme_qman(10));
  EXPECT_THROW((void)mme_master_group(3), std::out_of_range);
}

TEST(RegsExtension, BlocksLiveInTheDebugHalfWithGaudi1sLayout) {
  EXPECT_EQ(tpc_cfg_base(7), 0xFC6000u);    // Gaudi 1's last TPC is unchanged
  EXPECT_EQ(tpc_cfg_base(8), 0x2006000u);
  EXPECT_EQ(tpc_qm_base(8), 0x2008000u);
  EXPECT_EQ(tpc_cfg_base(63), 0x2006000u + 55 * 0x40000u);
  EXPECT_EQ(mme_ctrl_base(4), 0x2E00000u);
  EXPECT_EQ(mme_qm_base(15), 0x2E00000u + 11 * 0x80000u + 0x8000u);
  EXPECT_EQ(dma_core_base(9), 0x3420000u);
  EXPECT_EQ(dma_qm_base(9), 0x3428000u);
  // The CP_LDMA offsets work the same way: QMAN base - 0x8000 is the engine's own block.
  EXPECT_EQ(qman_ldma_base(dma_qman(9)), dma_core_base(9));
  EXPECT_EQ(qman_ldma_base(mme_qman(4)), mme_ctrl_base(4));
  EXPECT_EQ(describe_cfg_offset(qman_reg(tpc_qman(40), QmReg::PqPi, 0)), "TPC40_QM.PQ_PI_0");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(40) + tpc_cfg::kTpcExecute), "TPC40_CFG.TPC_EXECUTE");
  EXPECT_THROW((void)tpc_cfg_base(64), std::out_of_range);
  EXPECT_THROW((void)dma_core_base(10), std::out_of_range);
  EXPECT_THROW((void)mme_ctrl_base(16), std::out_of_range);
  EXPECT_TRUE(in_cfg_window(cfg_address(tpc_qm_base(63) + kBlockPage - 1)));
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

TEST(RegsDescribe, Names) {
  EXPECT_EQ(describe_cfg_offset(0x508334), "DMA0_QM.CP_FENCE2_RDATA_1");
  EXPECT_EQ(describe_cfg_offset(0x508000), "DMA0_QM.GLBL_CFG0");
  EXPECT_EQ(describe_cfg_offset(0x508068), "DMA0_QM.GLBL_MSG_EN_4");
  EXPECT_EQ(describe_cfg_offset(qman_reg(QmanId::MME2, QmReg::PqPi, 0)), "MME2_QM.PQ_PI_0");
  EXPECT_EQ(describe_cfg_offset(qman_reg(QmanId::NIC3_QM1, QmReg::ArbCfg0)), "NIC3_QM1.ARB_CFG_0");
  EXPECT_EQ(describe_cfg_offset(qman_reg(QmanId::TPC4, QmReg::CqPtrLo, 4)), "TPC4_QM.CQ_PTR_LO_4");
  EXPECT_EQ(describe_cfg_offset(dma_core_base(2) + dma_core::kCommit), "DMA2_CORE.COMMIT");
  EXPECT_EQ(describe_cfg_offset(dma_core_base(0) + dma_core::src_stride(3)), "DMA0_CORE.SRC_STRIDE_3");
  EXPECT_EQ(describe_cfg_offset(dma_core_base(1) + dma_core::kWrCompAddrLo), "DMA1_CORE.WR_COMP_ADDR_LO");
  EXPECT_EQ(describe_cfg_offset(mme_ctrl_base(0) + mme_ctrl::kCmd), "MME0_CTRL.CMD");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(3) + tpc_cfg::qm_srf(5)), "TPC3_CFG.QM_SRF_5");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(0) + tpc_cfg::kTpcExecute), "TPC0_CFG.TPC_EXECUTE");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(1) + tpc_cfg::qm_tensor(2) + tpc_cfg::tensor_dim_stride(1)),
            "TPC1_CFG.QM_TENSOR_2_DIM_1_STRIDE");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(0) + tpc_cfg::kKernelKernelBaseAddressLow),
            "TPC0_CFG.KERNEL_KERNEL_BASE_ADDRESS_LOW");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(0) + tpc_cfg::kQmKernelBaseAddressLow), "TPC0_CFG.QM_KERNEL_BASE_ADDRESS_LOW");
  EXPECT_EQ(describe_cfg_offset(tpc_cfg_base(0) + tpc_cfg::qm_tid_size_dim(2)), "TPC0_CFG.QM_TID_SIZE_DIM_2");
  EXPECT_EQ(describe_cfg_offset(sm_sob(SyncManager::E_N, 17)), "SYNC_MNGR_E_N_OBJS.SOB_OBJ_17");
  EXPECT_EQ(describe_cfg_offset(sm_mon_arm(SyncManager::W_S, 72)), "SYNC_MNGR_W_S_OBJS.MON_ARM_72");
  EXPECT_EQ(describe_cfg_offset(sm_mon_status(SyncManager::E_S, 511)), "SYNC_MNGR_E_S_OBJS.MON_STATUS_511");
  EXPECT_EQ(describe_cfg_offset(pcie::msi_intr(3)), "PCIE_MSI.INTR_3");
  EXPECT_EQ(describe_cfg_offset(pcie::kCoreMsiReq), "PCIE_CORE.MSI_REQ");
  EXPECT_EQ(describe_cfg_offset(cpu_if::kPfPqPi), "CPU_IF.PF_PQ_PI");
  EXPECT_EQ(describe_cfg_offset(psoc_timestamp::kCntcvl), "PSOC_TIMESTAMP.CNTCVL");
  EXPECT_EQ(describe_cfg_offset(gic::kGicdSetspiNsr), "GIC.GICD_SETSPI_NSR");
  // Inside a modelled block but not a named register, and outside every block.
  EXPECT_EQ(describe_cfg_offset(0x508444), "DMA0_QM+0x444");
  EXPECT_EQ(describe_cfg_offset(sm_glbl_base(SyncManager::E_N) + 0x10), "SYNC_MNGR_E_N_GLBL+0x10");
  EXPECT_EQ(describe_cfg_offset(sm_objs_base(SyncManager::E_N)), "SYNC_MNGR_E_N_OBJS+0x0");
  EXPECT_EQ(describe_cfg_offset(0), "unmapped 0x0");
  EXPECT_EQ(describe_cfg_offset(0x600000), "unmapped 0x600000");  // HBM0 controller, not modelled
  EXPECT_EQ(describe_device_address(kCfgBase + 0x508334), "DMA0_QM.CP_FENCE2_RDATA_1");
  EXPECT_EQ(describe_device_address(0x20000000), "device 0x20000000");
}

TEST(RegsDescribe, QmanAndSyncManagerNames) {
  EXPECT_STREQ(qman_name(QmanId::DMA0), "DMA0_QM");
  EXPECT_STREQ(qman_name(QmanId::MME2), "MME2_QM");
  EXPECT_STREQ(qman_name(QmanId::TPC7), "TPC7_QM");
  EXPECT_STREQ(qman_name(QmanId::NIC4_QM1), "NIC4_QM1");
  EXPECT_STREQ(qman_name(nic_qman(5)), "NIC2_QM1");
  EXPECT_STREQ(sync_manager_name(SyncManager::E_N), "E_N");
  EXPECT_THROW((void)qman_name(static_cast<QmanId>(kNumQmans)), std::out_of_range);
}

}  // namespace
}  // namespace hpusim::regs
