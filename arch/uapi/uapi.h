// The habanalabs user-space ABI subset hpusim's driver implements, with the upstream struct
// layouts (include/uapi/drm/habanalabs_accel.h; the legacy include/uapi/misc/habanalabs.h used
// the same structs). Field order, sizes and numbers were checked against the public header;
// every struct carries static_asserts on its size and on the offsets users depend on.
//
// Names keep the upstream spelling (struct hl_cs_args, HL_CS_FLAGS_FORCE_RESTORE, ...) so code
// written against the real header reads the same; macros are constexpr constants here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::uapi {

using __u8 = uint8_t;
using __u16 = uint16_t;
using __u32 = uint32_t;
using __u64 = uint64_t;
using __s32 = int32_t;
using __s64 = int64_t;

// ---------------------------------------------------------------------------------------------
// ioctl numbers
// ---------------------------------------------------------------------------------------------

// Linux asm-generic/ioctl.h encoding: nr[7:0], type[15:8], size[29:16], dir[31:30].
inline constexpr unsigned long kIocWrite = 1;
inline constexpr unsigned long kIocRead = 2;
constexpr unsigned long ioc(unsigned long dir, unsigned long type, unsigned long nr, unsigned long size) {
  return (dir << 30) | (size << 16) | (type << 8) | nr;
}
constexpr unsigned long iowr(unsigned long type, unsigned long nr, unsigned long size) {
  return ioc(kIocRead | kIocWrite, type, nr, size);
}
constexpr unsigned long ioc_nr(unsigned long request) { return request & 0xFF; }
constexpr unsigned long ioc_type(unsigned long request) { return (request >> 8) & 0xFF; }
constexpr unsigned long ioc_size(unsigned long request) { return (request >> 16) & 0x3FFF; }

inline constexpr unsigned long DRM_IOCTL_BASE = 'd';
inline constexpr unsigned long DRM_COMMAND_BASE = 0x40;

inline constexpr unsigned HL_IOCTL_INFO_NR = 0x00;
inline constexpr unsigned HL_IOCTL_CB_NR = 0x01;
inline constexpr unsigned HL_IOCTL_CS_NR = 0x02;
inline constexpr unsigned HL_IOCTL_WAIT_CS_NR = 0x03;
inline constexpr unsigned HL_IOCTL_MEMORY_NR = 0x04;
inline constexpr unsigned HL_IOCTL_DEBUG_NR = 0x05;

// ---------------------------------------------------------------------------------------------
// INFO
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 HL_INFO_HW_IP_INFO = 0;
inline constexpr __u32 HL_INFO_HW_EVENTS = 1;
inline constexpr __u32 HL_INFO_DRAM_USAGE = 2;
inline constexpr __u32 HL_INFO_HW_IDLE = 3;
inline constexpr __u32 HL_INFO_DEVICE_STATUS = 4;
inline constexpr __u32 HL_INFO_DEVICE_UTILIZATION = 6;
inline constexpr __u32 HL_INFO_HW_EVENTS_AGGREGATE = 7;
inline constexpr __u32 HL_INFO_CLK_RATE = 8;
inline constexpr __u32 HL_INFO_RESET_COUNT = 9;
inline constexpr __u32 HL_INFO_TIME_SYNC = 10;
inline constexpr __u32 HL_INFO_CS_COUNTERS = 11;
inline constexpr __u32 HL_INFO_PCI_COUNTERS = 12;
inline constexpr __u32 HL_INFO_CLK_THROTTLE_REASON = 13;
inline constexpr __u32 HL_INFO_SYNC_MANAGER = 14;
inline constexpr __u32 HL_INFO_TOTAL_ENERGY = 15;
inline constexpr __u32 HL_INFO_PLL_FREQUENCY = 16;
inline constexpr __u32 HL_INFO_POWER = 17;
inline constexpr __u32 HL_INFO_OPEN_STATS = 18;
inline constexpr __u32 HL_INFO_PAGE_FAULT_EVENT = 33;
// hpusim: how long the device has been busy with this context's command submissions.
inline constexpr __u32 HL_INFO_HPUSIM_DEVICE_BUSY = 64;

