// The device file: the only way user space (Synapse, tools, tests) reaches a driver. hl_open gives a
// file descriptor for "/dev/hl<N>" (or "/dev/accel/accel<N>"); hl_ioctl, hl_mmap, hl_munmap and
// hl_close act on it. Every call returns 0 (hl_open: the descriptor) or a negative errno, as the
// kernel's file operations do. A driver registers each device it probes under its minor number.
// Pure C++ (library hpusim_device_file): a program that only uses the device file links no
// simulator.
#pragma once

#include <cstdint>
#include <string>

namespace hpusim::driver {

// The file operations of one device (HlDevice implements them).
class DeviceFileOps {
 public:
  virtual ~DeviceFileOps() = default;
  virtual int open() = 0;    // -EBUSY while another descriptor holds the compute context
  virtual int close() = 0;
  virtual int ioctl(unsigned long request, void* arg) = 0;
  // mmap of the object `offset` names (a CB handle); `length` as the object requires.
  virtual int mmap(uint64_t offset, uint64_t length, void** address) = 0;
  virtual int munmap(void* address, uint64_t length) = 0;
};

// Makes "/dev/hl<minor>" reach `device` (-EEXIST if the minor is taken, -EINVAL for nullptr).
int register_device_file(unsigned minor, DeviceFileOps* device);
// Removes it; descriptors still open on it get -ENODEV from then on.
void unregister_device_file(unsigned minor);

// The minor number of "/dev/hl<N>" or "/dev/accel/accel<N>", or -ENOENT for another path.
int device_file_minor(const std::string& path);

int hl_open(const char* path);
int hl_close(int fd);
int hl_ioctl(int fd, unsigned long request, void* arg);
int hl_mmap(int fd, uint64_t length, uint64_t offset, void** address);
// Like munmap(2), it needs no descriptor: a mapping outlives the descriptor it was made through.
int hl_munmap(void* address, uint64_t length);

}  // namespace hpusim::driver
