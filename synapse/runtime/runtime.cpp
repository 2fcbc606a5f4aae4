#include "synapse/runtime/runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>

#include "arch/packets/packets.h"
#include "arch/packets/sync_wait.h"
#include "arch/tpc/tpc_launch.h"
#include "arch/uapi/uapi.h"
#include "driver/device_file.h"
#include "sim/platform/host_services.h"
#include "synapse/hlthunk/hlthunk.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::runtime {
namespace {

using namespace uapi;

constexpr uint64_t kPage = 4096;
constexpr uint32_t kMaxDmaChunk = 1u << 30;   // LIN_DMA sizes are 32-bit: copies go in 1 GB pieces

hl_info_hw_ip_info hw_ip_info(int fd) {
  hl_info_hw_ip_info info{};
  if (const int rc = hlthunk::hw_ip_info(fd, &info); rc != 0) {
    throw std::runtime_error("runtime: the device's HW_IP_INFO could not be read (driver returned " + std::to_string(rc) + ")");
  }
  return info;
}

std::string errno_text(int rc) { return "driver returned " + std::to_string(rc); }

// The LIN_DMA packets of one copy, split into pieces the packet can carry.
std::vector<uint8_t> copy_packets(uint64_t source, uint64_t destination, uint64_t bytes, bool fill, uint64_t value) {
  qman::CommandBufferBuilder cb;
  for (uint64_t done = 0; done < bytes;) {
    const uint32_t piece = static_cast<uint32_t>(std::min<uint64_t>(kMaxDmaChunk, bytes - done));
    if (fill) {
      cb.memset(destination + done, value, piece);
    } else {
      cb.lin_dma(source + done, destination + done, piece);
    }
    done += piece;
  }
  return cb.take();
}

}  // namespace

Runtime::Runtime(int fd) : fd_(fd), allocator_(0, 0) {
  const hl_info_hw_ip_info info = hw_ip_info(fd_);
  allocator_ = DeviceAllocator(info.dram_base_address, info.dram_size);
  // The engines the driver reports: TPC 0..n-1 of the enabled mask, every MME master (hpusim's
  // reserved1: bit k = MME 2k) through the queue group it serves.
  target_.tpcs = 0;
  while (target_.tpcs < regs::kMaxTpcEngines && ((info.tpc_enabled_mask_ext >> target_.tpcs) & 1) != 0) ++target_.tpcs;
  target_.mme_queues.clear();
  for (unsigned k = 0; k < regs::kMaxMmeMasters; ++k) {
    if (((info.reserved1 >> k) & 1) == 0) continue;
    target_.mme_queues.push_back(regs::make_queue(regs::QueueKind::Mme, regs::mme_master_group(2 * k), 0));
  }
  // memcpy nodes: the internal DMA channels the driver reports (edma_enabled_mask bit i = DMA 2 + i);
  // a card without any can still run graphs without copies (the compiler refuses a copy).
  target_.dma_queues.clear();
  for (unsigned i = 0; i + regs::kNumPciDmaChannels < regs::kMaxDmaChannels; ++i) {
    if (((info.edma_enabled_mask >> i) & 1) == 0) continue;
    target_.dma_queues.push_back(regs::make_queue(regs::QueueKind::Dma, regs::kNumPciDmaChannels + i, 0));
  }
  if (target_.tpcs == 0 || target_.mme_queues.empty()) {
    throw std::runtime_error("runtime: the device reports no TPC or no MME");
  }
  target_.mme_geometries = std::max<uint32_t>(1, info.reserved7);   // hpusim: MME output geometries
  target_.tpc_vector_bits = info.reserved6;                          // hpusim: TPC vector width
  target_.tpc_prefetch_entries = info.reserved9;                     // hpusim: TPC prefetch buffer
  target_.mme_super_tile_rows = static_cast<uint32_t>(info.reserved3);   // hpusim: MME super-tile rows
  if (!tpc_kernels::KernelLibrary::valid_vector_bits(target_.tpc_vector_bits)) {
    throw std::runtime_error("runtime: the device reports a TPC vector width of " +
                             std::to_string(target_.tpc_vector_bits) + " bits, which the kernel library does not take");
  }
  sram_base_ = info.sram_base_address;
  sram_size_ = info.sram_size;
  target_.sram_bytes = sram_size_;
}

Runtime::~Runtime() {
  std::set<uint64_t> in_flight;
  for (const auto& [seq, copy] : staged_copies_) in_flight.insert(seq);
  if (last_launch_seq_ != 0) in_flight.insert(last_launch_seq_);
  for (uint64_t seq : in_flight) wait(seq);
  for (auto& [capacity, buffer] : idle_staging_) hlthunk::memory_unmap(fd_, buffer->device_va);
}