inline constexpr size_t HL_INFO_VERSION_MAX_LEN = 128;
inline constexpr size_t HL_INFO_CARD_NAME_MAX_LEN = 16;

struct hl_info_args {
  __u64 return_pointer;
  __u32 return_size;
  __u32 op;
  union {
    __u32 dcore_id;
    __u32 ctx_id;
    __u32 period_ms;
    __u32 pll_index;
    __u32 eventfd;
    __u32 user_buffer_actual_size;
    __u32 sec_attest_nonce;
    __u32 array_size;
    __u32 fw_sub_opcode;
  };
  __u32 pad;
};
static_assert(sizeof(hl_info_args) == 24);
static_assert(offsetof(hl_info_args, op) == 12 && offsetof(hl_info_args, dcore_id) == 16);

struct hl_info_hw_ip_info {
  __u64 sram_base_address;
  __u64 dram_base_address;
  __u64 dram_size;
  __u32 sram_size;
  __u32 num_of_events;
  __u32 device_id;
  __u32 module_id;
  __u32 decoder_enabled_mask;
  __u16 first_available_interrupt_id;
  __u16 server_type;
  __u32 cpld_version;
  __u32 psoc_pci_pll_nr;
  __u32 psoc_pci_pll_nf;
  __u32 psoc_pci_pll_od;
  __u32 psoc_pci_pll_div_factor;
  __u8 tpc_enabled_mask;
  __u8 dram_enabled;
  __u8 security_enabled;
  __u8 mme_master_slave_mode;
  __u8 cpucp_version[HL_INFO_VERSION_MAX_LEN];
  __u8 card_name[HL_INFO_CARD_NAME_MAX_LEN];
  __u64 tpc_enabled_mask_ext;
  __u64 dram_page_size;
  __u32 edma_enabled_mask;
  __u16 number_of_user_interrupts;
  __u8 reserved1;
  __u8 reserved2;
  __u64 reserved3;
  __u64 device_mem_alloc_default_page_size;
  __u64 nic_ports_mask;            // the NIC ports the card has (bit n: port n)
  __u64 nic_ports_external_mask;   // those used for scale-out
  __u32 reserved6;
  __u8 reserved7;
  __u8 revision_id;
  __u16 tpc_interrupt_id;
  __u32 rotator_enabled_mask;
  __u32 reserved9;
  __u64 engine_core_interrupt_reg_addr;
  __u64 reserved_dram_size;
};
static_assert(offsetof(hl_info_hw_ip_info, sram_size) == 24);
static_assert(offsetof(hl_info_hw_ip_info, device_id) == 32);
static_assert(offsetof(hl_info_hw_ip_info, tpc_enabled_mask) == 68);
static_assert(offsetof(hl_info_hw_ip_info, cpucp_version) == 72);
static_assert(offsetof(hl_info_hw_ip_info, card_name) == 200);
static_assert(offsetof(hl_info_hw_ip_info, tpc_enabled_mask_ext) == 216);
static_assert(offsetof(hl_info_hw_ip_info, reserved_dram_size) == 296);
static_assert(sizeof(hl_info_hw_ip_info) == 304);

enum hl_device_status : __u32 {
  HL_DEVICE_STATUS_OPERATIONAL = 0,
  HL_DEVICE_STATUS_IN_RESET = 1,
  HL_DEVICE_STATUS_MALFUNCTION = 2,
  HL_DEVICE_STATUS_NEEDS_RESET = 3,
  HL_DEVICE_STATUS_IN_DEVICE_CREATION = 4,
  HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE = 5,
};

struct hl_info_device_status {
  __u32 status;
  __u32 pad;
};
static_assert(sizeof(hl_info_device_status) == 8);

struct hl_info_dram_usage {
  __u64 dram_free_mem;
  __u64 ctx_dram_mem;
};
static_assert(sizeof(hl_info_dram_usage) == 16);

// HL_INFO_PAGE_FAULT_EVENT: the first page fault captured since the device was opened.
struct hl_page_fault_info {
  __s64 timestamp;
  __u64 addr;
  __u16 engine_id;
  __u8 pad[6];
};
static_assert(sizeof(hl_page_fault_info) == 24);

