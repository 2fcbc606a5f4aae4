// HlDevice: the habanalabs kernel driver of one Gaudi 1 class card, running in user space.
//
// The platform (sim/platform) probes it with a device link to its card; it talks to the card only
// the way a kernel driver does (driver/device_link.h): MMIO writes/reads through the PCIe BARs,
// MSIs it waits for, host memory (primary queues, completion queues, patched command buffers)
// that the device reads and writes by DMA, and the reset line on a hard reset.
//
// User space reaches it through its device file (driver/device_file.h): open, close, ioctl with
// the habanalabs request numbers (DRM accel or legacy encoding) and CB mmap. Return values are 0
// or a negative errno, like the kernel's.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"
#include "arch/uapi/uapi.h"
#include "driver/cb_parser.h"
#include "driver/device_file.h"
#include "driver/device_link.h"
#include "driver/vm_support.h"

namespace hpusim::traces {
class Timeline;
}

namespace hpusim::driver {

struct HlDeviceOptions {
  // TDR: a CS that has been the oldest in flight for this long (host time) times out and the
  // device is hard-reset. The driver refuses 0; a platform puts the preset's
  // driver.tdr_timeout_ms there (tests want something small).
  uint64_t cs_timeout_us = 0;
  // When set, the driver puts its ioctls (slices) and interrupts (instants) on a process of this
  // timeline named trace_process. Must outlive the device.
  traces::Timeline* timeline = nullptr;
  std::string trace_process = "host: driver";
  // The card's label on the timeline ("" alone; its index in a box): the key of its command
  // submissions' flows (traces/timeline.h).
  std::string card_label;
  // PQ length of the external queues (HL_QUEUE_LENGTH = 4096; power of two, <= 4096).
  uint32_t ext_queue_length = 4096;
  // CS outcomes kept for WAIT_CS; older sequence numbers report COMPLETED + FLAG_GONE.
  // Also the bound on CSs in flight (max_pending_cs); power of two.
  uint32_t max_pending_cs = 4096;
  // Heartbeat (hl_fw_send_heartbeat): a TEST packet to the device CPU this often (host time);
  // no answer means a hard reset. 0 turns it off. The real driver's period is 5 s.
  uint64_t heartbeat_period_us = 5000000;
  // Fault injection for tests: called at named points inside the driver ("schedule: PQ entry
  // written" after each PQ entry of a CS); what it throws stands for a failing host write or MMIO
  // at that point.
  std::function<void(const char* point)> fault_hook;
};

class HlDevice : public DeviceFileOps {
 public:
  // Probes the card behind `link`: brings up its device CPU, learns the card's make-up and memory
  // map from the firmware's INFO, sets up its MMU and queues. Throws std::runtime_error when the
  // card does not come up.
  explicit HlDevice(DeviceLink& link, const HlDeviceOptions& options = {});
  ~HlDevice();
  HlDevice(const HlDevice&) = delete;
  HlDevice& operator=(const HlDevice&) = delete;

  // File operations. open(): 0, or -EBUSY when the compute context is already open.
  // close(): waits for the CSs in flight (a stuck one ends in a TDR hard reset, which aborts the
  // rest), releases the context's CBs and returns 0; -EBADF if not open.
  int open() override;
  int close() override;
  bool is_open() const { return open_; }

  // Dispatches INFO, CB, CS, WAIT_CS and MEMORY (DRM or legacy request numbers).
  int ioctl(unsigned long request, void* arg) override;
  // The device file's mmap: `offset` is a CB handle (mmap_cb).
  int mmap(uint64_t offset, uint64_t length, void** address) override { return mmap_cb(offset, length, address); }
  int munmap(void* address, uint64_t length) override { return munmap_cb(address, length); }

  // Typed entry points (the same code paths as ioctl()).
  int info(uapi::hl_info_args& args);
  int cb(uapi::hl_cb_args& args);
  int cs(uapi::hl_cs_args& args);
  int wait_cs(uapi::hl_wait_cs_args& args);
  // MEMORY: ALLOC / FREE (DRAM bookkeeping only, Gaudi 1 does not virtualise DRAM), MAP with
  // HL_MEM_USERPTR (pins user memory and maps it in the PMMU range; hints and FORCE_HINT),
  // UNMAP by the device VA MAP returned. Mapping a device handle is -EINVAL (no such handles).
  int memory(uapi::hl_mem_args& args);

  // mmap of a CB by handle: `length` must be the CB size rounded up to the page size.
  int mmap_cb(uint64_t handle, uint64_t length, void** address);
  int munmap_cb(void* address, uint64_t length);

