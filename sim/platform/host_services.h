// What the platform offers the host software above the driver (Synapse, the bridge), without
// SystemC: the host clock and the modeled cost of host work, the run's timeline, and a way to
// bring the platform up when a program asks for a device before anything built one. Pure C++
// (library hpusim_host_services); sim/platform implements it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpusim::traces {
class Timeline;
}

namespace hpusim::platform {

// Host work whose cost the preset's host table models (sim/preset/card_preset.proto, HostCosts).
enum class HostWork {
  kGraphHashPerNode,   // graph_hash_per_node_ns
  kRecipeLookup,       // recipe_lookup_ns
  kCompilePerNode,     // compile_per_node_ns
  kLaunch,             // launch_ns
  kLaunchPerPatch,     // launch_per_patch_ns
  kOpRecord,           // op_record_ns
  kEagerOp,            // eager_op_ns
  kGraphBuildPerNode,  // graph_build_per_node_ns
  kCpuFallbackOp,      // cpu_fallback_op_ns
  kGraphReplay,        // graph_replay_ns
};

// What a program asks for when it brings the platform up (hpusim_deviceAcquireWithPreset,
// HPUSIM_PRESET / HPUSIM_SET / HPUSIM_CARDS / HPUSIM_HOST_TIME, hpusim_traceToFile).
struct BootRequest {
  std::string preset;                  // empty: the running platform's, or the default preset
  std::vector<std::string> overrides;
  unsigned cards = 0;                  // cards in the box; 0: the running platform's, or 1
  std::string box;                     // a box preset (HPUSIM_BOX); empty: the running platform's, or none
  std::string trace_path;   // empty: not traced
  std::string host_time;    // "modeled" | "measured" (HPUSIM_HOST_TIME); empty: the running platform's, or modeled
  bool trace_packets = false;   // packet-level events in the trace (HPUSIM_TRACE_DETAIL=packets)
  bool distributed = false;     // asks for the box split between processes (HPUSIM_DISTRIBUTED):
                                // false: whatever is running
  std::string rendezvous;       // with it, a TCP rendezvous "host:port" (HPUSIM_DISTRIBUTED=tcp,
  int rank = 0, ranks = 1;      // HPUSIM_RENDEZVOUS, RANK, WORLD_SIZE); empty: an MPI run
  double rendezvous_timeout_s = 300;   // HPUSIM_RENDEZVOUS_TIMEOUT
};

class HostServices {
 public:
  virtual ~HostServices() = default;
  // Host time now (ps), on the one host clock of the box.
  virtual uint64_t host_now_ps() = 0;
  // The calling thread's host track ("host" for threads that share the default one).
  virtual std::string host_thread_name() = 0;
  // Charges `count` times the modeled cost of `work` to the host clock.
  virtual void charge(HostWork work, uint64_t count = 1) = 0;
  // The run's timeline (recording only when the run is traced or profiled: Timeline::enabled), or
  // nullptr for a platform built without one.
  virtual traces::Timeline* timeline() = 0;
  // The cards of the box (device files /dev/hl0 .. /dev/hl<cards-1>).
  virtual unsigned cards() = 0;
  // The box index of /dev/hl0: 0 unless the box is split between processes (each simulates some of
  // its cards, and box_text() then describes the whole box).
  virtual unsigned first_card() { return 0; }
  // The box preset the cards are joined by, as text (sim/preset's Box, its links between the cards
  // built), or "" when the cards are not in a box: what a collective library reads as the
  // server's connectivity (the real HCL has it compiled in per server type).
  virtual std::string box_text() = 0;
  // Locks host threads take in host-time order (ties in track order), so which thread gets one
  // never depends on how the OS schedules them, and a thread waiting for one does not hold the
  // device back while the holder waits for it. Recursive for the holding thread; unlock by
  // another thread throws std::logic_error.
  virtual unsigned create_lock() = 0;
  virtual void lock(unsigned id) = 0;
  virtual void unlock(unsigned id) = 0;
  // Writes the timeline to the file the platform was brought up with (nothing if none).
  virtual void write_trace() = 0;
  // "" when this platform serves `request` (the same preset and overrides; a trace only if it was
  // built with one), else why not.
  virtual std::string accepts(const BootRequest& request) = 0;
};

// The running platform's services, or nullptr when this process has no platform.
HostServices* host_services();
void set_host_services(HostServices* services);

// Brings a platform up for `request`; returns "" or why it could not.
using BootHandler = std::function<std::string(const BootRequest& request)>;
void set_boot_handler(BootHandler handler);
// Makes sure this process has a platform that matches `request`: builds one through the boot
// handler when there is none. Returns "" or why not (no platform in this program, a platform
// with another preset already running, the card could not be built).
std::string boot(const BootRequest& request);

}  // namespace hpusim::platform
