// The platform: what owns the simulation of one host with its box of cards. It builds, from a
// preset, the co-simulation loop (the SystemC kernel on its own thread and the host clock with its
// tracks), N cards each with its root port and MSI routing, tracer, device link and the driver
// instance that probes it and serves "/dev/hl<i>". Tests, benches, the CLI and the Synapse layer
// (through platform::boot) all build it this way. One platform per process (SystemC elaborates
// once).
//
//   platform::Platform box({.preset = "hl205", .cards = 2});
//   int fd = driver::hl_open("/dev/hl1");        // user space: the device file only
//   box.card(1).tpc_core(0)->...;                 // tools and tests: the models' statistics
//   platform::HostThread worker(box, "card 1 workload");   // this thread's own host-time track
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "driver/device.h"
#include "sim/cosim/cosimulation.h"
#include "sim/platform/host_services.h"
#include "sim/preset/preset.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {
class Card;
class NicSwitch;
class CardTracer;
class HostMemory;
}
namespace hpusim::traces {
class Timeline;
}
namespace hpusim::hw {
class NicRemoteEnd;
}
namespace hpusim::distributed {
class ConservativeSync;
}

namespace hpusim::platform {

struct PlatformOptions {
  std::string preset = preset::kDefaultPreset;
  std::vector<std::string> overrides;
  // A preset already resolved (a bench's or a sweep's), used instead of preset and overrides.
  std::optional<preset::Card> resolved_preset;
  cosim::HostTimeSource time_source = cosim::HostTimeSource::kModeled;
  // Cards in the box (1..kMaxCards), all built from the preset. With more than one, module names
  // ("card0", "card1") and trace processes carry the card's index.
  unsigned cards = 1;
  // A box preset (sim/presets/boxes: a built-in name or a file): the cards are built from its card
  // preset (with `overrides`; `preset` is not used) and their NIC ports joined by its links. Its
  // card count unless `cards` asks for fewer (the first ones, and the links between them).
  std::string box;
  // The box split between processes: rank r of N simulates cards r*C/N .. (r+1)*C/N - 1 of the C
  // cards (its device files /dev/hl0 ..), their links to the other ranks' cards kept in step by
  // conservative synchronisation (sim/distributed). Needs a box. The processes are an MPI run's
  // (mpirun -np N; the platform initialises MPI if the program has not, and then finalises it
  // too) or, with `rendezvous` set ("host:port"), rank `rank` of `ranks` processes started by any
  // launcher (torchrun's), which meet there over TCP (rank 0 listens on it).
  bool distributed = false;
  std::string rendezvous;
  int rank = 0, ranks = 1;
  double rendezvous_timeout_s = 300;   // how long the ranks wait for each other there
  // The run's timeline: the driver's ioctls and interrupts and the card's activity go on it.
  // Either the caller's (it must outlive the platform) or, with trace_path set, the platform's own,
  // written to trace_path by write_trace() (.json: Chrome JSON, else Perfetto).
  traces::Timeline* timeline = nullptr;
  std::string trace_path;
  bool trace_packets = false;   // packet-level command-submission events on the timeline
  // Without a driver the platform is a bare card with its root port (tests that drive the card
  // by MMIO themselves); with one, the driver probes the card and serves "/dev/hl0".
  bool with_driver = true;
  driver::HlDeviceOptions driver;   // its timeline is set from the platform's
  // Runs on the simulation thread once each card is built, before elaboration ends: where a test
  // adds its own modules or observers. Whatever it creates must be destroyed (on the simulation
  // thread) before the platform.
  std::function<void(hw::Card&)> on_card_built;
};

class Platform;

// The calling thread on its own host-time track for as long as the object lives. Tracks are kept
// in step with each other, so a thread lets its HostThread go before it blocks on another thread
// (a join, a lock). Threads meant to run together get their tracks reserved first
// (Platform::reserve_host_track, on the thread that starts them), so none runs ahead of another
// that has not started yet:
//
//   const unsigned track = box.reserve_host_track("card 1", start_ps);
//   std::thread worker([&] { platform::HostThread on(box, track); ... });
class HostThread {
 public:
  // A new track, starting at the calling thread's host time or start_ps, whichever is later.
  HostThread(Platform& platform, const std::string& name, uint64_t start_ps = 0);
  // A track reserved before.
  HostThread(Platform& platform, unsigned track);
  ~HostThread();
  HostThread(const HostThread&) = delete;
  HostThread& operator=(const HostThread&) = delete;
  unsigned track() const { return track_; }

 private:
  Platform& platform_;
  unsigned track_;
};

class Platform : public HostServices {
 public:
  // Throws std::runtime_error naming what is wrong (a bad preset or override, a second platform
  // in the process, a card that does not come up).
  explicit Platform(const PlatformOptions& options);
  ~Platform() override;
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  // Where the root port delivers MSIs: the x86 MSI window (the direct-MSI path).
  static constexpr uint64_t kMsiHostAddress = 0xFEE00000ull;
  static constexpr unsigned kMaxCards = 16;   // two 8-card boxes