  // What a kernel developer reads in debugfs and the kernel log (tests and tools; user space goes
  // through the device file). Memory-map facts first.
  uint64_t sram_base() const { return sram_base_; }
  uint64_t sram_user_base() const { return sram_base_ + sram_reserved_; }
  uint64_t dram_user_base() const { return dram_user_base_; }
  // The driver's kernel log (dev_err/dev_info style lines).
  const std::vector<std::string>& log() const { return log_; }
  // QMAN errors, as the firmware reports them in the event queue (each QMAN's GLBL_ERR_ADDR is
  // the GIC SETSPI register, GLBL_ERR_WDATA its SPI). The word is the SPI the QMAN's error message
  // carried (EQ entry data[0]); 0 when that QMAN has reported nothing since the last reset.
  uint32_t qman_error_word(regs::QmanId qman);
  bool qman_error(regs::QmanId qman) { return qman_error_word(qman) != 0; }
  // Lets host time pass, handling interrupts, until `qman` has reported an error or `timeout_us`
  // of host time has passed. Returns qman_error(qman).
  bool wait_qman_error(regs::QmanId qman, uint64_t timeout_us);
  // Event-queue entries handled since the device was created (all types).
  uint64_t eq_events() const { return eq_events_; }
  // MMU page-fault events handled since the device was created.
  uint64_t page_faults() const { return page_faults_; }
  // Heartbeats sent to the device CPU, and cpucp messages it answered, since creation.
  uint64_t heartbeats() const { return heartbeats_; }
  uint64_t cpu_messages() const { return cpu_messages_; }
  // Illegal-access (RAZWI) events handled since creation.
  uint64_t razwi_events() const { return razwi_events_; }

 private:
  static constexpr uint32_t kPageSize = 4096;
  static constexpr uint32_t kCbPoolCbSize = 0x20000;  // GAUDI_CB_POOL_CB_SIZE
  static constexpr unsigned kNumCqs = 8;
  static constexpr uint32_t kCpuPqEntries = 64;

  struct CommandBuffer {
    std::vector<uint8_t> memory;   // the CB's coherent memory, mmap-able by the user
    uint32_t size = 0;             // size the user asked for
    unsigned mmaps = 0;
    bool destroyed = false;
  };

  struct Job {
    uint64_t cs_seq = 0;
    bool kernel = false;
    uint64_t patched_address = 0;  // host bus address of the patched CB
    uint64_t patched_bytes = 0;
  };

  struct HwQueue {
    bool exists = false;
    bool external = false;
    uint32_t length = 0;
    uint64_t pq_address = 0;   // host bus address
    uint32_t pi = 0;           // wraps at 2 * length
    uint32_t ci = 0;
    uint64_t cb_slots = 0;     // external: host region for one patched CB per PQ slot
    std::vector<Job> shadow;   // external: indexed by PQ offset
  };

  struct CompletionQueue {
    uint64_t address = 0;      // host bus address of the ring of 4-byte entries
    uint32_t pi = 0;           // next slot a job will complete into
    uint32_t ci = 0;           // next slot the IRQ handler looks at
  };

  enum class CsState { kInFlight, kCompleted, kTimedOut, kAborted };
  struct Cs {
    uint64_t seq = 0;
    bool kernel = false;
    CsState state = CsState::kInFlight;
    unsigned external_pending = 0;
    std::map<unsigned, uint32_t> internal_jobs;  // queue -> jobs (CI released on completion)
    uint64_t timeout_ps = 0;
    uint64_t head_since_ps = 0;                  // when it became the oldest in flight
    bool skip_reset = false;
    uint64_t completed_ps = 0;   // handled: the interrupt's latency and handler charged
    uint64_t stamped_ps = 0;     // its wait_cs time stamp: the completion MSI's arrival
    uint64_t submitted_ps = 0;
  };

  struct HostMapping {
    uint64_t va_block = 0;   // page-aligned start of the VA block
    uint64_t bytes = 0;      // whole pages
    uint64_t phys = 0;       // host bus address of the pinned pages
  };

  struct PendingJob {
    unsigned queue = 0;
    bool external = false;
    ExternalParseResult parsed;   // external
    uint64_t address = 0;         // internal: CB device address
    uint32_t size = 0;
  };

  // A host-time slice on the driver's ioctl track, from construction to destruction.
  class HostSpan {
   public:
    HostSpan(HlDevice& device, const char* name);
    ~HostSpan();
    HostSpan(const HostSpan&) = delete;
    HostSpan& operator=(const HostSpan&) = delete;
    // The slice carries this CS's flow on (a submission).
    void add_flow(uint64_t flow) { flow_ = flow; }

   private:
    HlDevice& device_;
    const char* name_;
    uint64_t start_ps_;
    uint64_t flow_ = 0;
  };
  void trace_instant(const std::string& name);