Result Runtime::device_malloc(uint64_t bytes, uint64_t* address) {
  if (bytes == 0) return Result::error(Status::InvalidArgument, "device malloc of 0 bytes");
  const auto got = allocator_.allocate(bytes);
  if (!got) {
    return Result::error(Status::OutOfDeviceMemory, "device malloc of " + std::to_string(bytes) + " bytes: " +
                                                        std::to_string(allocator_.free_bytes()) +
                                                        " bytes free, no block large enough");
  }
  *address = *got;
  return Result::success();
}

Result Runtime::device_free(uint64_t address) {
  if (!allocator_.free(address)) {
    return Result::error(Status::InvalidArgument, "device free of an address that is not an allocation");
  }
  return Result::success();
}

Result Runtime::external_cb(const uint8_t* bytes, size_t size, uint64_t* handle) {
  if (const int rc = hlthunk::cb_create(fd_, static_cast<uint32_t>(size), handle); rc != 0) {
    return Result::error(Status::FailedToInitializeCb, "command buffer create: " + errno_text(rc));
  }
  void* memory = nullptr;
  const uint64_t length = (size + kPage - 1) / kPage * kPage;
  if (const int rc = driver::hl_mmap(fd_, length, *handle, &memory); rc != 0) {
    return Result::error(Status::FailedToMapCb, "command buffer map: " + errno_text(rc));
  }
  std::copy(bytes, bytes + size, static_cast<uint8_t*>(memory));
  driver::hl_munmap(memory, length);
  return Result::success();
}

// ---------------------------------------------------------------------------------------------
// Ordering between queues on the device: each external queue counts its signals on its own E_N
// sync object; a queue that must wait for another's point arms its own monitor on that sync
// object and fences on it.
// ---------------------------------------------------------------------------------------------

Result Runtime::signal(regs::QueueId queue, Signal* signal, uint64_t* seq) {
  if (Result r = check_copy_queue(queue); !r.ok()) return r;
  QueueSignals& q = signals_[regs::to_index(queue)];
  const uint32_t sob = kSignalSobBase + regs::to_index(queue);
  qman::CommandBufferBuilder cb;
  if (q.count == static_cast<uint16_t>(regs::sm::kSobValMask)) {
    // The 15-bit count would overflow: once the queue's work is done, it starts again from 0 in
    // a new epoch (points of older epochs are past by then).
    if (const uint64_t last = last_on_queue(queue); last != 0) {
      if (Result r = wait(last); !r.ok()) return r;
    }
    qman::append_sob_set(cb, regs::SyncManager::E_N, sob, 0);
    q.count = 0;
    ++q.epoch;
  }
  qman::append_sob_increment(cb, regs::SyncManager::E_N, sob);
  Signal point{queue, sob, static_cast<uint16_t>(q.count + 1), q.epoch};
  uint64_t s = 0;
  if (Result r = submit_copy(cb.take(), queue, &s); !r.ok()) return r;
  ++q.count;
  if (signal) *signal = point;
  if (seq) *seq = s;
  return Result::success();
}

Result Runtime::wait_on_device(regs::QueueId queue, const Signal& signal) {
  if (Result r = check_copy_queue(queue); !r.ok()) return r;
  if (Result r = check_copy_queue(signal.queue); !r.ok()) return r;
  if (signal.queue == queue) return Result::success();   // a queue's work is in order already
  if (signal.epoch != signals_[regs::to_index(signal.queue)].epoch) return Result::success();   // long past
  signals_[regs::to_index(queue)].waits.push_back(signal);
  return Result::success();
}

bool Runtime::has_device_waits(regs::QueueId queue) const {
  const unsigned q = regs::to_index(queue);
  return q < kExternalQueues && !signals_[q].waits.empty();
}

std::vector<uint8_t> Runtime::take_device_waits(regs::QueueId queue) {
  const unsigned q = regs::to_index(queue);
  if (q >= kExternalQueues || signals_[q].waits.empty()) return {};
  qman::CommandBufferBuilder cb;
  for (const Signal& s : signals_[q].waits) {
    if (s.epoch != signals_[regs::to_index(s.queue)].epoch) continue;
    qman::append_sob_wait(cb, queue, regs::SyncManager::E_N, kWaitMonitorBase + q, s.sob, s.value);
  }
  signals_[q].waits.clear();
  return cb.take();
}

uint64_t Runtime::last_on_queue(regs::QueueId queue) const {
  for (auto it = queue_of_.rbegin(); it != queue_of_.rend(); ++it) {
    if (it->second == queue) return it->first;
  }
  return 0;
}

