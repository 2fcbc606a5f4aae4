#include "driver/device_file.h"

#include <cerrno>
#include <map>
#include <mutex>

namespace hpusim::driver {
namespace {

struct Files {
  std::mutex mutex;
  std::map<unsigned, DeviceFileOps*> devices;   // by minor
  std::map<int, unsigned> descriptors;          // fd -> minor
  std::map<void*, std::pair<unsigned, unsigned>> mappings;   // address -> minor, times mapped
  int next_fd = 3;                              // after stdin, stdout, stderr
};

// Immortal: a platform built at static-initialisation time may unregister after other statics die.
Files& files() {
  static Files* f = new Files;
  return *f;
}

// The device behind `fd`, or nullptr with *rc set (-EBADF, -ENODEV).
DeviceFileOps* device_of(int fd, int* rc) {
  Files& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  auto d = f.descriptors.find(fd);
  if (d == f.descriptors.end()) {
    *rc = -EBADF;
    return nullptr;
  }
  auto it = f.devices.find(d->second);
  if (it == f.devices.end()) {
    *rc = -ENODEV;
    return nullptr;
  }
  return it->second;
}

bool parse_minor(const std::string& text, unsigned* minor) {
  if (text.empty() || text.size() > 3) return false;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  *minor = value;
  return true;
}

}  // namespace

int register_device_file(unsigned minor, DeviceFileOps* device) {
  if (device == nullptr) return -EINVAL;
  Files& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.devices.emplace(minor, device).second ? 0 : -EEXIST;
}

void unregister_device_file(unsigned minor) {
  Files& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.devices.erase(minor);
}

int device_file_minor(const std::string& path) {
  unsigned minor = 0;
  for (const char* prefix : {"/dev/hl", "/dev/accel/accel"}) {
    const std::string p(prefix);
    if (path.compare(0, p.size(), p) == 0 && parse_minor(path.substr(p.size()), &minor)) {
      return static_cast<int>(minor);
    }
  }
  return -ENOENT;
}

int hl_open(const char* path) {
  if (path == nullptr) return -EFAULT;
  const int minor = device_file_minor(path);
  if (minor < 0) return minor;
  DeviceFileOps* device = nullptr;
  {
    Files& f = files();
    std::lock_guard<std::mutex> lock(f.mutex);
    auto it = f.devices.find(static_cast<unsigned>(minor));
    if (it == f.devices.end()) return -ENOENT;
    device = it->second;
  }
  if (const int rc = device->open(); rc != 0) return rc;
  Files& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  const int fd = f.next_fd++;
  f.descriptors[fd] = static_cast<unsigned>(minor);
  return fd;
}

int hl_close(int fd) {
  int rc = 0;
  DeviceFileOps* device = device_of(fd, &rc);
  if (device != nullptr) rc = device->close();
  if (rc != -EBADF) {
    Files& f = files();
    std::lock_guard<std::mutex> lock(f.mutex);
    f.descriptors.erase(fd);
  }
  return rc == -ENODEV ? 0 : rc;
}

int hl_ioctl(int fd, unsigned long request, void* arg) {
  int rc = 0;
  DeviceFileOps* device = device_of(fd, &rc);
  return device != nullptr ? device->ioctl(request, arg) : rc;
}

int hl_mmap(int fd, uint64_t length, uint64_t offset, void** address) {
  int rc = 0;
  DeviceFileOps* device = device_of(fd, &rc);
  if (device == nullptr) return rc;
  rc = device->mmap(offset, length, address);
  if (rc == 0) {
    Files& f = files();
    std::lock_guard<std::mutex> lock(f.mutex);
    auto& mapping = f.mappings[*address];
    mapping.first = f.descriptors.at(fd);
    ++mapping.second;
  }
  return rc;
}

int hl_munmap(void* address, uint64_t length) {
  DeviceFileOps* device = nullptr;
  {
    Files& f = files();
    std::lock_guard<std::mutex> lock(f.mutex);
    auto m = f.mappings.find(address);
    if (m == f.mappings.end()) return -EINVAL;
    auto it = f.devices.find(m->second.first);
    if (it == f.devices.end()) return -ENODEV;
    device = it->second;
  }
  const int rc = device->munmap(address, length);
  if (rc == 0) {
    Files& f = files();
    std::lock_guard<std::mutex> lock(f.mutex);
    auto m = f.mappings.find(address);
    if (m != f.mappings.end() && --m->second.second == 0) f.mappings.erase(m);
  }
  return rc;
}

}  // namespace hpusim::driver