struct hl_info_reset_count {
  __u32 hard_reset_cnt;
  __u32 soft_reset_cnt;
};
static_assert(sizeof(hl_info_reset_count) == 8);

struct hl_info_sync_manager {
  __u32 first_available_sync_object;
  __u32 first_available_monitor;
  __u32 first_available_cq;
  __u32 reserved;
};
static_assert(sizeof(hl_info_sync_manager) == 16);

struct hl_info_cs_counters {
  __u64 total_out_of_mem_drop_cnt;
  __u64 ctx_out_of_mem_drop_cnt;
  __u64 total_parsing_drop_cnt;
  __u64 ctx_parsing_drop_cnt;
  __u64 total_queue_full_drop_cnt;
  __u64 ctx_queue_full_drop_cnt;
  __u64 total_device_in_reset_drop_cnt;
  __u64 ctx_device_in_reset_drop_cnt;
  __u64 total_max_cs_in_flight_drop_cnt;
  __u64 ctx_max_cs_in_flight_drop_cnt;
  __u64 total_validation_drop_cnt;
  __u64 ctx_validation_drop_cnt;
};
static_assert(sizeof(hl_info_cs_counters) == 96);

// HL_INFO_HPUSIM_DEVICE_BUSY (hpusim): the union of the [submission, completion] host-time
// intervals of the user command submissions completed since the device was opened, taken in
// submission order once every earlier one completed, so a submission queued behind another counts
// from when the device reached it.
struct hl_info_hpusim_device_busy {
  __u64 busy_ns;
  __u64 completed_cs;     // submissions counted
  __u64 last_completion_ns;
};
static_assert(sizeof(hl_info_hpusim_device_busy) == 24);
static_assert(offsetof(hl_info_cs_counters, total_queue_full_drop_cnt) == 32);

// Gaudi 1 dcores for HL_INFO_SYNC_MANAGER (enum gaudi_dcores / HL_GAUDI_*_DCORE).
inline constexpr __u32 HL_GAUDI_WS_DCORE = 0;
inline constexpr __u32 HL_GAUDI_WN_DCORE = 1;
inline constexpr __u32 HL_GAUDI_EN_DCORE = 2;
inline constexpr __u32 HL_GAUDI_ES_DCORE = 3;
inline constexpr __u32 HL_MAX_DCORES = 8;

// Exported Gaudi 1 ABI constants.
inline constexpr __u32 GAUDI_DRIVER_SRAM_RESERVED_SIZE_FROM_START = 0x80;
inline constexpr __u32 GAUDI_FIRST_AVAILABLE_W_S_SYNC_OBJECT = 144;
inline constexpr __u32 GAUDI_FIRST_AVAILABLE_W_S_MONITOR = 72;

// ---------------------------------------------------------------------------------------------
// CB
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 HL_CB_OP_CREATE = 0;
inline constexpr __u32 HL_CB_OP_DESTROY = 1;
inline constexpr __u32 HL_CB_OP_INFO = 2;
inline constexpr __u32 HL_MAX_CB_SIZE = 0x200000 - 32;  // 2 MB minus 2 x MSG_PROT
inline constexpr __u32 HL_CB_FLAGS_MAP = 0x1;
inline constexpr __u32 HL_CB_FLAGS_GET_DEVICE_VA = 0x2;

struct hl_cb_in {
  __u64 cb_handle;
  __u32 op;
  __u32 cb_size;
  __u32 ctx_id;
  __u32 flags;
};
static_assert(sizeof(hl_cb_in) == 24);

struct hl_cb_out {
  union {
    __u64 cb_handle;
    union {
      struct {
        __u32 usage_cnt;
        __u32 pad;
      };
      __u64 device_va;
    };
  };
};
static_assert(sizeof(hl_cb_out) == 8);

union hl_cb_args {
  hl_cb_in in;
  hl_cb_out out;
};
static_assert(sizeof(hl_cb_args) == 24);

// ---------------------------------------------------------------------------------------------
// CS
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 HL_MAX_JOBS_PER_CS = 512;