Result Runtime::check_copy_queue(regs::QueueId queue) const {
  const unsigned q = regs::to_index(queue);
  if (q > regs::to_index(regs::QueueId::DMA_1_3)) {
    return Result::error(Status::InvalidArgument, "copies run on the external DMA queues DMA_0_0 .. DMA_1_3, not queue " +
                                                      std::to_string(q));
  }
  return Result::success();
}

Result Runtime::submit_copy(const std::vector<uint8_t>& copy, regs::QueueId queue, uint64_t* seq, StagedCopy staged) {
  // The device waits the queue owes go first, in the same command buffer.
  std::vector<uint8_t> cb = take_device_waits(queue);
  cb.insert(cb.end(), copy.begin(), copy.end());
  uint64_t handle = 0;
  Result r = external_cb(cb.data(), cb.size(), &handle);
  if (!r.ok()) {
    if (staged.buffer) return_staging(std::move(staged.buffer));
    return r;
  }
  hl_cs_chunk chunk{};
  chunk.cb_handle = handle;
  chunk.queue_index = queue_index(queue);
  chunk.cb_size = static_cast<uint32_t>(cb.size());
  uint64_t s = 0;
  const int rc = hlthunk::submit(fd_, {chunk}, &s);
  hlthunk::cb_destroy(fd_, handle);   // the driver keeps its own reference until the job is done
  if (rc != 0) {
    if (staged.buffer) return_staging(std::move(staged.buffer));
    return Result::error(Status::CommandSubmissionFailure, "copy submission: " + errno_text(rc));
  }
  last_seq_ = s;
  queue_of_[s] = queue;
  if (staged.buffer) {
    staged.queue = queue;
    staged_copies_.emplace(s, std::move(staged));
  }
  if (seq) *seq = s;
  return Result::success();
}

// A staging buffer of at least `bytes`: an idle one of the same power-of-two capacity, or a new
// one mapped for the device.
Result Runtime::take_staging(uint64_t bytes, std::unique_ptr<StagingBuffer>* buffer) {
  if (bytes > kMaxStagingBytes) {
    return Result::error(Status::InvalidArgument, "a copy of " + std::to_string(bytes) + " bytes (at most " +
                                                      std::to_string(kMaxStagingBytes) + " through host memory)");
  }
  uint64_t capacity = kMinStagingBytes;
  while (capacity < bytes) capacity *= 2;
  // The one returned last (its translations are the warmest), so a steady stream of copies reuses
  // the same buffers in the same order.
  if (const auto [first, last] = idle_staging_.equal_range(capacity); first != last) {
    const auto it = std::prev(last);
    *buffer = std::move(it->second);
    idle_staging_.erase(it);
    idle_staging_bytes_ -= capacity;
    return Result::success();
  }
  auto fresh = std::make_unique<StagingBuffer>();
  try {
    fresh->bytes.resize(capacity);
  } catch (const std::bad_alloc&) {
    return Result::error(Status::OutOfHostMemory, "staging buffer of " + std::to_string(capacity) + " bytes");
  }
  if (const int rc = hlthunk::host_memory_map(fd_, fresh->bytes.data(), capacity, &fresh->device_va); rc != 0) {
    return Result::error(Status::InvalidArgument, "staging buffer could not be mapped for the device: " + errno_text(rc));
  }
  *buffer = std::move(fresh);
  return Result::success();
}

void Runtime::return_staging(std::unique_ptr<StagingBuffer> buffer) {
  const uint64_t capacity = buffer->bytes.size();
  if (idle_staging_bytes_ + capacity > kKeptStagingBytes) {
    hlthunk::memory_unmap(fd_, buffer->device_va);
    return;
  }
  idle_staging_bytes_ += capacity;
  idle_staging_.emplace(capacity, std::move(buffer));
}

Result Runtime::copy_to_device(const void* source, uint64_t destination, uint64_t bytes, uint64_t* seq, regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0) return Result::error(Status::InvalidArgument, "copy of 0 bytes");
  if (source == nullptr) return Result::error(Status::InvalidArgument, "copy from a NULL host buffer");
  StagedCopy staged;
  if (Result r = take_staging(bytes, &staged.buffer); !r.ok()) return r;
  std::memcpy(staged.buffer->bytes.data(), source, bytes);
  const uint64_t va = staged.buffer->device_va;
  return submit_copy(copy_packets(va, destination, bytes, false, 0), queue, seq, std::move(staged));
}