  // The entry points' bodies; the public ones run them at_boundary.
  template <class Body>
  int at_boundary(const char* entry, Body&& body);
  int do_open();
  int do_close();
  int do_info(uapi::hl_info_args& args);
  int do_cb(uapi::hl_cb_args& args);
  int do_cs(uapi::hl_cs_args& args);
  int do_wait_cs(uapi::hl_wait_cs_args& args);
  int do_memory(uapi::hl_mem_args& args);
  int do_mmap_cb(uint64_t handle, uint64_t length, void** address);
  int do_munmap_cb(void* address, uint64_t length);

  // Device initialisation (hw_init): PQs, CQs, CPs, enables, error reporting.
  void init_queues();
  void init_qman(regs::QmanId qman);
  void init_dma_core(unsigned channel);
  void init_nic_port(unsigned port);
  bool qman_present(regs::QmanId qman) const;
  void build_queue_table();   // queues_ from the make-up the firmware reported
  unsigned dma_channels() const;
  // Memory management (device_memory.cpp).
  void init_mmu();
  bool invalidate_mmu_cache();
  void prepare_mmu_asid(uint32_t asid);
  void flush_page_tables();
  int map_host_memory(uint64_t host_address, uint64_t bytes, uint64_t hint, bool force_hint, uint64_t* device_va);
  int unmap_host_memory(uint64_t device_va);
  void unmap_all_host_memory();
  void handle_page_fault();
  void handle_dma_core_error(unsigned channel);
  // Boot-status wait and the CPU-queue / event-queue init handshake with the firmware.
  bool init_cpu_queues();
  // cpucp messages (device_cpucp.cpp): 0 or -EIO (no answer in time, or an error code).
  int send_cpu_message(uint32_t opcode, uint64_t value, uint32_t index, uint64_t timeout_us, uint64_t* result);
  bool cpucp_info_get();
  bool send_heartbeat();
  // Timers that run whenever the driver runs: a reset an event asked for, the heartbeat, the TDR.
  void run_timers();
  // The hard-reset halt request (KMD_MSG_TO_CPU = GOTO_WFE, wait for IN_WFE).
  void halt_device_cpu();
  void handle_irq(unsigned vector);
  void handle_eq();
  void handle_event(uint32_t type, const uint64_t* data);
  uint32_t mmio_read(uint64_t cfg_offset);
  void clear_sync_managers();
  void hard_reset(const std::string& reason, Cs* timed_out);

  int cs_default(const uapi::hl_cs_chunk* chunks, uint32_t count, uint32_t flags, uint32_t timeout_s,
                 bool kernel, uint64_t* seq_out);
  int schedule(std::vector<PendingJob>& jobs, Cs& cs);
  void complete_job(unsigned queue, uint32_t shadow_index);
  void finish_cs(Cs& cs, CsState state);
  Cs* find_cs(uint64_t seq);
  Cs* oldest_in_flight();
  // Handles every interrupt that has arrived by host time now; returns true if any.
  bool poll_interrupts();
  void handle_cq(unsigned cq);
  // Lets host time pass until an interrupt or `until_ps`; runs the TDR check.
  // kNo: the caller holds the lock once (an ioctl's) and lets it go while it sleeps.
  enum class LockWhileWaiting { kYes, kNo };
  void wait_event(uint64_t until_ps, LockWhileWaiting hold = LockWhileWaiting::kYes);
  void check_tdr();
  uint64_t tdr_deadline_ps();
  int wait_for_kernel_cs(uint64_t seq);

  void host_write(uint64_t address, const void* data, uint64_t bytes);
  void host_read(uint64_t address, void* data, uint64_t bytes);
  void host_release(uint64_t address, uint64_t bytes);
  uint64_t device_view(uint64_t host_address) const { return host_phys_base_ + host_address; }
  void mmio_write(uint64_t cfg_offset, uint32_t value);
  void charge(uint64_t ns);
  uint64_t alloc_coherent(uint64_t bytes);   // throws std::runtime_error when none is left
  void logf(const std::string& line);
  bool queue_exists(unsigned q) const;

  DeviceLink& link_;
  HlDeviceOptions options_;
  traces::Timeline* timeline_ = nullptr;
  DriverLock mutex_;   // the link's driver lock: host threads get it in host-time order

  uint64_t sram_base_ = 0, sram_size_ = 0, sram_reserved_ = 0;
  uint64_t dram_base_ = 0, dram_user_base_ = 0, dram_size_ = 0;
  uint64_t host_phys_base_ = 0, host_va_start_ = 0, host_va_end_ = 0;

