#include "bridge/core/hpu_device.h"

#include <ATen/detail/HPUHooksInterface.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "bridge/core/card.h"
#include "bridge/core/generator.h"

namespace hpusim::bridge {
namespace {

constexpr c10::DeviceType kHpu = c10::DeviceType::HPU;

// Device memory from the card, one Synapse allocation per storage (no caching yet: what torch
// frees goes back to the card at once).
class HpuAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    const c10::Device device(kHpu, 0);
    if (bytes == 0) return {nullptr, nullptr, &release, device};
    uint64_t address = 0;
    try {
      address = Card::get().allocate(bytes);
    } catch (const DeviceOutOfMemory& e) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      sizes_[address] = bytes;
      stats_.allocated_bytes += bytes;
      stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
      ++stats_.allocations;
      ++stats_.total_allocations;
      ++stats_.live_allocations;
      stats_.largest_allocation = std::max<uint64_t>(stats_.largest_allocation, bytes);
    }
    void* pointer = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
    return {pointer, pointer, &release, device};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* destination, const void* source, std::size_t bytes) const override {
    Card::get().on_device(reinterpret_cast<uintptr_t>(source), reinterpret_cast<uintptr_t>(destination), bytes);
  }

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex) override {
    const MemoryStats s = stats();
    c10::CachingDeviceAllocator::DeviceStats out;
    auto& all = out.allocated_bytes[static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE)];
    all.current = static_cast<int64_t>(s.allocated_bytes);
    all.peak = static_cast<int64_t>(s.peak_allocated_bytes);
    all.allocated = static_cast<int64_t>(s.allocations);
    all.freed = static_cast<int64_t>(s.frees);
    return out;
  }
  void resetAccumulatedStats(c10::DeviceIndex) override { reset_accumulated(); }
  void resetPeakStats(c10::DeviceIndex) override { reset_peak(); }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex) override {
    const auto [free, total] = Card::get().memory_info();
    return {static_cast<size_t>(free), static_cast<size_t>(total)};
  }

  MemoryStats stats() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    const std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }
  void reset_accumulated() {
    const std::lock_guard<std::mutex> lock(mutex_);
    stats_.allocations = stats_.frees = 0;
  }

 private:
  static void release(void* pointer);

  std::mutex mutex_;
  std::unordered_map<uint64_t, uint64_t> sizes_;   // live allocations: address -> bytes
  MemoryStats stats_;
};

HpuAllocator g_allocator;

void HpuAllocator::release(void* pointer) {
  if (pointer == nullptr) return;
  const uint64_t address = reinterpret_cast<uintptr_t>(pointer);
  {
    const std::lock_guard<std::mutex> lock(g_allocator.mutex_);
    auto found = g_allocator.sizes_.find(address);
    if (found == g_allocator.sizes_.end()) return;
    g_allocator.stats_.allocated_bytes -= found->second;
    ++g_allocator.stats_.frees;
    ++g_allocator.stats_.total_frees;
    --g_allocator.stats_.live_allocations;
    g_allocator.sizes_.erase(found);
  }
  try {
    Card::get().release(address);
  } catch (const std::exception&) {
    // A deleter must not throw (it runs in destructors); the card is gone or refuses: nothing to free.
  }
}

// One device (index 0), one stream (the default): what torch's device guard asks of a backend.
class HpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kHpu; }
  c10::Device exchangeDevice(c10::Device device) const override {
    check(device);
    return c10::Device(kHpu, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kHpu, 0); }
  void setDevice(c10::Device device) const override { check(device); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, stream.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return Card::count() > 0 ? 1 : 0; }

 private:
  static void check(c10::Device device) {
    TORCH_CHECK(device.type() == kHpu, "expected an HPU device, got ", device);
    TORCH_CHECK(!device.has_index() || device.index() == 0, "hpu:", static_cast<int>(device.index()),
                " does not exist: the bridge drives card 0 of the box");
  }
};

// Pinned host memory (tensor.pin_memory(), pin_memory=True): synHostMalloc's page-aligned buffers,
// mapped for the card's DMA, so copies from them need no staging copy.
class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    if (bytes == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    void* buffer = nullptr;
    const synStatus status = synHostMalloc(Card::get().id(), bytes, 0, &buffer);
    TORCH_CHECK(status == synSuccess && buffer != nullptr, "pinned host memory: synHostMalloc of ", bytes,
                " bytes failed (synStatus ", static_cast<int>(status), "): ", hpusim_lastErrorMessage());
    {
      const std::lock_guard<std::mutex> lock(mutex());
      buffers()[reinterpret_cast<uintptr_t>(buffer)] = bytes;
    }
    return {buffer, buffer, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  static bool holds(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    const std::lock_guard<std::mutex> lock(mutex());
    auto it = buffers().upper_bound(address);
    if (it == buffers().begin()) return false;
    --it;
    return address < it->first + it->second;
  }

 private:
  static void release(void* p) {
    if (p == nullptr) return;
    {
      const std::lock_guard<std::mutex> lock(mutex());
      buffers().erase(reinterpret_cast<uintptr_t>(p));
    }
    synHostFree(Card::get().id(), p, 0);   // a deleter does not throw: a released card has freed it
  }
  static std::mutex& mutex() {
    static auto* m = new std::mutex();
    return *m;
  }
  static std::map<uintptr_t, size_t>& buffers() {
    static auto* b = new std::map<uintptr_t, size_t>();
    return *b;
  }
};

PinnedAllocator g_pinned_allocator;

}  // namespace

c10::Allocator* hpu_allocator() { return &g_allocator; }
MemoryStats memory_stats() { return g_allocator.stats(); }
void reset_peak_memory_stats() { g_allocator.reset_peak(); }
void reset_accumulated_memory_stats() { g_allocator.reset_accumulated(); }

// The name is the registry key torch looks up ("HPUHooks").
struct HPUHooks final : public at::HPUHooksInterface {
  explicit HPUHooks(at::HPUHooksArgs) {}
  void init() const override { Card::get(); }
  bool hasHPU() const override { return Card::count() > 0; }
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return hasHPU(); }
  c10::Device getDeviceFromPtr(void*) const override { return c10::Device(kHpu, 0); }
  bool isPinnedPtr(const void* p) const override { return PinnedAllocator::holds(p); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override { return device_index == 0; }
  c10::DeviceIndex deviceCount() const override { return Card::count() > 0 ? 1 : 0; }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    TORCH_CHECK(device == 0, "hpu:", static_cast<int>(device), " does not exist: the bridge drives card 0 of the box");
  }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    setCurrentDevice(device);
    return 0;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    TORCH_CHECK(device <= 0, "hpu:", static_cast<int>(device), " does not exist: the bridge drives card 0 of the box");
    return default_hpu_generator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    TORCH_CHECK(device <= 0, "hpu:", static_cast<int>(device), " does not exist: the bridge drives card 0 of the box");
    return at::make_generator<HpuGenerator>(c10::default_rng_seed_val);
  }
};

}  // namespace hpusim::bridge

namespace at {
using HPUHooks = hpusim::bridge::HPUHooks;   // the registry key is the class's spelling: "HPUHooks"
REGISTER_HPU_HOOKS(HPUHooks);
}
C10_REGISTER_GUARD_IMPL(HPU, hpusim::bridge::HpuGuardImpl);
REGISTER_ALLOCATOR(c10::DeviceType::HPU, &hpusim::bridge::g_allocator);