Result Runtime::copy_to_host(uint64_t source, void* destination, uint64_t bytes, uint64_t* seq, regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0) return Result::error(Status::InvalidArgument, "copy of 0 bytes");
  if (destination == nullptr) return Result::error(Status::InvalidArgument, "copy to a NULL host buffer");
  StagedCopy staged;
  if (Result r = take_staging(bytes, &staged.buffer); !r.ok()) return r;
  staged.copy_back_to = destination;
  staged.bytes = bytes;
  const uint64_t va = staged.buffer->device_va;
  return submit_copy(copy_packets(source, va, bytes, false, 0), queue, seq, std::move(staged));
}

Result Runtime::copy_mapped_to_device(uint64_t host_va, uint64_t destination, uint64_t bytes, uint64_t* seq,
                                      regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0) return Result::error(Status::InvalidArgument, "copy of 0 bytes");
  return submit_copy(copy_packets(host_va, destination, bytes, false, 0), queue, seq);
}

Result Runtime::copy_mapped_to_host(uint64_t source, uint64_t host_va, uint64_t bytes, uint64_t* seq,
                                    regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0) return Result::error(Status::InvalidArgument, "copy of 0 bytes");
  return submit_copy(copy_packets(source, host_va, bytes, false, 0), queue, seq);
}

Result Runtime::copy_on_device(uint64_t source, uint64_t destination, uint64_t bytes, uint64_t* seq, regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0) return Result::error(Status::InvalidArgument, "copy of 0 bytes");
  return submit_copy(copy_packets(source, destination, bytes, false, 0), queue, seq);
}

Result Runtime::memset_device(uint64_t destination, uint32_t value, uint64_t bytes, uint64_t* seq, regs::QueueId queue) {
  if (Result q = check_copy_queue(queue); !q.ok()) return q;
  if (bytes == 0 || bytes % 4 != 0) {
    return Result::error(Status::InvalidArgument, "memset of " + std::to_string(bytes) + " bytes (a non-zero multiple of 4)");
  }
  const uint64_t pattern = (uint64_t{value} << 32) | value;
  return submit_copy(copy_packets(0, destination, bytes, true, pattern), queue, seq);
}

Result Runtime::load(const recipe::Recipe& recipe, std::shared_ptr<LoadedRecipe>* loaded) {
  const std::string problem = recipe::check_recipe(recipe);
  if (!problem.empty()) return Result::error(Status::InvalidArgument, "recipe: " + problem);
  if (recipe.target() != target_.describe()) {
    return Result::error(Status::DeviceTypeMismatch, "recipe was compiled for '" + recipe.target() +
                                                         "', this device is '" + target_.describe() + "'");
  }
  if (recipe.sob_count() > target_.sob_count) {
    return Result::error(Status::AllResourcesTaken, "recipe needs " + std::to_string(recipe.sob_count()) +
                                                        " sync objects, the device gives " +
                                                        std::to_string(target_.sob_count));
  }
  auto out = std::make_shared<LoadedRecipe>();
  out->recipe_ = recipe;
  if (!recipe.program_image().empty()) {
    const HostBytes image(recipe.program_image().begin(), recipe.program_image().end());
    // The kernels ask for an icache prefetch of kIcachePrefetchWindowBytes from their start, so
    // the allocation runs that far past the image (what is read there is never executed).
    Result r = device_malloc(image.size() + tpc::kIcachePrefetchWindowBytes, &out->program_address_);
    if (!r.ok()) return r;
    uint64_t seq = 0;
    r = copy_to_device(image.data(), out->program_address_, image.size(), &seq);
    if (r.ok()) r = wait(seq);
    if (!r.ok()) {
      device_free(out->program_address_);
      return r;
    }
  }
  LoadedRecipe::JobSet first;
  for (const recipe::QueueJob& qj : recipe.jobs()) {
    LoadedRecipe::Job job;
    job.queue = static_cast<regs::QueueId>(qj.queue_id());
    job.external = qj.external();
    job.bytes.assign(qj.command_buffer().begin(), qj.command_buffer().end());
    first.jobs.push_back(std::move(job));
  }
  out->sets_.push_back(std::move(first));
  // Internal command buffers stay mapped for the device while the recipe is loaded.
  for (LoadedRecipe::Job& job : out->sets_[0].jobs) {
    if (job.external) continue;
    if (const int rc = hlthunk::host_memory_map(fd_, job.bytes.data(), job.bytes.size(), &job.device_va); rc != 0) {
      unload(*out);
      return Result::error(Status::FailedToMapCb, "recipe command buffer could not be mapped: " + errno_text(rc));
    }
  }
  *loaded = std::move(out);
  return Result::success();
}

