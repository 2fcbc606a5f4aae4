// hl-thunk: the user-space helpers over the habanalabs device file (as the real libhl-thunk does
// them): command buffers, command submissions and their waits, host memory mappings, INFO. Each
// call is one ioctl on an open descriptor (driver/device_file.h) and returns 0 or a negative errno.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/uapi/uapi.h"

namespace hpusim::hlthunk {

// HL_CB_OP_CREATE / HL_CB_OP_DESTROY.
int cb_create(int fd, uint32_t size, uint64_t* handle);
int cb_destroy(int fd, uint64_t handle);
// HL_IOCTL_CS with the execute (and restore) chunks; *seq is the CS sequence number.
int submit(int fd, const std::vector<uapi::hl_cs_chunk>& execute, uint64_t* seq, uint32_t flags = 0,
           const std::vector<uapi::hl_cs_chunk>& restore = {});
// HL_IOCTL_WAIT_CS: the ioctl's return code; *status gets HL_WAIT_CS_STATUS_*, *flags the out flags,
// *timestamp_ns the completion time when the driver gives one (TIMESTAMP_VLD), else 0.
int wait(int fd, uint64_t seq, uint64_t timeout_us, uint32_t* status, uint32_t* flags = nullptr,
         uint64_t* timestamp_ns = nullptr);
// hlthunk_host_memory_map / hlthunk_memory_unmap: the device VA of `bytes` of user memory.
int host_memory_map(int fd, const void* address, uint64_t bytes, uint64_t* device_va, uint64_t hint = 0,
                    uint32_t flags = 0);
int memory_unmap(int fd, uint64_t device_va);
// HL_INFO_HW_IP_INFO.
int hw_ip_info(int fd, uapi::hl_info_hw_ip_info* info);
// hpusim: the device's busy time with this context's submissions (HL_INFO_HPUSIM_DEVICE_BUSY).
int device_busy(int fd, uapi::hl_info_hpusim_device_busy* busy);

}  // namespace hpusim::hlthunk
