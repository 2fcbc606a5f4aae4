#include "sim/platform/host_services.h"

#include <mutex>

namespace hpusim::platform {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
HostServices* g_services = nullptr;
BootHandler& boot_handler() {
  static BootHandler handler;
  return handler;
}

}  // namespace

HostServices* host_services() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return g_services;
}

void set_host_services(HostServices* services) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  g_services = services;
}

void set_boot_handler(BootHandler handler) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  boot_handler() = std::move(handler);
}

std::string boot(const BootRequest& request) {
  BootHandler handler;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    if (g_services != nullptr) return g_services->accepts(request);
    handler = boot_handler();
  }
  if (!handler) {
    return "this program has no hpusim platform (link hpusim_platform_boot, or build a platform::Platform first)";
  }
  return handler(request);
}

}  // namespace hpusim::platform