Result Runtime::free_job_set(LoadedRecipe& loaded, LoadedRecipe::JobSet** set) {
  for (LoadedRecipe::JobSet& s : loaded.sets_) {
    if (s.seq == 0 || known_complete(s.seq)) {
      *set = &s;
      return Result::success();
    }
  }
  // Every set is read by a launch in flight: one more, mapped like the first.
  LoadedRecipe::JobSet more;
  for (const LoadedRecipe::Job& job : loaded.sets_[0].jobs) {
    LoadedRecipe::Job copy;
    copy.queue = job.queue;
    copy.external = job.external;
    copy.bytes = job.bytes;
    more.jobs.push_back(std::move(copy));
  }
  for (LoadedRecipe::Job& job : more.jobs) {
    if (job.external) continue;
    if (const int rc = hlthunk::host_memory_map(fd_, job.bytes.data(), job.bytes.size(), &job.device_va); rc != 0) {
      for (LoadedRecipe::Job& mapped : more.jobs) {
        if (mapped.device_va != 0) hlthunk::memory_unmap(fd_, mapped.device_va);
      }
      return Result::error(Status::FailedToMapCb, "recipe command buffer could not be mapped: " + errno_text(rc));
    }
  }
  loaded.sets_.push_back(std::move(more));
  *set = &loaded.sets_.back();
  return Result::success();
}

// Whole sync groups: a monitor's group is patched, its mask is not.
uint32_t Runtime::sync_range_size(uint32_t count) { return (std::max<uint32_t>(count, 1) + 7) / 8 * 8; }

Result Runtime::take_sync_range(uint32_t count, uint32_t* first) {
  const uint32_t size = sync_range_size(count);
  const uint32_t begin = target_.sob_base, end = target_.sob_base + target_.sob_count;
  if (size > end - begin) {
    return Result::error(Status::AllResourcesTaken, "a launch needs " + std::to_string(count) +
                                                        " sync objects, the device gives " +
                                                        std::to_string(end - begin));
  }
  if (next_sync_object_ < begin || next_sync_object_ >= end) next_sync_object_ = begin;
  while (true) {
    while (!launch_ranges_.empty() && known_complete(launch_ranges_.front().seq)) launch_ranges_.pop_front();
    uint32_t start = next_sync_object_;
    if (start + size > end) start = begin;
    const auto busy = std::find_if(launch_ranges_.begin(), launch_ranges_.end(), [&](const SyncRange& r) {
      return !known_complete(r.seq) && r.first < start + size && start < r.first + r.count;
    });
    if (busy == launch_ranges_.end()) {
      *first = start;
      next_sync_object_ = start + size;
      return Result::success();
    }
    if (Result r = wait(busy->seq); !r.ok()) return r;
  }
}

std::optional<Runtime::SyncRange> Runtime::sync_range(uint64_t seq) const {
  for (const SyncRange& r : launch_ranges_) {
    if (r.seq == seq && !known_complete(seq)) return r;
  }
  return std::nullopt;
}

Result Runtime::unload(LoadedRecipe& loaded) {
  if (loaded.released_) return Result::success();
  if (last_launch_seq_ != 0) wait(last_launch_seq_);
  for (LoadedRecipe::JobSet& set : loaded.sets_) {
    for (LoadedRecipe::Job& job : set.jobs) {
      if (job.device_va != 0) hlthunk::memory_unmap(fd_, job.device_va);
      job.device_va = 0;
    }
  }
  if (loaded.program_address_ != 0) device_free(loaded.program_address_);
  loaded.released_ = true;
  return Result::success();
}