  // The device CPU's queues: the CPU PQ (BDs for cpucp packets), the event queue, the
  // CPU-accessible window (CQ registers). Host bus addresses.
  uint64_t cpu_pq_address_ = 0, eq_address_ = 0, cpu_cq_address_ = 0;
  uint64_t cpu_packet_address_ = 0, cpu_info_address_ = 0;
  uint64_t pq_block_ = 0;              // a PQ per queue index
  std::vector<uint64_t> coherent_;     // the coherent buffers, freed with the device
  uint32_t eq_ci_ = 0;
  uint32_t cpu_pq_pi_ = 0;
  uint64_t cpu_messages_ = 0, heartbeats_ = 0;
  uint64_t next_heartbeat_ps_ = UINT64_MAX;
  std::string reset_request_;                // an event asked for a hard reset (the reason)
  std::string card_name_ = "HL205", cpucp_version_;   // from the firmware's cpucp_info
  uint32_t card_generation_ = 1;                      // likewise (1 without hpusim's extension)
  // The card's make-up, from the binning masks of the firmware's cpucp_info: present TPCs, the
  // number of DMA channels (the PCI pair plus the internal ones) and present MME masters (bit k =
  // MME 2k).
  uint64_t tpc_mask_ = 0;
  uint64_t nic_ports_mask_ = 0;   // the NIC ports the firmware reports (cpucp info)
  unsigned dma_channel_count_ = 0;
  uint32_t mme_master_mask_ = 0;
  uint16_t tpc_vector_bits_ = 0;   // hpusim's INFO extension
  uint8_t mme_geometries_ = 0;     // hpusim's INFO extension
  uint32_t tpc_prefetch_entries_ = 0;   // hpusim's INFO extension
  uint32_t mme_super_tile_rows_ = 0;    // hpusim's INFO extension
  uint64_t eq_events_ = 0;
  std::vector<uint32_t> qman_error_words_;   // per QMAN index, from the event queue

  // Memory management: page tables (shadowed, written to DRAM through the BAR), the PMMU VA
  // range, host bus addresses for pinned user pages, the user's mappings by device VA.
  static constexpr uint32_t kUserAsid = 1;
  std::unique_ptr<ShadowPageTables> page_table_memory_;
  std::unique_ptr<PageTableBuilder> page_tables_;
  std::unique_ptr<RangeAllocator> host_va_;
  std::map<uint64_t, HostMapping> host_mappings_;
  uint8_t mmu_inv_pi_ = 1;   // STLB invalidation producer index (8 bits in hardware)
  uint64_t dram_used_ = 0, ctx_dram_used_ = 0;
  std::optional<uapi::hl_page_fault_info> page_fault_;
  uint64_t page_faults_ = 0;
  uint64_t razwi_events_ = 0;

  std::vector<HwQueue> queues_;
  CompletionQueue cqs_[kNumCqs];
  // Per CQ, for the MSIs taken in one poll: when a handler on an idle core would have run each
  // (arrival, interrupt latency, handler). A CS completes then, not when a busy host thread got
  // round to its interrupt; an entry without one (its MSI not taken yet) completes at host now.
  struct MsiTimes {
    uint64_t arrived_ps = 0, handled_ps = 0;
  };
  std::deque<MsiTimes> msi_handled_ps_[kNumCqs];
  uint64_t entry_completion_ps_ = 0;   // the CQ entry being handled: its completion (0: host now)
  uint64_t entry_msi_ps_ = 0;          // and its interrupt's arrival
  HostSpan* submit_span_ = nullptr;    // the CS ioctl running now
  uint64_t completion_slice_end_ns_ = 0;   // the last completion slice on the timeline
  // The timeline's CS flows (hold the timeline's mutex inside).
  uint64_t start_cs_flow(uint64_t seq);
  void trace_completion(const Cs& cs);
  void trace_waited(uint64_t seq);

  bool open_ = false;
  uapi::hl_device_status status_ = uapi::HL_DEVICE_STATUS_IN_DEVICE_CREATION;
  uint32_t hard_reset_cnt_ = 0;
  uapi::hl_info_cs_counters counters_{};   // total_* survive close; ctx_* are zeroed on open
  // HL_INFO_HPUSIM_DEVICE_BUSY: user CSs counted in submission order (seq -> [submitted,
  // completed], completed 0 while in flight), the busy union so far and where it ends.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> busy_pending_;
  uapi::hl_info_hpusim_device_busy busy_{};
  uint64_t busy_covered_ps_ = 0;
  void account_busy(uint64_t seq, uint64_t completed_ps);
  bool restore_done_ = false;

  std::map<uint64_t, CommandBuffer> cbs_;  // by handle
  std::map<const void*, uint64_t> mapped_; // mmap address -> handle
  uint64_t next_cb_id_ = 1;

  uint64_t next_seq_ = 1;                  // next user CS sequence number
  uint64_t next_kernel_seq_ = 1ull << 63;  // kernel CSs live in their own range
  std::map<uint64_t, Cs> cs_;              // in flight and recent (bounded history)
  std::deque<uint64_t> in_flight_;         // mirror list, oldest first
  std::vector<std::string> log_;
};

}  // namespace hpusim::driver
