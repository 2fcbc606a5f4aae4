// What a driver has of its card, and nothing more: the card's BARs (32-bit MMIO and posted block
// writes), the MSIs it raises, the host memory the card reaches by DMA (the driver's coherent
// buffers and the user pages it pins), the card's reset line, and the host clock the driver runs
// on. The platform (sim/platform) implements it for a simulated card; the driver never sees a
// SystemC module. Pure C++.
#pragma once

#include <cstdint>
#include <optional>

namespace hpusim::driver {

// Driver work whose cost the host model sets (the preset's host table).
enum class DriverWork {
  kIoctl,               // ioctl_ns: entering and leaving an ioctl
  kCsSubmit,            // cs_submit_ns: scheduling a CS
  kCbParsePerPacket,    // cb_parse_per_packet_ns: parsing a user CB, per packet
  kIrqHandler,          // irq_handler_ns: handling an interrupt
};

class DeviceLink {
 public:
  virtual ~DeviceLink() = default;

  // MMIO on the card's BARs (device addresses). A read blocks until its data returns. Both throw
  // std::runtime_error when the card answers with an error.
  virtual void mmio_write32(uint64_t address, uint32_t value) = 0;
  virtual uint32_t mmio_read32(uint64_t address) = 0;
  // A block of posted writes (memcpy_toio); the data is copied before the call returns.
  virtual void mmio_write_block(uint64_t address, const void* data, uint64_t bytes) = 0;

  // Waits until an MSI reaches the host or `timeout_ps` of host time passes; the vector, if any.
  // `arrived_ps` (may be null) gets when the MSI reached the host, on the device's clock.
  virtual std::optional<uint32_t> wait_for_interrupt(uint64_t timeout_ps, uint64_t* arrived_ps = nullptr) = 0;
  // Waits until an MSI is there to be taken or `timeout_ps` passes, taking nothing: every thread
  // waiting wakes (then one of them takes it with wait_for_interrupt(0) and handles it).
  virtual bool await_interrupt(uint64_t timeout_ps) = 0;
  // The driver's lock (BasicLockable through DriverLock): host threads get it in host-time order,
  // whatever the OS scheduling, and a thread waiting for it does not hold the device back.
  // Recursive for the thread holding it.
  virtual void lock_driver() = 0;
  virtual void unlock_driver() = 0;
  // Lets the card catch up with host time (a busy-poll on host memory sees what it wrote).
  virtual void sync_device() = 0;

  // Host memory by bus address, as the card sees it through the root port. The box has one host
  // memory; each card's driver gets its own buffers in it.
  virtual void host_write(uint64_t bus_address, const void* data, uint64_t bytes) = 0;
  virtual void host_read(uint64_t bus_address, void* data, uint64_t bytes) = 0;
  virtual void host_fill(uint64_t bus_address, uint8_t value, uint64_t bytes) = 0;
  // The device address at which the card reaches host bus address 0 (its outbound PCIe window).
  virtual uint64_t host_window_base() = 0;
  // dma_alloc_coherent: `bytes` of zeroed host memory for the driver's own use (queues, CBs),
  // aligned to `alignment` (a power of two); its bus address, or nullopt when none is left.
  virtual std::optional<uint64_t> dma_alloc_coherent(uint64_t bytes, uint64_t alignment) = 0;
  virtual void dma_free_coherent(uint64_t bus_address) = 0;
  // Pinning user pages: [memory, +bytes) (page aligned) gets a bus address, which the card reaches
  // as that process memory until unpinned. Throws std::invalid_argument for a range the host
  // memory refuses and std::bad_alloc when no bus addresses are left.
  virtual uint64_t pin_user_pages(uint8_t* memory, uint64_t bytes) = 0;
  virtual void unpin_user_pages(uint64_t bus_address) = 0;

  // The card's reset line (a hard reset).
  virtual void reset_card() = 0;

  // The host clock (ps) and host work charged to it: a span of time the driver spends (polling),
  // and the modeled cost of the driver's own work.
  virtual uint64_t host_now_ps() = 0;
  virtual void charge_host_ns(uint64_t ns) = 0;
  virtual void charge(DriverWork work, uint64_t count = 1) = 0;
};

// The driver's lock as a BasicLockable (std::lock_guard, std::unique_lock).
class DriverLock {
 public:
  explicit DriverLock(DeviceLink& link) : link_(link) {}
  void lock() { link_.lock_driver(); }
  void unlock() { link_.unlock_driver(); }

 private:
  DeviceLink& link_;
};

}  // namespace hpusim::driver