inline constexpr __u32 HL_CS_CHUNK_FLAGS_USER_ALLOC_CB = 0x1;

struct hl_cs_chunk {
  union {
    __u64 cb_handle;
    __u64 signal_seq_arr;
    __u64 encaps_signal_seq;
  };
  __u32 queue_index;
  union {
    __u32 cb_size;
    __u32 num_signal_seq_arr;
    __u32 encaps_signal_offset;
  };
  __u32 cs_chunk_flags;
  __u32 collective_engine_id;
  __u32 pad[10];
};
static_assert(sizeof(hl_cs_chunk) == 64);
static_assert(offsetof(hl_cs_chunk, queue_index) == 8 && offsetof(hl_cs_chunk, cb_size) == 12);

inline constexpr __u32 HL_CS_FLAGS_FORCE_RESTORE = 0x1;
inline constexpr __u32 HL_CS_FLAGS_SIGNAL = 0x2;
inline constexpr __u32 HL_CS_FLAGS_WAIT = 0x4;
inline constexpr __u32 HL_CS_FLAGS_COLLECTIVE_WAIT = 0x8;
inline constexpr __u32 HL_CS_FLAGS_TIMESTAMP = 0x20;
inline constexpr __u32 HL_CS_FLAGS_STAGED_SUBMISSION = 0x40;
inline constexpr __u32 HL_CS_FLAGS_STAGED_SUBMISSION_FIRST = 0x80;
inline constexpr __u32 HL_CS_FLAGS_STAGED_SUBMISSION_LAST = 0x100;
inline constexpr __u32 HL_CS_FLAGS_CUSTOM_TIMEOUT = 0x200;
inline constexpr __u32 HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT = 0x400;
inline constexpr __u32 HL_CS_FLAGS_ENCAP_SIGNALS = 0x800;
inline constexpr __u32 HL_CS_FLAGS_RESERVE_SIGNALS_ONLY = 0x1000;
inline constexpr __u32 HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY = 0x2000;
inline constexpr __u32 HL_CS_FLAGS_ENGINE_CORE_COMMAND = 0x4000;
inline constexpr __u32 HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES = 0x8000;
inline constexpr __u32 HL_CS_FLAGS_ENGINES_COMMAND = 0x10000;

inline constexpr __u32 HL_CS_STATUS_SUCCESS = 0;

struct hl_cs_in {
  union {
    struct {
      __u64 chunks_restore;
      __u64 chunks_execute;
    };
    struct {
      __u64 engine_cores;
      __u32 num_engine_cores;
      __u32 core_command;
    };
    struct {
      __u64 engines;
      __u32 num_engines;
      __u32 engine_command;
    };
  };
  union {
    __u64 seq;
    __u32 encaps_sig_handle_id;
    struct {
      __u32 encaps_signals_count;
      __u32 encaps_signals_q_idx;
    };
  };
  __u32 num_chunks_restore;
  __u32 num_chunks_execute;
  __u32 timeout;
  __u32 cs_flags;
  __u32 ctx_id;
  __u8 pad[4];
};
static_assert(sizeof(hl_cs_in) == 48);
static_assert(offsetof(hl_cs_in, num_chunks_restore) == 24 && offsetof(hl_cs_in, cs_flags) == 36);

struct hl_cs_out {
  union {
    __u64 seq;
    struct {
      __u32 handle_id;
      __u32 count;
    };
  };
  __u32 status;
  __u32 sob_base_addr_offset;
  __u16 sob_count_before_submission;
  __u16 pad[3];
};
static_assert(sizeof(hl_cs_out) == 24);

union hl_cs_args {
  hl_cs_in in;
  hl_cs_out out;
};
static_assert(sizeof(hl_cs_args) == 48);

// ---------------------------------------------------------------------------------------------
// WAIT_CS
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 HL_WAIT_CS_FLAGS_INTERRUPT = 0x2;
inline constexpr __u32 HL_WAIT_CS_FLAGS_MULTI_CS = 0x4;
inline constexpr __u32 HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ = 0x10;
inline constexpr __u32 HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT = 0x20;

