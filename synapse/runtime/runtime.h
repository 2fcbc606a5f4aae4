// The Synapse runtime over the driver's ioctl ABI: device memory, host/device copies on a DMA
// queue, and recipe launches (patch the persistent-tensor, workspace and program addresses into
// the recipe's command buffers, submit one command submission, wait for its completion).
//
//   int fd = driver::hl_open("/dev/hl0");             // the device file: the compute context
//   Runtime rt(fd);
//   uint64_t x; rt.device_malloc(bytes, &x);
//   uint64_t seq; rt.copy_to_device(host, x, bytes, &seq);
//   std::shared_ptr<LoadedRecipe> loaded; rt.load(recipe, &loaded);   // program image uploaded
//   rt.launch(*loaded, {x, y}, workspace, &seq); rt.wait(seq);
//
// Ordering: copies and a launch's first and last jobs run on one external queue (DMA_0_0), in
// submission order; a launch's engines start only after everything submitted before it on that
// queue is done (the recipe's start sync object, set behind an engine barrier). A recipe's sync
// objects are reused by its next launch, so the runtime lets one launch be in flight at a time
// (a new launch waits for the previous one's completion first).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <cstdlib>
#include <new>
#include <optional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "synapse/compiler/compile_target.h"
#include "synapse/graph/status.h"
#include "synapse/recipe/recipe.pb.h"
#include "synapse/runtime/device_allocator.h"

namespace hpusim::synapse::runtime {

using graph::Result;
using graph::Status;

// Page-aligned host memory: a buffer the device reads by DMA has the same alignment, and so the
// same transfer timing, on every run (a heap address would not).
template <class T>
struct PageAlignedAllocator {
  using value_type = T;
  static constexpr size_t kPage = 4096;
  PageAlignedAllocator() = default;
  template <class U>
  PageAlignedAllocator(const PageAlignedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(kPage, (n * sizeof(T) + kPage - 1) / kPage * kPage);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const PageAlignedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const PageAlignedAllocator<U>&) const { return false; }
};
using HostBytes = std::vector<uint8_t, PageAlignedAllocator<uint8_t>>;

// A recipe made ready to launch on one device: its program image in device memory, its command
// buffers in host memory the device can read. Launches of it may be in flight together: each
// patches a set of command buffers no launch in flight reads (a new set when all are busy).
class LoadedRecipe {
 public:
  const recipe::Recipe& recipe() const { return recipe_; }
  uint64_t program_address() const { return program_address_; }
  uint64_t launches() const { return launches_; }

 private:
  friend class Runtime;
  struct Job {
    regs::QueueId queue = regs::QueueId::DMA_0_0;
    bool external = false;
    HostBytes bytes;              // patched in place before each launch that uses the set
    uint64_t device_va = 0;       // internal jobs: the mapping of `bytes`
  };
  struct JobSet {
    std::vector<Job> jobs;        // one per recipe job
    uint64_t seq = 0;             // the last launch that used it (0: none)
  };
  recipe::Recipe recipe_;
  std::vector<JobSet> sets_;
  uint64_t program_address_ = 0;
  uint64_t launches_ = 0;
  bool released_ = false;
};

class Runtime {
 public:
  // Works through `fd`, an open descriptor of the device file (the caller closes it after the
  // runtime is gone). Throws std::runtime_error when the device's INFO cannot be read.
  explicit Runtime(int fd);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int fd() const { return fd_; }
  const compiler::CompileTarget& target() const { return target_; }
  // Lets recipes use at most `bytes` of SRAM (at most the SRAM user range; 0: none). Recipes
  // compiled for the old target no longer load.
  void limit_sram(uint64_t bytes) { target_.sram_bytes = std::min(bytes, sram_size_); }
  const DeviceAllocator& allocator() const { return allocator_; }

  // ---- device memory ----
  Result device_malloc(uint64_t bytes, uint64_t* address);
  Result device_free(uint64_t address);

  // ---- copies (asynchronous: *seq is the command submission to wait for) ----
  // On `queue` (an external DMA queue; DMA_0_0 is the one launches end on). The host buffer is
  // mapped for the device until the copy's submission is waited for.
  static constexpr regs::QueueId kLaunchQueue = regs::QueueId::DMA_0_0;
  Result copy_to_device(const void* source, uint64_t destination, uint64_t bytes, uint64_t* seq,
                        regs::QueueId queue = kLaunchQueue);
  Result copy_to_host(uint64_t source, void* destination, uint64_t bytes, uint64_t* seq,
                      regs::QueueId queue = kLaunchQueue);
  // The same copies between device memory and host memory the caller has mapped already
  // (synHostMalloc / synHostMap): `host_va` is its device VA. No mapping of their own, so no page
  // table writes and no MMU cache invalidation while other work runs.
  Result copy_mapped_to_device(uint64_t host_va, uint64_t destination, uint64_t bytes, uint64_t* seq,
                               regs::QueueId queue = kLaunchQueue);
  Result copy_mapped_to_host(uint64_t source, uint64_t host_va, uint64_t bytes, uint64_t* seq,
                             regs::QueueId queue = kLaunchQueue);
  Result copy_on_device(uint64_t source, uint64_t destination, uint64_t bytes, uint64_t* seq,
                        regs::QueueId queue = kLaunchQueue);
  // Fills `bytes` (a multiple of 4) with the 32-bit `value`.
  Result memset_device(uint64_t destination, uint32_t value, uint64_t bytes, uint64_t* seq,
                       regs::QueueId queue = kLaunchQueue);