Result Runtime::launch(LoadedRecipe& loaded, const std::vector<uint64_t>& persistent, uint64_t workspace,
                       uint64_t* seq) {
  const recipe::Recipe& recipe = loaded.recipe_;
  if (loaded.released_) return Result::error(Status::InvalidArgument, "launch of an unloaded recipe");
  if (persistent.size() != static_cast<size_t>(recipe.persistent_size())) {
    return Result::error(Status::InvalidArgument, "launch gives " + std::to_string(persistent.size()) +
                                                      " persistent tensor addresses, the recipe has " +
                                                      std::to_string(recipe.persistent_size()));
  }
  for (int i = 0; i < recipe.persistent_size(); ++i) {
    const recipe::PersistentTensor& t = recipe.persistent(i);
    if (persistent[i] == 0) {
      return Result::error(Status::InvalidArgument, "launch: tensor '" + t.name() + "' has no address");
    }
    if (!allocator_.owner(persistent[i], std::max<uint64_t>(t.bytes(), 1))) {
      return Result::error(Status::InvalidArgument, "launch: tensor '" + t.name() + "' (" + std::to_string(t.bytes()) +
                                                        " bytes) is not inside a device allocation");
    }
  }
  // Tensors of one section must sit at one base.
  std::map<uint32_t, std::pair<int, uint64_t>> section_base;   // section -> (first tensor, base)
  for (int i = 0; i < recipe.persistent_size(); ++i) {
    const recipe::PersistentTensor& t = recipe.persistent(i);
    if (t.section() == 0) continue;
    const uint64_t base = persistent[i] - t.section_offset();
    const auto [it, inserted] = section_base.emplace(t.section(), std::make_pair(i, base));
    if (!inserted && it->second.second != base) {
      return Result::error(Status::InvalidArgument,
                           "launch: tensors '" + recipe.persistent(it->second.first).name() + "' and '" + t.name() +
                               "' share section " + std::to_string(t.section()) +
                               ", but their addresses do not keep their section offsets");
    }
  }
  if (recipe.workspace_bytes() > 0 && !allocator_.owner(workspace, recipe.workspace_bytes())) {
    return Result::error(Status::InvalidArgument, "launch: the workspace needs " +
                                                      std::to_string(recipe.workspace_bytes()) +
                                                      " bytes of device memory");
  }
  // The launch's own sync objects, and command buffers no launch in flight reads.
  uint32_t first_sob = 0;
  if (Result r = take_sync_range(recipe.sob_count(), &first_sob); !r.ok()) return r;
  LoadedRecipe::JobSet* set = nullptr;
  if (Result r = free_job_set(loaded, &set); !r.ok()) return r;
  const auto prepare_start = std::chrono::steady_clock::now();

  std::vector<hl_cs_chunk> chunks;
  std::vector<uint64_t> handles;
  // Device waits owed by the launch queue: a job of their own ahead of the recipe's first job
  // there, which starts the recipe's engines.
  if (const std::vector<uint8_t> waits = take_device_waits(kLaunchQueue); !waits.empty()) {
    hl_cs_chunk chunk{};
    chunk.queue_index = queue_index(kLaunchQueue);
    chunk.cb_size = static_cast<uint32_t>(waits.size());
    Result r = external_cb(waits.data(), waits.size(), &chunk.cb_handle);
    if (!r.ok()) return r;
    handles.push_back(chunk.cb_handle);
    chunks.push_back(chunk);
  }
  for (int j = 0; j < recipe.jobs_size(); ++j) {
    LoadedRecipe::Job& job = set->jobs[j];
    for (const recipe::Patch& patch : recipe.jobs(j).patches()) {
      uint64_t base = workspace;
      if (patch.section() == recipe::SECTION_PERSISTENT) base = persistent[patch.index()];
      if (patch.section() == recipe::SECTION_PROGRAM) base = loaded.program_address_;
      if (patch.section() == recipe::SECTION_SRAM) base = sram_base_;
      if (patch.section() == recipe::SECTION_SYNC_OBJECTS) base = uint64_t{4} * first_sob;
      if (patch.section() == recipe::SECTION_SYNC_GROUPS) base = first_sob / 8;
      recipe::apply_patch(patch, base, job.bytes.data(), job.bytes.size());
    }
    hl_cs_chunk chunk{};
    chunk.queue_index = queue_index(job.queue);
    chunk.cb_size = static_cast<uint32_t>(job.bytes.size());
    if (job.external) {
      Result r = external_cb(job.bytes.data(), job.bytes.size(), &chunk.cb_handle);
      if (!r.ok()) return r;
      handles.push_back(chunk.cb_handle);
    } else {
      chunk.cb_handle = job.device_va;
    }
    chunks.push_back(chunk);
  }
  launch_prepare_ns_ += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - prepare_start).count());
  uint64_t s = 0;
  int rc = hlthunk::submit(fd_, chunks, &s);
  // A queue or the driver's CS table is full: the oldest launch in flight frees room.
  while (rc == -EAGAIN && !launch_ranges_.empty()) {
    if (Result r = wait(launch_ranges_.front().seq); !r.ok()) break;
    launch_ranges_.pop_front();
    rc = hlthunk::submit(fd_, chunks, &s);
  }
  // The device has the launch once the submission returns (its doorbells rung): the driver's work
  // in the ioctl is host time.
  const uint64_t submitted_ps = host_now_ps();
  for (uint64_t handle : handles) hlthunk::cb_destroy(fd_, handle);
  if (rc != 0) return Result::error(Status::CommandSubmissionFailure, "launch submission: " + errno_text(rc));
  last_seq_ = last_launch_seq_ = s;
  queue_of_[s] = kLaunchQueue;
  submit_ps_[s] = submitted_ps;
  set->seq = s;
  launch_ranges_.push_back({s, first_sob, sync_range_size(recipe.sob_count())});
  ++loaded.launches_;
  if (seq) *seq = s;
  return Result::success();
}

