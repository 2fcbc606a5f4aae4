// HlDevice's memory management: the device MMU (page tables in DRAM, hop0 per ASID, cache
// invalidation, the engines' ASIDs), the MEMORY ioctl and page-fault events. Gaudi 1 rules
// (memory.c / gaudi.c): host memory is always reached through the MMU (4 KB pages in the PMMU
// half of VA_HOST_SPACE); DRAM is not virtualised, so ALLOC / FREE only keep the books.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "driver/device.h"
#include "arch/cpucp/cpucp.h"
#include "hw/card/card.h"
#include "arch/hex.h"
#include "arch/mme/mme_job.h"

namespace hpusim::driver {
namespace {

using namespace uapi;

// MMU_PAGE_TABLES_ADDR / _SIZE of the Gaudi 1 DRAM reservation (below DRAM_BASE_ADDR_USER).
constexpr uint64_t kPageTablesOffset = 0x10000000;
constexpr uint64_t kPageTablesBytes = 0xBFC0000;
constexpr uint32_t kKernelAsid = 0;   // HL_KERNEL_ASID_ID
constexpr uint64_t kHostPageBytes = pte::k4K;

}  // namespace

// hl_mmu_init / gaudi_mmu_init: hop0 of every ASID, a clean cache, translation on.
void HlDevice::init_mmu() {
  namespace mmu = regs::mmu;
  if (!page_tables_) {
    const uint64_t base = dram_base_ + kPageTablesOffset;
    const uint64_t end = std::min(dram_user_base_, base + kPageTablesBytes);
    if (end <= base) throw std::runtime_error("HlDevice: no room for the MMU page tables below dram_user_base");
    page_table_memory_ = std::make_unique<ShadowPageTables>();
    page_tables_ = std::make_unique<PageTableBuilder>(*page_table_memory_, base, end - base, gaudi1_va::kMaxAsid);
    host_va_ = std::make_unique<RangeAllocator>(gaudi1_va::kPmmuStart, gaudi1_va::kPmmuEnd);
    // The hop0 tables must read as empty on the device, whatever DRAM held before.
    page_table_memory_->zero(page_tables_->hop0_address(0), gaudi1_va::kMaxAsid * pte::kTableBytes);
  }
  flush_page_tables();
  for (uint32_t asid = 0; asid < gaudi1_va::kMaxAsid; ++asid) {
    const uint64_t hop0 = page_tables_->hop0_address(asid);
    mmio_write(mmu::kHop0Pa4312, static_cast<uint32_t>(hop0 >> 12));
    mmio_write(mmu::kHop0Pa4944, static_cast<uint32_t>(hop0 >> 44));
    mmio_write(mmu::kBusy, mmu::kBusyBit | asid);
    const uint64_t deadline = link_.host_now_ps() + 2'000'000'000ull;   // MMU_CONFIG_TIMEOUT_USEC
    while ((mmio_read(mmu::kBusy) & mmu::kBusyBit) && link_.host_now_ps() < deadline) charge(1000);
    if (mmio_read(mmu::kBusy) & mmu::kBusyBit) logf("Timeout during MMU hop0 config of asid " + std::to_string(asid));
  }
  mmu_inv_pi_ = 1;   // the hardware expects the first producer index after init to be 1
  invalidate_mmu_cache();
  mmio_write(mmu::kMmuUpSpiMask, 0xF);
  mmio_write(mmu::kMmuUpEnable, 1);
}

// gaudi_mmu_invalidate_cache: L0 & L1 invalidation with the producer/consumer index handshake.
bool HlDevice::invalidate_mmu_cache() {
  namespace mmu = regs::mmu;
  mmio_write(mmu::kStlbInvPs, 3);
  const uint32_t pi = mmu_inv_pi_++;   // wraps at 8 bits, as the hardware index does
  mmio_write(mmu::kStlbCacheInv, pi);
  mmio_write(mmu::kStlbInvPs, 2);
  const uint64_t deadline = link_.host_now_ps() + 2'000'000'000ull;
  uint32_t consumer = mmio_read(mmu::kStlbInvConsumerIndex);
  while (consumer != pi && link_.host_now_ps() < deadline) {
    charge(1000);
    consumer = mmio_read(mmu::kStlbInvConsumerIndex);
  }
  mmio_write(mmu::kStlbInvSet, 0);
  if (consumer != pi) {
    logf("MMU cache invalidation timeout");
    return false;
  }
  return true;
}

// gaudi_mmu_prepare: every engine's non-secure accesses carry the context's ASID, MMU not bypassed.
void HlDevice::prepare_mmu_asid(uint32_t asid) {
  const uint32_t props = asid & regs::dma_core::kPropsAsidMask;
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    const auto qman = regs::qman_from_index(i);
    if (!qman_present(qman)) continue;
    for (unsigned cp = 0; cp < regs::kQmanCps; ++cp) {
      mmio_write(regs::qman_reg(qman, regs::QmReg::GlblNonSecureProps, cp), props);
    }
  }
  for (unsigned ch = 0; ch < dma_channels(); ++ch) {
    mmio_write(regs::dma_core_base(ch) + regs::dma_core::kNonSecureProps, props);
  }
  // The TPCs carry the ASID in their AXI user fields.
  for (unsigned tpc = 0; tpc < regs::kMaxTpcEngines; ++tpc) {
    if (!qman_present(regs::tpc_qman(tpc))) continue;
    mmio_write(regs::tpc_cfg_base(tpc) + regs::tpc_cfg::kAruserLo, props);
    mmio_write(regs::tpc_cfg_base(tpc) + regs::tpc_cfg::kAwuserLo, props);
  }
  // The NIC ports in their props word (hpusim's port block).
  for (unsigned nic = 0; nic < regs::kMaxNicEngines; ++nic) {
    if (qman_present(regs::nic_qman(nic))) mmio_write(regs::nic_port_base(nic) + regs::nic_port::kNonSecureProps, props);
  }
  // The MME masters carry it in their props word (hpusim's register).
  for (unsigned mme = 0; mme < regs::kMaxMmeEngines; mme += 2) {
    if (qman_present(regs::mme_qman(mme))) mmio_write(regs::mme_ctrl_base(mme) + mme::desc::kProps, props);
  }
}