struct hl_wait_cs_in {
  union {
    struct {
      __u64 seq;
      __u64 timeout_us;
    };
    struct {
      union {
        __u64 addr;
        __u64 cq_counters_handle;
      };
      __u64 target;
    };
  };
  __u32 ctx_id;
  __u32 flags;
  union {
    struct {
      __u8 seq_arr_len;
      __u8 pad[7];
    };
    __u64 interrupt_timeout_us;
  };
  __u64 cq_counters_offset;
  __u64 timestamp_handle;
  __u64 timestamp_offset;
};
static_assert(sizeof(hl_wait_cs_in) == 56);
static_assert(offsetof(hl_wait_cs_in, flags) == 20 && offsetof(hl_wait_cs_in, cq_counters_offset) == 32);

inline constexpr __u32 HL_WAIT_CS_STATUS_COMPLETED = 0;
inline constexpr __u32 HL_WAIT_CS_STATUS_BUSY = 1;
inline constexpr __u32 HL_WAIT_CS_STATUS_TIMEDOUT = 2;
inline constexpr __u32 HL_WAIT_CS_STATUS_ABORTED = 3;
// "Gone" is an out flag in the current ABI: status COMPLETED with this flag set means the CS's
// record has already been released (too old); the CS did complete.
inline constexpr __u32 HL_WAIT_CS_STATUS_FLAG_GONE = 0x1;
inline constexpr __u32 HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD = 0x2;

struct hl_wait_cs_out {
  __u32 status;
  __u32 flags;
  __s64 timestamp_nsec;
  __u32 cs_completion_map;
  __u32 pad;
};
static_assert(sizeof(hl_wait_cs_out) == 24);

union hl_wait_cs_args {
  hl_wait_cs_in in;
  hl_wait_cs_out out;
};
static_assert(sizeof(hl_wait_cs_args) == 56);

// ---------------------------------------------------------------------------------------------
// MEMORY
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 HL_MEM_OP_ALLOC = 0;
inline constexpr __u32 HL_MEM_OP_FREE = 1;
inline constexpr __u32 HL_MEM_OP_MAP = 2;
inline constexpr __u32 HL_MEM_OP_UNMAP = 3;
inline constexpr __u32 HL_MEM_OP_MAP_BLOCK = 4;
inline constexpr __u32 HL_MEM_OP_EXPORT_DMABUF_FD = 5;
inline constexpr __u32 HL_MEM_OP_TS_ALLOC = 6;

inline constexpr __u32 HL_MEM_CONTIGUOUS = 0x1;
inline constexpr __u32 HL_MEM_SHARED = 0x2;
inline constexpr __u32 HL_MEM_USERPTR = 0x4;
inline constexpr __u32 HL_MEM_FORCE_HINT = 0x8;
inline constexpr __u32 HL_MEM_PREFETCH = 0x40;

struct hl_mem_in {
  union {
    struct {
      __u64 mem_size;
      __u64 page_size;
    } alloc;
    struct {
      __u64 handle;
    } free;
    struct {
      __u64 hint_addr;
      __u64 handle;
    } map_device;
    struct {
      __u64 host_virt_addr;
      __u64 hint_addr;
      __u64 mem_size;
    } map_host;
    struct {
      __u64 block_addr;
    } map_block;
    struct {
      __u64 device_virt_addr;
    } unmap;
    struct {
      __u64 addr;
      __u64 mem_size;
      __u64 offset;
    } export_dmabuf_fd;
  };
  __u32 op;
  __u32 flags;
  __u32 ctx_id;
  __u32 num_of_elements;
};
static_assert(sizeof(hl_mem_in) == 40);

struct hl_mem_out {
  union {
    __u64 device_virt_addr;
    __u64 handle;
    struct {
      __u64 block_handle;
      __u32 block_size;
      __u32 pad;
    };
    __s32 fd;
  };
};
static_assert(sizeof(hl_mem_out) == 16);

union hl_mem_args {
  hl_mem_in in;
  hl_mem_out out;
};
static_assert(sizeof(hl_mem_args) == 40);

// ---------------------------------------------------------------------------------------------
// Request numbers: DRM accel (DRM_IOWR(DRM_COMMAND_BASE + nr, type)) and legacy misc device
// (_IOWR('H', nr + 1, type); the legacy numbering started at 0x01).
// ---------------------------------------------------------------------------------------------