  // ---- recipes ----
  // Checks the recipe against this device (target, sync objects) and uploads its program image.
  Result load(const recipe::Recipe& recipe, std::shared_ptr<LoadedRecipe>* loaded);
  // Frees what load() took. Waits for the recipe's launches first.
  Result unload(LoadedRecipe& loaded);
  // `persistent[i]`: the device address of the recipe's persistent tensor i; `workspace`: at
  // least recipe.workspace_bytes() of device memory (ignored when that is 0).
  Result launch(LoadedRecipe& loaded, const std::vector<uint64_t>& persistent, uint64_t workspace, uint64_t* seq);

  // ---- programs over several queues (collectives) ----
  struct QueueJob {
    regs::QueueId queue = kLaunchQueue;
    std::vector<uint8_t> bytes;
  };
  // Submits one command submission of the jobs `build(first_sob)` writes for the E_N sync
  // objects [first_sob, first_sob + sob_count), a range of the launches' pool that no submission
  // in flight holds (so the program may leave them anywhere but must not count on their values
  // at its start). The jobs run in their order per queue; jobs on the external DMA queues get
  // external command buffers, the others command buffers in mapped host memory, held until the
  // submission completes. The first job on `external_queue` carries the device waits that queue
  // owes (synStreamWaitEvent). *seq: the submission, complete when its external jobs are.
  using ProgramBuilder = std::function<std::vector<QueueJob>(uint32_t first_sob)>;
  Result submit_program(regs::QueueId external_queue, uint32_t sob_count, const ProgramBuilder& build, uint64_t* seq);

  // ---- ordering between queues, on the device ----
  // A point in an external queue's work: the sync object that queue's signals count on and the
  // count that marks the point.
  struct Signal {
    regs::QueueId queue = kLaunchQueue;
    uint32_t sob = 0;
    uint16_t value = 0;
    uint64_t epoch = 0;   // the counter restarts when it would overflow; older points are past
  };
  // Submits on `queue` (an external DMA queue) a signal that fires once everything submitted to
  // the queue before it, and the device waits it carries, are done. *seq: its submission.
  Result signal(regs::QueueId queue, Signal* signal, uint64_t* seq);
  // The next submission on `queue` waits on the device (a monitor and a fence) until `signal`
  // has fired; the host does not wait. Nothing to do for a point of the same queue.
  Result wait_on_device(regs::QueueId queue, const Signal& signal);
  // Device waits the next submission on `queue` will carry.
  bool has_device_waits(regs::QueueId queue) const;
  // E_N sync objects and monitors of the queues' signals and waits (above the compile target's).
  static constexpr uint32_t kSignalSobBase = 1792;
  static constexpr uint32_t kWaitMonitorBase = 504;

  // ---- completion ----
  // Waits for submission `seq` (and everything before it on its queue). synFail with the
  // driver's status when it timed out or was aborted (the device was reset).
  Result wait(uint64_t seq, uint64_t timeout_us = kWaitTimeoutUs);
  // wait() in two steps, so the caller's lock need not be held while the host waits: wait_cs is
  // the driver's WAIT_CS alone (it touches nothing of the runtime but its descriptor) and
  // finish_wait applies what it found.
  struct WaitOutcome {
    int rc = 0;
    uint32_t status = 0;
    uint64_t done_ns = 0;
  };
  static constexpr uint64_t kWaitTimeoutUs = 60000000;
  WaitOutcome wait_cs(uint64_t seq, uint64_t timeout_us = kWaitTimeoutUs) const;
  Result finish_wait(uint64_t seq, const WaitOutcome& outcome);
  // True when `seq` has completed (no waiting).
  bool completed(uint64_t seq);
  // Host time (ps) at which completed submission `seq` completed, as the driver stamps it (its
  // completion MSI's arrival).
  Result completion_time_ps(uint64_t seq, uint64_t* ps);
  // Host time now (ps), and the host time at which launch `seq` was submitted, its submission ioctl
  // returned with the doorbells rung (0 if unknown).
  uint64_t host_now_ps();
  uint64_t submit_time_ps(uint64_t seq) const;
  // The completion time (ps) of launch `seq` if a wait of this runtime has seen it complete, and
  // forgets it; no ioctl, so no host time is charged and no interrupt handled (a trace must not
  // change the timeline). The last kKeptCompletions are kept.
  std::optional<uint64_t> take_completion_ps(uint64_t seq);
  static constexpr size_t kKeptCompletions = 4096;
  // The last submission made (0 before the first).
  uint64_t last_submission() const { return last_seq_; }
  // Wall time (measured) launches spent preparing their submission: patching and command
  // buffers; not the driver's submit, which runs the simulated device.
  uint64_t launch_prepare_ns() const { return launch_prepare_ns_; }
  // The E_N sync objects launch `seq` was given, [first, first + count), while it is not known
  // complete (nullopt after, or for another submission).
  struct SyncRange {
    uint64_t seq = 0;
    uint32_t first = 0, count = 0;
  };
  std::optional<SyncRange> sync_range(uint64_t seq) const;