void HlDevice::flush_page_tables() {
  page_table_memory_->flush([this](uint64_t address, const void* data, uint64_t bytes) {
    link_.mmio_write_block(address, data, bytes);
  });
}

int HlDevice::do_memory(hl_mem_args& args) {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "MEMORY");
  link_.charge(DriverWork::kIoctl);
  if (!open_) return -EBADF;
  if (status_ != HL_DEVICE_STATUS_OPERATIONAL) return -EBUSY;
  const hl_mem_in in = args.in;
  switch (in.op) {
    case HL_MEM_OP_ALLOC: {
      // DRAM is not virtualised on Gaudi 1: the driver only keeps the books; user space places
      // its buffers in [dram_base_address, dram_base_address + dram_size) itself.
      if (in.alloc.mem_size == 0) {
        logf("alloc size must be larger than 0");
        return -EINVAL;
      }
      dram_used_ += in.alloc.mem_size;
      ctx_dram_used_ += in.alloc.mem_size;
      args.out = hl_mem_out{};
      args.out.handle = 0;
      return 0;
    }
    case HL_MEM_OP_FREE: {
      // As the real driver does, the size comes from the alloc view of the union.
      const uint64_t size = in.alloc.mem_size;
      dram_used_ -= std::min(dram_used_, size);
      ctx_dram_used_ -= std::min(ctx_dram_used_, size);
      return 0;
    }
    case HL_MEM_OP_MAP: {
      if (!(in.flags & HL_MEM_USERPTR)) {
        logf("no match for handle " + std::to_string(in.map_device.handle));
        return -EINVAL;
      }
      uint64_t device_va = 0;
      const int rc = map_host_memory(in.map_host.host_virt_addr, in.map_host.mem_size, in.map_host.hint_addr,
                                     (in.flags & HL_MEM_FORCE_HINT) != 0, &device_va);
      if (rc != 0) return rc;
      args.out = hl_mem_out{};
      args.out.device_virt_addr = device_va;
      return 0;
    }
    case HL_MEM_OP_UNMAP:
      return unmap_host_memory(in.unmap.device_virt_addr);
    default:
      logf("Unknown opcode for memory IOCTL " + std::to_string(in.op));
      return -EINVAL;
  }
}

