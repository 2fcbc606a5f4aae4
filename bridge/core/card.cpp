#include "bridge/core/card.h"

#include <atomic>
#include <cstdlib>

namespace hpusim::bridge {
namespace {

std::string message_of(const std::string& what, synStatus status) {
  const char* detail = hpusim_lastErrorMessage();
  return what + " failed (synStatus " + std::to_string(static_cast<int>(status)) + ")" +
         (detail != nullptr && *detail != '\0' ? std::string(": ") + detail : std::string());
}

// synInitialize, which is fine to call again.
synStatus initialize() {
  const synStatus status = synInitialize();
  return status == synObjectAlreadyInitialized ? synSuccess : status;
}

}  // namespace

SynapseError::SynapseError(const std::string& what, synStatus status)
    : std::runtime_error(message_of(what, status)), status_(status) {}

void Card::check(synStatus status, const char* what) {
  if (status == synSuccess) return;
  if (closed_) throw CardReleased();
  throw SynapseError(what, status);
}

CardReleased::CardReleased()
    : std::runtime_error("hpu: the card was released (at exit, or by hpusim._C.shutdown()); no more work can reach it") {}

Card::Card() {
  check(initialize(), "synInitialize");
  // HPUSIM_TRACE=<file>: the run's timeline (Chrome JSON for .json, Perfetto otherwise), written
  // when the card is released (at exit).
  if (const char* trace = std::getenv("HPUSIM_TRACE"); trace != nullptr && *trace != '\0')
    check(hpusim_traceToFile(trace), "hpusim_traceToFile (HPUSIM_TRACE)");
  check(synDeviceAcquire(&id_, nullptr), "synDeviceAcquire");
  check(synStreamCreateGeneric(&stream_, id_, 0), "synStreamCreateGeneric");
}

namespace {
std::atomic<bool> g_acquired{false};
}

Card& Card::get() {
  static Card* card = new Card();   // lives as long as the process: tensors may outlive any scope
  g_acquired.store(true, std::memory_order_relaxed);
  return *card;
}

bool Card::acquired() { return g_acquired.load(std::memory_order_relaxed); }

uint32_t Card::count() {
  uint32_t n = 0;
  if (initialize() != synSuccess || synDeviceGetCount(&n) != synSuccess) return 0;
  return n;
}

uint64_t Card::allocate(uint64_t bytes) {
  uint64_t address = 0;
  const synStatus status = synDeviceMalloc(id_, bytes, 0, 0, &address);
  if (status == synOutOfDeviceMemory || status == synFailedToAllocateDeviceMemory) {
    const auto [free, total] = memory_info();
    // The real stack's wording (PT_DEVMEM), then what the card has.
    throw DeviceOutOfMemory("HPU out of memory: PT_DEVMEM Allocation failed for size::" + std::to_string(bytes) + " (" +
                            std::to_string(bytes >> 20) + ")MB; the card has " + std::to_string(free) + " of " +
                            std::to_string(total) + " bytes free");
  }
  check(status, "synDeviceMalloc");
  return address;
}

void Card::release(uint64_t address) { check(synDeviceFree(id_, address, 0), "synDeviceFree"); }

void Card::to_device(const void* host, uint64_t device, uint64_t bytes) {
  if (bytes == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  check(synMemCopyAsync(stream(), reinterpret_cast<uint64_t>(host), bytes, device, HOST_TO_DRAM), "synMemCopyAsync");
  wait_for_stream(FallbackScope::depth() > 0 ? "wait: fallback copy to device" : "wait: copy to device");
}

void Card::to_host(uint64_t device, void* host, uint64_t bytes) {
  if (bytes == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  check(synMemCopyAsync(stream(), device, bytes, reinterpret_cast<uint64_t>(host), DRAM_TO_HOST), "synMemCopyAsync");
  wait_for_stream(FallbackScope::depth() > 0 ? "wait: fallback copy to host" : "wait: copy to host");
}

void Card::on_device(uint64_t source, uint64_t destination, uint64_t bytes) {
  if (bytes == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  check(synMemCopyAsync(stream(), source, bytes, destination, DRAM_TO_DRAM), "synMemCopyAsync");
  wait_for_stream("wait: device copy");
}

void Card::enqueue_on_device(synStreamHandle stream, uint64_t source, uint64_t destination, uint64_t bytes) {
  if (bytes == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  check(synMemCopyAsync(stream, source, bytes, destination, DRAM_TO_DRAM), "synMemCopyAsync");
}

void Card::host_work(hpusim_HostWork work, uint64_t count, const char* what) {
  check(hpusim_hostWork(id_, work, count, what), "hpusim_hostWork");
}

void Card::close() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  synStreamDestroy(stream_);
  check(synDeviceRelease(id_), "synDeviceRelease");
}

namespace {
uint64_t host_ns() {
  uint64_t ns = 0;
  return hpusim_hostTimeNs(&ns) == synSuccess ? ns : 0;
}
}  // namespace

uint64_t Card::host_now_ns() { return host_ns(); }

void Card::wait_for_stream(const char* span) {
  const synStreamHandle s = stream();
  wait([&] { return synStreamSynchronize(s); }, "synStreamSynchronize", span);
}

void Card::trace_span(const char* name, uint64_t start_ns) { check(hpusim_traceSpan(id_, name, start_ns), "hpusim_traceSpan"); }

namespace {
thread_local synStreamHandle t_current_stream = nullptr;
}

synStreamHandle Card::stream() const { return t_current_stream != nullptr ? t_current_stream : stream_; }

void Card::set_current_stream(synStreamHandle stream) { t_current_stream = stream; }

synStreamHandle Card::create_stream() {
  synStreamHandle s = nullptr;
  check(synStreamCreateGeneric(&s, id_, 0), "synStreamCreateGeneric");
  return s;
}

void Card::destroy_stream(synStreamHandle stream) {
  if (stream != stream_ && !closed_) synStreamDestroy(stream);
}

template <class Wait>
void Card::wait(Wait wait_call, const char* what, const char* span) {
  const uint64_t start = host_ns();
  check(wait_call(), what);
  wait_ns_ += host_ns() - start;
  trace_span(span, start);
}

bool Card::done(synStatus query_status, const char* what) {
  if (query_status == synBusy) return false;
  check(query_status, what);
  return true;
}

void Card::synchronize_stream(synStreamHandle stream) {
  wait([&] { return synStreamSynchronize(stream); }, "synStreamSynchronize", "wait: stream synchronize");
}

bool Card::stream_done(synStreamHandle stream) { return done(synStreamQuery(stream), "synStreamQuery"); }

void Card::stream_wait_event(synStreamHandle stream, synEventHandle event) {
  check(synStreamWaitEvent(stream, event, 0), "synStreamWaitEvent");
}

synEventHandle Card::create_event(bool timing) {
  synEventHandle e = nullptr;
  check(synEventCreate(&e, id_, timing ? EVENT_COLLECT_TIME : 0), "synEventCreate");
  return e;
}

void Card::destroy_event(synEventHandle event) {
  if (!closed_) synEventDestroy(event);
}

void Card::record_event(synEventHandle event, synStreamHandle stream) {
  check(synEventRecord(event, stream), "synEventRecord");
}

void Card::synchronize_event(synEventHandle event) {
  wait([&] { return synEventSynchronize(event); }, "synEventSynchronize", "wait: event synchronize");
}

bool Card::event_done(synEventHandle event) { return done(synEventQuery(event), "synEventQuery"); }

double Card::elapsed_ms(synEventHandle start, synEventHandle end) {
  uint64_t ns = 0;
  check(synEventElapsedTime(&ns, start, end), "synEventElapsedTime");
  return static_cast<double>(ns) / 1e6;
}

void Card::synchronize() {
  wait([&] { return synDeviceSynchronize(id_); }, "synDeviceSynchronize", "wait: synchronize");
}

uint64_t Card::device_busy_ns() {
  uint64_t busy = 0;
  check(hpusim_deviceBusyNs(id_, &busy), "hpusim_deviceBusyNs");
  return busy;
}

std::pair<uint64_t, uint64_t> Card::memory_info() {
  uint64_t free = 0, total = 0;
  check(synDeviceGetMemoryInfo(id_, &free, &total), "synDeviceGetMemoryInfo");
  return {free, total};
}

}  // namespace hpusim::bridge