 private:
  // Copies from and to caller memory the device cannot reach go through staging buffers: page
  // aligned, mapped once and reused, so a copy's timing does not depend on the caller's alignment
  // and no page tables change while a launch runs. A buffer is busy until its copy's submission is
  // known complete; queues complete in order, so when a submission completes, so has everything
  // submitted before it to its queue (a launch: to kLaunchQueue, where its first and last jobs run).
  struct StagingBuffer {
    HostBytes bytes;
    uint64_t device_va = 0;
  };
  struct StagedCopy {
    regs::QueueId queue = regs::QueueId::DMA_0_0;
    std::unique_ptr<StagingBuffer> buffer;
    void* copy_back_to = nullptr;   // device-to-host copies: the caller's memory
    uint64_t bytes = 0;
  };
  // Submits a copy's command buffer on `queue`; `staged` (if any) is held until it completes.
  Result submit_copy(const std::vector<uint8_t>& cb, regs::QueueId queue, uint64_t* seq, StagedCopy staged);
  Result submit_copy(const std::vector<uint8_t>& cb, regs::QueueId queue, uint64_t* seq) {
    return submit_copy(cb, queue, seq, StagedCopy());
  }
  Result external_cb(const uint8_t* bytes, size_t size, uint64_t* handle);
  // The device waits owed by the next submission on `queue`, as command-buffer packets (empty
  // when none); taken, so the submission that carries them clears them.
  std::vector<uint8_t> take_device_waits(regs::QueueId queue);
  // The last submission to `queue` not known complete, or 0.
  uint64_t last_on_queue(regs::QueueId queue) const;
  void release_finished(uint64_t completed_seq, uint64_t completed_ns);
  Result check_copy_queue(regs::QueueId queue) const;
  // Launches of different recipes (or of one) go in flight together: the device orders them (each
  // launch's engines start when its first job on kLaunchQueue runs, behind the previous launch's
  // last job there), and each gets its own 8-aligned range of the target's sync objects, none
  // that a launch not known complete holds. Only when no range is free does the host wait, for
  // the launch holding the one it needs.
  bool known_complete(uint64_t seq) const { return queue_of_.count(seq) == 0; }
  static uint32_t sync_range_size(uint32_t count);
  Result take_sync_range(uint32_t count, uint32_t* first);
  // A set of the recipe's command buffers no launch in flight reads.
  Result free_job_set(LoadedRecipe& loaded, LoadedRecipe::JobSet** set);
  std::deque<SyncRange> launch_ranges_;   // launches not known complete, oldest first
  uint32_t next_sync_object_ = 0;

  int fd_;
  compiler::CompileTarget target_;
  DeviceAllocator allocator_;
  uint64_t last_seq_ = 0;
  uint64_t last_launch_seq_ = 0;
  std::map<uint64_t, uint64_t> submit_ps_;   // launches: seq -> host time the submission returned
  uint64_t launch_prepare_ns_ = 0;
  uint64_t sram_base_ = 0, sram_size_ = 0;   // the SRAM user range, the recipes' SRAM arena
  static constexpr uint64_t kMinStagingBytes = 64 * 1024;
  static constexpr uint64_t kMaxStagingBytes = uint64_t{1} << 40;   // larger than any card's memory
  static constexpr uint64_t kKeptStagingBytes = 256ull << 20;   // idle buffers beyond it are unmapped
  Result take_staging(uint64_t bytes, std::unique_ptr<StagingBuffer>* buffer);
  void return_staging(std::unique_ptr<StagingBuffer> buffer);
  std::multimap<uint64_t, std::unique_ptr<StagingBuffer>> idle_staging_;   // by capacity
  uint64_t idle_staging_bytes_ = 0;
  std::multimap<uint64_t, StagedCopy> staged_copies_;   // by submission
  std::map<uint64_t, regs::QueueId> queue_of_;           // submissions not known complete: seq -> queue
  std::map<uint64_t, uint64_t> completed_ps_;    // launches a wait saw complete: seq -> time
  static constexpr unsigned kExternalQueues = 8;   // DMA_0_0 .. DMA_1_3
  struct QueueSignals {
    uint16_t count = 0;     // signals fired or pending in this epoch: the SOB's value once done
    uint64_t epoch = 0;
    std::vector<Signal> waits;   // owed by the next submission
  };
  std::array<QueueSignals, kExternalQueues> signals_{};
};

}  // namespace hpusim::synapse::runtime