inline constexpr unsigned long DRM_IOCTL_HL_INFO = iowr(DRM_IOCTL_BASE, DRM_COMMAND_BASE + HL_IOCTL_INFO_NR, sizeof(hl_info_args));
inline constexpr unsigned long DRM_IOCTL_HL_CB = iowr(DRM_IOCTL_BASE, DRM_COMMAND_BASE + HL_IOCTL_CB_NR, sizeof(hl_cb_args));
inline constexpr unsigned long DRM_IOCTL_HL_CS = iowr(DRM_IOCTL_BASE, DRM_COMMAND_BASE + HL_IOCTL_CS_NR, sizeof(hl_cs_args));
inline constexpr unsigned long DRM_IOCTL_HL_WAIT_CS = iowr(DRM_IOCTL_BASE, DRM_COMMAND_BASE + HL_IOCTL_WAIT_CS_NR, sizeof(hl_wait_cs_args));
inline constexpr unsigned long DRM_IOCTL_HL_MEMORY = iowr(DRM_IOCTL_BASE, DRM_COMMAND_BASE + HL_IOCTL_MEMORY_NR, sizeof(hl_mem_args));

inline constexpr unsigned long HL_IOCTL_INFO = iowr('H', 0x01, sizeof(hl_info_args));
inline constexpr unsigned long HL_IOCTL_CB = iowr('H', 0x02, sizeof(hl_cb_args));
inline constexpr unsigned long HL_IOCTL_CS = iowr('H', 0x03, sizeof(hl_cs_args));
inline constexpr unsigned long HL_IOCTL_WAIT_CS = iowr('H', 0x04, sizeof(hl_wait_cs_args));
inline constexpr unsigned long HL_IOCTL_MEMORY = iowr('H', 0x05, sizeof(hl_mem_args));

static_assert(DRM_IOCTL_HL_INFO == 0xC0186440ul);
static_assert(DRM_IOCTL_HL_CS == 0xC0306442ul);
static_assert(HL_IOCTL_INFO == 0xC0184801ul);

// ---------------------------------------------------------------------------------------------
// Gaudi 1 queue ids (enum gaudi_queue_id): the regs::QueueId values.
// ---------------------------------------------------------------------------------------------

inline constexpr __u32 queue_index(regs::QueueId q) { return static_cast<__u32>(q); }
inline constexpr __u32 GAUDI_QUEUE_ID_DMA_0_0 = queue_index(regs::QueueId::DMA_0_0);
inline constexpr __u32 GAUDI_QUEUE_ID_DMA_1_0 = queue_index(regs::QueueId::DMA_1_0);
inline constexpr __u32 GAUDI_QUEUE_ID_CPU_PQ = queue_index(regs::QueueId::CPU_PQ);
inline constexpr __u32 GAUDI_QUEUE_ID_DMA_2_0 = queue_index(regs::QueueId::DMA_2_0);
inline constexpr __u32 GAUDI_QUEUE_ID_MME_0_0 = queue_index(regs::QueueId::MME_0_0);
inline constexpr __u32 GAUDI_QUEUE_ID_TPC_0_0 = queue_index(regs::QueueId::TPC_0_0);
inline constexpr __u32 GAUDI_QUEUE_ID_NIC_0_0 = queue_index(regs::QueueId::NIC_0_0);
inline constexpr __u32 GAUDI_QUEUE_ID_SIZE = regs::kNumGaudi1Queues;   // hpusim's extension follows (arch/regs)
static_assert(GAUDI_QUEUE_ID_SIZE == 113 && GAUDI_QUEUE_ID_TPC_0_0 == 41);

// PCI ids.
inline constexpr __u32 PCI_VENDOR_ID_HABANALABS = 0x1da3;
inline constexpr __u32 PCI_IDS_GAUDI = 0x1000;
inline constexpr __u32 PCI_IDS_GAUDI2 = 0x1020;
inline constexpr __u32 PCI_IDS_GAUDI3 = 0x1060;

}  // namespace hpusim::uapi