  // The platform of this process, or nullptr.
  static Platform* current();

  const preset::Card& preset() const { return preset_; }
  // The box preset the cards were joined by, or nullptr.
  const preset::Box* box() const { return box_ ? &*box_ : nullptr; }
  // The box's scale-out switch (its scale_out ports on the cards built), or nullptr; a split box
  // has it in the process of its first scale-out card.
  hw::NicSwitch* nic_switch() { return switch_.get(); }
  // The box index of card 0 of this process (0 unless the box is split between processes) and the
  // cards of the whole box.
  unsigned first_card() override { return first_card_; }
  unsigned box_cards() const { return box_cards_; }
  // The synchronisation of a box split between processes, or nullptr.
  distributed::ConservativeSync* sync() { return sync_.get(); }
  // A split box: this process has nothing more of its own to simulate; it keeps its cards running
  // for the other processes until all have left (collective). The device must not be used after.
  // Also done on destruction. Nothing without a split.
  void leave();
  // A platform that lives until the program exits (platform::boot): leave(), then finalise MPI if
  // this platform initialised it. Errors are printed, not thrown.
  void leave_at_exit();
  const PlatformOptions& options() const { return options_; }
  cosim::CoSimulation& cosim() { return *cosim_; }
  unsigned cards() override { return static_cast<unsigned>(cards_.size()); }
  std::string box_text() override;
  hw::Card& card(unsigned index = 0);
  // The driver instance of card `index` (its debug view: log, counters); throws without a driver.
  driver::HlDevice& driver(unsigned index = 0);
  // A host-time track for a thread to bind (HostThread), holding the device back at its start
  // time (the calling thread's host time or start_ps, whichever is later) until then.
  unsigned reserve_host_track(const std::string& name, uint64_t start_ps = 0) { return cosim_->add_track(name, start_ps); }
  // The statistics of every block of every card (a box's under "card<i>."); dump them on the
  // simulation thread (cosim().on_sim_thread), while the platform lives.
  stats::Registry& stats() { return stats_; }
  // The device file of card `index`.
  static std::string device_path(unsigned index = 0) { return "/dev/hl" + std::to_string(index); }

  // HostServices.
  uint64_t host_now_ps() override { return cosim_->host_now_ps(); }
  std::string host_thread_name() override { return cosim_->track_name(cosim_->current_track()); }
  void charge(HostWork work, uint64_t count = 1) override;
  traces::Timeline* timeline() override { return timeline_; }
  unsigned create_lock() override { return cosim_->create_lock(); }
  void lock(unsigned id) override { cosim_->lock(id); }
  void unlock(unsigned id) override { cosim_->unlock(id); }
  void write_trace() override;
  std::string accepts(const BootRequest& request) override;

 private:
  PlatformOptions options_;
  preset::Card preset_;
  std::optional<preset::Box> box_;
  std::unique_ptr<hw::NicSwitch> switch_;   // the box's scale-out switch, if it has one
  std::unique_ptr<traces::Timeline> own_timeline_;
  traces::Timeline* timeline_ = nullptr;
  std::unique_ptr<cosim::CoSimulation> cosim_;
  stats::Registry stats_;   // every card's blocks, registered as they are built
  std::unique_ptr<hw::HostMemory> host_memory_;   // the box's, shared by its cards
  // Per card, in card order.
  std::vector<std::unique_ptr<hw::Card>> cards_;
  std::vector<std::unique_ptr<cosim::HostPort>> host_ports_;
  std::vector<std::unique_ptr<hw::CardTracer>> card_tracers_;
  std::vector<std::unique_ptr<driver::DeviceLink>> links_;
  std::vector<std::unique_ptr<driver::HlDevice>> drivers_;
  unsigned first_card_ = 0, box_cards_ = 1;
  // A split box: the synchronisation, the ends of links to other processes' cards, and whether
  // this platform initialised MPI.
  std::unique_ptr<distributed::ConservativeSync> sync_;
  std::vector<std::unique_ptr<hw::NicRemoteEnd>> remote_ends_;
  uint64_t remote_link_ps_ = UINT64_MAX;   // the least latency of a link to another process
  bool owns_mpi_ = false;
  int process_rank_ = -1;   // a split box: this process's rank

  void probe_drivers();
  void join_processes();
  // leave(), printing what went wrong instead of throwing (destruction, exit).
  void leave_reporting_errors();
  // The synchronisation's communicator goes, then MPI if this platform initialised it.
  void end_mpi();
  void build_links();
  void tear_down();
};

}  // namespace hpusim::platform
