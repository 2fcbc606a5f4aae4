#include "synapse/hlthunk/hlthunk.h"

#include "driver/device_file.h"

namespace hpusim::hlthunk {

using namespace uapi;
using driver::hl_ioctl;

int cb_create(int fd, uint32_t size, uint64_t* handle) {
  hl_cb_args args{};
  args.in.op = HL_CB_OP_CREATE;
  args.in.cb_size = size;
  const int rc = hl_ioctl(fd, DRM_IOCTL_HL_CB, &args);
  if (rc == 0 && handle != nullptr) *handle = args.out.cb_handle;
  return rc;
}

int cb_destroy(int fd, uint64_t handle) {
  hl_cb_args args{};
  args.in.op = HL_CB_OP_DESTROY;
  args.in.cb_handle = handle;
  return hl_ioctl(fd, DRM_IOCTL_HL_CB, &args);
}

int submit(int fd, const std::vector<hl_cs_chunk>& execute, uint64_t* seq, uint32_t flags,
           const std::vector<hl_cs_chunk>& restore) {
  hl_cs_args args{};
  args.in.chunks_execute = reinterpret_cast<uintptr_t>(execute.data());
  args.in.num_chunks_execute = static_cast<uint32_t>(execute.size());
  args.in.chunks_restore = reinterpret_cast<uintptr_t>(restore.data());
  args.in.num_chunks_restore = static_cast<uint32_t>(restore.size());
  args.in.cs_flags = flags;
  const int rc = hl_ioctl(fd, DRM_IOCTL_HL_CS, &args);
  if (rc == 0 && seq != nullptr) *seq = args.out.seq;
  return rc;
}

int wait(int fd, uint64_t seq, uint64_t timeout_us, uint32_t* status, uint32_t* flags, uint64_t* timestamp_ns) {
  hl_wait_cs_args args{};
  args.in.seq = seq;
  args.in.timeout_us = timeout_us;
  const int rc = hl_ioctl(fd, DRM_IOCTL_HL_WAIT_CS, &args);
  if (status != nullptr) *status = args.out.status;
  if (flags != nullptr) *flags = args.out.flags;
  if (timestamp_ns != nullptr) {
    const bool valid = rc == 0 && (args.out.flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD) != 0;
    *timestamp_ns = valid ? static_cast<uint64_t>(args.out.timestamp_nsec) : 0;
  }
  return rc;
}

int host_memory_map(int fd, const void* address, uint64_t bytes, uint64_t* device_va, uint64_t hint,
                    uint32_t flags) {
  hl_mem_args args{};
  args.in.op = HL_MEM_OP_MAP;
  args.in.flags = flags | HL_MEM_USERPTR;
  args.in.map_host.host_virt_addr = reinterpret_cast<uintptr_t>(address);
  args.in.map_host.mem_size = bytes;
  args.in.map_host.hint_addr = hint;
  const int rc = hl_ioctl(fd, DRM_IOCTL_HL_MEMORY, &args);
  if (rc == 0 && device_va != nullptr) *device_va = args.out.device_virt_addr;
  return rc;
}

int memory_unmap(int fd, uint64_t device_va) {
  hl_mem_args args{};
  args.in.op = HL_MEM_OP_UNMAP;
  args.in.unmap.device_virt_addr = device_va;
  return hl_ioctl(fd, DRM_IOCTL_HL_MEMORY, &args);
}

namespace {
template <class Info>
int info(int fd, __u32 op, Info* out) {
  hl_info_args args{};
  args.op = op;
  args.return_pointer = reinterpret_cast<uintptr_t>(out);
  args.return_size = sizeof *out;
  return hl_ioctl(fd, DRM_IOCTL_HL_INFO, &args);
}
}  // namespace

int device_busy(int fd, hl_info_hpusim_device_busy* busy) { return info(fd, HL_INFO_HPUSIM_DEVICE_BUSY, busy); }

int hw_ip_info(int fd, hl_info_hw_ip_info* hw) { return info(fd, HL_INFO_HW_IP_INFO, hw); }

}  // namespace hpusim::hlthunk
