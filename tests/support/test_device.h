// A card on a platform as the driver tests reach it: the device file for everything user space
// does (open, ioctl, mmap, and the hl-thunk helpers over them), and the driver's debug view (its
// log and counters, what debugfs shows a kernel developer) for what the tests check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/device.h"
#include "driver/device_file.h"
#include "sim/platform/platform.h"
#include "synapse/hlthunk/hlthunk.h"

namespace hpusim::testing {

class TestDevice {
 public:
  explicit TestDevice(const platform::PlatformOptions& options) : platform_(options) {}
  ~TestDevice() {
    if (fd_ >= 0) driver::hl_close(fd_);
  }
  TestDevice(const TestDevice&) = delete;
  TestDevice& operator=(const TestDevice&) = delete;

  // The device file. open(): 0, or the negative errno hl_open returned (-EBUSY while open).
  int open() {
    const int fd = driver::hl_open(platform::Platform::device_path(0).c_str());
    if (fd < 0) return fd;
    fd_ = fd;
    return 0;
  }
  int close() {
    const int rc = driver::hl_close(fd_);
    if (rc != -EBADF) fd_ = -1;
    return rc;
  }
  int fd() const { return fd_; }
  int ioctl(unsigned long request, void* arg) { return driver::hl_ioctl(fd_, request, arg); }
  int info(uapi::hl_info_args& args) { return ioctl(uapi::DRM_IOCTL_HL_INFO, &args); }
  int cb(uapi::hl_cb_args& args) { return ioctl(uapi::DRM_IOCTL_HL_CB, &args); }
  int cs(uapi::hl_cs_args& args) { return ioctl(uapi::DRM_IOCTL_HL_CS, &args); }
  int wait_cs(uapi::hl_wait_cs_args& args) { return ioctl(uapi::DRM_IOCTL_HL_WAIT_CS, &args); }
  int memory(uapi::hl_mem_args& args) { return ioctl(uapi::DRM_IOCTL_HL_MEMORY, &args); }
  int mmap_cb(uint64_t handle, uint64_t length, void** address) { return driver::hl_mmap(fd_, length, handle, address); }
  int munmap_cb(void* address, uint64_t length) { return driver::hl_munmap(address, length); }

  // hl-thunk.
  int cb_create(uint32_t size, uint64_t* handle) { return hlthunk::cb_create(fd_, size, handle); }
  int cb_destroy(uint64_t handle) { return hlthunk::cb_destroy(fd_, handle); }
  int submit(const std::vector<uapi::hl_cs_chunk>& execute, uint64_t* seq, uint32_t flags = 0,
             const std::vector<uapi::hl_cs_chunk>& restore = {}) {
    return hlthunk::submit(fd_, execute, seq, flags, restore);
  }
  int wait(uint64_t seq, uint64_t timeout_us, uint32_t* status, uint32_t* flags = nullptr) {
    return hlthunk::wait(fd_, seq, timeout_us, status, flags);
  }
  int map_host(const void* address, uint64_t bytes, uint64_t* device_va, uint64_t hint = 0, uint32_t flags = 0) {
    return hlthunk::host_memory_map(fd_, address, bytes, device_va, hint, flags);
  }
  int unmap_host(uint64_t device_va) { return hlthunk::memory_unmap(fd_, device_va); }

  // The driver's debug view and the platform.
  driver::HlDevice& driver() { return platform_.driver(); }
  const driver::HlDevice& driver() const { return const_cast<platform::Platform&>(platform_).driver(); }
  platform::Platform& platform() { return platform_; }
  cosim::CoSimulation& cosim() { return platform_.cosim(); }
  const preset::Card& preset() const { return platform_.preset(); }
  const std::vector<std::string>& log() const { return driver().log(); }
  uint32_t qman_error_word(regs::QmanId qman) { return driver().qman_error_word(qman); }
  bool qman_error(regs::QmanId qman) { return driver().qman_error(qman); }
  bool wait_qman_error(regs::QmanId qman, uint64_t timeout_us) { return driver().wait_qman_error(qman, timeout_us); }
  uint64_t eq_events() const { return driver().eq_events(); }
  uint64_t page_faults() const { return driver().page_faults(); }
  uint64_t heartbeats() const { return driver().heartbeats(); }
  uint64_t cpu_messages() const { return driver().cpu_messages(); }
  uint64_t razwi_events() const { return driver().razwi_events(); }
  uint64_t sram_base() const { return driver().sram_base(); }
  uint64_t sram_user_base() const { return driver().sram_user_base(); }
  uint64_t dram_user_base() const { return driver().dram_user_base(); }

 private:
  platform::Platform platform_;
  int fd_ = -1;
};

}  // namespace hpusim::testing