Result Runtime::submit_program(regs::QueueId external_queue, uint32_t sob_count, const ProgramBuilder& build,
                               uint64_t* seq) {
  if (Result r = check_copy_queue(external_queue); !r.ok()) return r;
  uint32_t first_sob = 0;
  if (Result r = take_sync_range(sob_count, &first_sob); !r.ok()) return r;
  std::vector<QueueJob> jobs = build(first_sob);
  std::vector<hl_cs_chunk> chunks;
  std::vector<uint64_t> handles;
  // The internal jobs' command buffers share one mapped buffer (one mapping at most per program).
  constexpr uint64_t kCbAlign = 128;
  const auto external = [&](const QueueJob& job) { return regs::to_index(job.queue) < kExternalQueues; };
  uint64_t internal_bytes = 0;
  for (const QueueJob& job : jobs)
    if (!external(job)) internal_bytes += (job.bytes.size() + kCbAlign - 1) / kCbAlign * kCbAlign;
  std::unique_ptr<StagingBuffer> internal;
  if (internal_bytes > 0) {
    if (Result r = take_staging(internal_bytes, &internal); !r.ok()) return r;
  }
  uint64_t internal_used = 0;
  const auto give_back = [&] {
    for (uint64_t handle : handles) hlthunk::cb_destroy(fd_, handle);
    if (internal) return_staging(std::move(internal));
  };
  bool waits_taken = false;
  for (QueueJob& job : jobs) {
    if (job.bytes.empty()) continue;
    hl_cs_chunk chunk{};
    chunk.queue_index = queue_index(job.queue);
    if (external(job)) {
      if (job.queue == external_queue && !waits_taken) {
        std::vector<uint8_t> waits = take_device_waits(external_queue);
        job.bytes.insert(job.bytes.begin(), waits.begin(), waits.end());
        waits_taken = true;
      }
      if (Result r = external_cb(job.bytes.data(), job.bytes.size(), &chunk.cb_handle); !r.ok()) {
        give_back();
        return r;
      }
      handles.push_back(chunk.cb_handle);
    } else {
      std::copy(job.bytes.begin(), job.bytes.end(), internal->bytes.begin() + static_cast<std::ptrdiff_t>(internal_used));
      chunk.cb_handle = internal->device_va + internal_used;
      internal_used += (job.bytes.size() + kCbAlign - 1) / kCbAlign * kCbAlign;
    }
    chunk.cb_size = static_cast<uint32_t>(job.bytes.size());
    chunks.push_back(chunk);
  }
  uint64_t s = 0;
  int rc = hlthunk::submit(fd_, chunks, &s);
  while (rc == -EAGAIN && !launch_ranges_.empty()) {   // a queue is full: the oldest in flight frees room
    if (Result r = wait(launch_ranges_.front().seq); !r.ok()) break;
    launch_ranges_.pop_front();
    rc = hlthunk::submit(fd_, chunks, &s);
  }
  for (uint64_t handle : handles) hlthunk::cb_destroy(fd_, handle);
  handles.clear();
  if (rc != 0) {
    give_back();
    return Result::error(Status::CommandSubmissionFailure, "program submission: " + errno_text(rc));
  }
  last_seq_ = s;
  queue_of_[s] = external_queue;
  if (internal) {
    StagedCopy held;
    held.queue = external_queue;
    held.buffer = std::move(internal);
    staged_copies_.emplace(s, std::move(held));
  }
  launch_ranges_.push_back({s, first_sob, sync_range_size(sob_count)});
  if (seq) *seq = s;
  return Result::success();
}

// Drops the host mappings of a completed submission and of every earlier one on its queue (a
// copy whose own seq is never waited for is done once anything after it on its queue is), and
// keeps the completion time of a launch for the trace.
void Runtime::release_finished(uint64_t completed_seq, uint64_t completed_ns) {
  if (completed_ns != 0 && submit_ps_.count(completed_seq)) {
    completed_ps_[completed_seq] = completed_ns * 1000;
    if (completed_ps_.size() > kKeptCompletions) completed_ps_.erase(completed_ps_.begin());
  }
  const auto found = queue_of_.find(completed_seq);
  if (found == queue_of_.end()) return;
  const regs::QueueId queue = found->second;
  for (auto it = staged_copies_.begin(); it != staged_copies_.end() && it->first <= completed_seq;) {
    if (it->second.queue != queue) {
      ++it;
      continue;
    }
    StagedCopy& copy = it->second;
    if (copy.copy_back_to != nullptr) std::memcpy(copy.copy_back_to, copy.buffer->bytes.data(), copy.bytes);
    return_staging(std::move(copy.buffer));
    it = staged_copies_.erase(it);
  }
  for (auto it = queue_of_.begin(); it != queue_of_.end() && it->first <= completed_seq;) {
    it = it->second == queue ? queue_of_.erase(it) : std::next(it);
  }
}