// map_device_va with HL_MEM_USERPTR: pin the user pages, give them host bus addresses, map them
// at a VA block of the PMMU range and invalidate the MMU cache.
int HlDevice::map_host_memory(uint64_t host_address, uint64_t bytes, uint64_t hint, bool force_hint,
                              uint64_t* device_va) {
  if (bytes == 0 || host_address == 0) {
    logf("Failed to pin host memory: address " + hex(host_address) + " size " + std::to_string(bytes));
    return -EFAULT;
  }
  if (host_address + bytes < host_address) return -EINVAL;
  const uint64_t first_page = host_address & ~(kHostPageBytes - 1);
  const uint64_t end_page = (host_address + bytes + kHostPageBytes - 1) & ~(kHostPageBytes - 1);
  const uint64_t span = end_page - first_page;
  const uint64_t offset = host_address - first_page;
  if (hint != 0 && (hint & (kHostPageBytes - 1)) != 0) {
    if (force_hint) {
      logf("Hint address " + hex(hint) + " is not page aligned");
      return -EINVAL;
    }
    logf("Hint address " + hex(hint) + " will be ignored because it is not aligned");
    hint = 0;
  }
  auto va = host_va_->allocate(span, kHostPageBytes, hint, force_hint);
  if (!va) {
    logf(force_hint ? "Hint address " + hex(hint) + " cannot be honoured" : "no available va block for size " + std::to_string(span));
    return force_hint ? -EINVAL : -ENOMEM;
  }
  if (hint != 0 && *va != hint) logf("Hint address " + hex(hint) + " could not be used, mapped at " + hex(*va));
  // Pinned first (the pages get their bus addresses), then mapped; on any failure nothing stays:
  // the tables, the pin, the VA block.
  uint8_t* pages = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(first_page));
  uint64_t phys = 0;
  try {
    phys = link_.pin_user_pages(pages, span);
  } catch (const std::bad_alloc&) {
    host_va_->release(*va);
    logf("Failed to pin host memory: no bus addresses left for " + std::to_string(span) + " bytes");
    return -ENOMEM;
  } catch (...) {
    host_va_->release(*va);
    throw;
  }
  try {
    page_tables_->map(kUserAsid, *va, host_phys_base_ + phys, span, kHostPageBytes);
  } catch (const PageTableError& error) {
    logf(std::string("mapping host memory failed: ") + error.what());
    link_.unpin_user_pages(phys);
    host_va_->release(*va);
    return -ENOMEM;
  }
  try {
    flush_page_tables();
    invalidate_mmu_cache();
  } catch (...) {
    page_tables_->unmap(kUserAsid, *va, span);
    link_.unpin_user_pages(phys);
    host_va_->release(*va);
    throw;
  }
  host_mappings_[*va + offset] = HostMapping{*va, span, phys};
  *device_va = *va + offset;
  return 0;
}

int HlDevice::unmap_host_memory(uint64_t device_va) {
  auto it = host_mappings_.find(device_va);
  if (it == host_mappings_.end()) {
    logf("unmap failed, no mem hnode for vaddr " + hex(device_va));
    return -EINVAL;
  }
  const HostMapping mapping = it->second;
  host_mappings_.erase(it);
  page_tables_->unmap(kUserAsid, mapping.va_block, mapping.bytes);
  flush_page_tables();
  invalidate_mmu_cache();
  // Unpinned only after the MMU can no longer reach the pages.
  link_.unpin_user_pages(mapping.phys);
  host_va_->release(mapping.va_block);
  return 0;
}

// hl_vm_ctx_fini: whatever the user left mapped is unmapped when the context goes away.
void HlDevice::unmap_all_host_memory() {
  if (!host_mappings_.empty()) {
    logf("user released device without removing its memory mappings (" + std::to_string(host_mappings_.size()) + ")");
  }
  while (!host_mappings_.empty()) unmap_host_memory(host_mappings_.begin()->first);
}

// gaudi_print_and_get_mmu_error_info: the capture registers name the VA (and, in hpusim, the
// engine); the first fault since open is kept for HL_INFO_PAGE_FAULT_EVENT.
void HlDevice::handle_page_fault() {
  namespace mmu = regs::mmu;
  ++page_faults_;
  const uint32_t capture = mmio_read(mmu::kPageErrorCapture);
  if (!(capture & mmu::kCaptureEntryValid)) {
    logf("MMU page fault event without a captured address");
    return;
  }
  const uint64_t va = (uint64_t{capture & mmu::kCaptureVa4932Mask} << 32) | mmio_read(mmu::kPageErrorCaptureVa);
  const uint32_t engine = (capture & mmu::kCaptureEngineMask) >> mmu::kCaptureEngineShift;
  logf("MMU page fault on va " + hex(va) + " by " + regs::engine_name(engine) +
       ((capture & mmu::kCaptureWrite) ? " (write)" : " (read)"));
  mmio_write(mmu::kPageErrorCapture, 0);
  if (!page_fault_) {
    hl_page_fault_info info{};
    info.timestamp = static_cast<int64_t>(link_.host_now_ps() / 1000);
    info.addr = va;
    info.engine_id = static_cast<uint16_t>(engine);
    page_fault_ = info;
  }
}

}  // namespace hpusim::driver
