#include "sim/platform/card_link.h"

#include <algorithm>
#include <new>
#include <stdexcept>

#include "hw/card/card.h"
#include "hw/pcie/host_memory.h"

namespace hpusim::platform {

CardLink::CardLink(cosim::CoSimulation& cosim, hw::Card& card, cosim::HostPort& port, hw::HostMemory& host_memory,
                   const CardLinkConfig& config)
    : cosim_(cosim),
      card_(card),
      port_(port),
      host_memory_(host_memory),
      config_(config),
      driver_lock_(cosim.create_lock()),
      bus_addresses_(config.bus_window_start, config.bus_window_end) {}

void CardLink::host_write(uint64_t bus_address, const void* data, uint64_t bytes) {
  cosim_.on_sim_thread([&] { host_memory_.write(bus_address, data, bytes); });
}

void CardLink::host_read(uint64_t bus_address, void* data, uint64_t bytes) {
  cosim_.on_sim_thread([&] { host_memory_.read(bus_address, data, bytes); });
}

void CardLink::host_fill(uint64_t bus_address, uint8_t value, uint64_t bytes) {
  cosim_.on_sim_thread([&] { host_memory_.fill(bus_address, value, bytes); });
}

std::optional<uint64_t> CardLink::dma_alloc_coherent(uint64_t bytes, uint64_t alignment) {
  std::optional<uint64_t> address;
  {
    const std::lock_guard<std::mutex> lock(bus_mutex_);
    address = bus_addresses_.allocate(bytes, std::max<uint64_t>(alignment, hw::HostMemory::kPinAlignment));
  }
  if (address) host_fill(*address, 0, bytes);
  return address;
}

void CardLink::dma_free_coherent(uint64_t bus_address) {
  const std::lock_guard<std::mutex> lock(bus_mutex_);
  bus_addresses_.release(bus_address);
}

uint64_t CardLink::pin_user_pages(uint8_t* memory, uint64_t bytes) {
  std::optional<uint64_t> address;
  {
    const std::lock_guard<std::mutex> lock(bus_mutex_);
    address = bus_addresses_.allocate(bytes, hw::HostMemory::kPinAlignment);
  }
  if (!address) throw std::bad_alloc();
  try {
    cosim_.on_sim_thread([&] { host_memory_.pin(*address, memory, bytes); });
  } catch (...) {
    const std::lock_guard<std::mutex> lock(bus_mutex_);
    bus_addresses_.release(*address);
    throw;
  }
  return *address;
}

void CardLink::unpin_user_pages(uint64_t bus_address) {
  cosim_.on_sim_thread([&] { host_memory_.unpin(bus_address); });
  const std::lock_guard<std::mutex> lock(bus_mutex_);
  bus_addresses_.release(bus_address);
}

void CardLink::reset_card() {
  cosim_.on_sim_thread([&] { card_.reset(); });
}

void CardLink::charge(driver::DriverWork work, uint64_t count) {
  uint64_t ns = 0;
  switch (work) {
    case driver::DriverWork::kIoctl: ns = config_.costs.ioctl_ns(); break;
    case driver::DriverWork::kCsSubmit: ns = config_.costs.cs_submit_ns(); break;
    case driver::DriverWork::kCbParsePerPacket: ns = config_.costs.cb_parse_per_packet_ns(); break;
    case driver::DriverWork::kIrqHandler: ns = config_.costs.irq_handler_ns(); break;
  }
  if (ns * count != 0) cosim_.charge_ns(ns * count);
}

}  // namespace hpusim::platform