Result Runtime::wait(uint64_t seq, uint64_t timeout_us) {
  if (seq == 0) return Result::success();
  return finish_wait(seq, wait_cs(seq, timeout_us));
}

Runtime::WaitOutcome Runtime::wait_cs(uint64_t seq, uint64_t timeout_us) const {
  WaitOutcome outcome;
  if (seq == 0) {
    outcome.status = HL_WAIT_CS_STATUS_COMPLETED;
    return outcome;
  }
  outcome.rc = hlthunk::wait(fd_, seq, timeout_us, &outcome.status, nullptr, &outcome.done_ns);
  return outcome;
}

Result Runtime::finish_wait(uint64_t seq, const WaitOutcome& outcome) {
  if (seq == 0) return Result::success();
  const int rc = outcome.rc;
  const uint32_t status = outcome.status;
  const uint64_t done_ns = outcome.done_ns;
  if (rc != 0 || status != HL_WAIT_CS_STATUS_COMPLETED) {
    // A submission the driver timed out (TDR) or aborted means a device reset, which clears the
    // sync objects: the queues' signals count from 0 again, and points from before are past.
    if (status == HL_WAIT_CS_STATUS_TIMEDOUT || status == HL_WAIT_CS_STATUS_ABORTED) {
      for (QueueSignals& q : signals_) {
        q.count = 0;
        ++q.epoch;
        q.waits.clear();
      }
      // Nothing runs after the reset: the launches' sync-object ranges and command buffers are
      // free again.
      for (const SyncRange& r : launch_ranges_) queue_of_.erase(r.seq);
      launch_ranges_.clear();
    }
    const char* why = status == HL_WAIT_CS_STATUS_TIMEDOUT ? ": it timed out and the driver reset the device (TDR); "
                                                             "its work and everything in flight are lost"
                      : status == HL_WAIT_CS_STATUS_ABORTED ? ": the device was reset; its work is lost"
                                                            : "";
    return Result::error(Status::Fail, "submission " + std::to_string(seq) + " did not complete" + why + " (" +
                                           errno_text(rc) + ", wait status " + std::to_string(status) + ")");
  }
  release_finished(seq, done_ns);
  return Result::success();
}

bool Runtime::completed(uint64_t seq) {
  if (seq == 0) return true;
  uint32_t status = 0;
  uint64_t done_ns = 0;
  const int rc = hlthunk::wait(fd_, seq, 0, &status, nullptr, &done_ns);
  if (rc == 0 && status == HL_WAIT_CS_STATUS_COMPLETED) {
    release_finished(seq, done_ns);
    return true;
  }
  return false;
}

Result Runtime::completion_time_ps(uint64_t seq, uint64_t* ps) {
  hl_wait_cs_args args{};
  args.in.seq = seq;
  args.in.timeout_us = 0;
  const int rc = driver::hl_ioctl(fd_, DRM_IOCTL_HL_WAIT_CS, &args);
  if (rc != 0 || args.out.status != HL_WAIT_CS_STATUS_COMPLETED) {
    return Result::error(Status::Busy, "submission " + std::to_string(seq) + " has not completed");
  }
  if ((args.out.flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD) == 0) {
    return Result::error(Status::Unavailable, "submission " + std::to_string(seq) + " is too old for its time stamp");
  }
  *ps = static_cast<uint64_t>(args.out.timestamp_nsec) * 1000;
  return Result::success();
}

uint64_t Runtime::host_now_ps() {
  platform::HostServices* host = platform::host_services();
  return host != nullptr ? host->host_now_ps() : 0;
}

std::optional<uint64_t> Runtime::take_completion_ps(uint64_t seq) {
  const auto found = completed_ps_.find(seq);
  if (found == completed_ps_.end()) return std::nullopt;
  const uint64_t ps = found->second;
  completed_ps_.erase(found);
  return ps;
}

uint64_t Runtime::submit_time_ps(uint64_t seq) const {
  const auto found = submit_ps_.find(seq);
  return found == submit_ps_.end() ? 0 : found->second;
}

}  // namespace hpusim::synapse::runtime
