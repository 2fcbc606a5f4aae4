// The HBM subsystem as a SystemC target: every channel controller of every stack behind one
// memory-protocol socket. A request is split at interleave boundaries into per-channel requests;
// the response is sent when the last of them has delivered its data.
//
// Event-driven: one SystemC method wakes only at cycles where some controller can act (a
// command can issue, a refresh is due, a request arrives), found from a calendar of the
// controllers' next-event cycles. Idle and stalled cycles cost nothing.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <deque>
#include <memory>
#include <vector>

#include "hw/backing_store/backing_store.h"
#include "hw/common/mem_protocol.h"
#include "hw/hbm/address_mapper.h"
#include "hw/hbm/channel_controller.h"
#include "hw/hbm/wake_calendar.h"
#include "hw/hbm/hbm_config.h"
#include "sim/stats/stats.h"

namespace hpusim::hbm {

struct SubsystemConfig {
  Organization organization;
  Timing timing;
  ControllerConfig controller;
  uint64_t base = 0;   // device address of HBM offset 0
};

struct SubsystemStats {
  uint64_t requests = 0;
  uint64_t reads = 0, writes = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t channel_requests = 0;     // after splitting at interleave boundaries
  uint64_t backpressured = 0;        // channel requests that waited for a full controller queue
  uint64_t errors = 0;
  uint64_t wakeups = 0;              // SystemC activations of the scheduler
};

class HbmSubsystem : public sc_core::sc_module {
 public:
  HbmSubsystem(sc_core::sc_module_name name, const SubsystemConfig& config);

  tlm_utils::simple_target_socket<HbmSubsystem> socket;

  double peak_bytes_per_second() const;
  double channel_peak_bytes_per_second() const;
  // Unloaded latency of a read of one burst to a closed bank (ACT, RD, data), picoseconds.
  hw::Picoseconds unloaded_read_latency_ps() const;
  // The same for a row hit (RD, data) and a row conflict (PRE, ACT, RD, data).
  hw::Picoseconds row_hit_latency_ps() const;
  hw::Picoseconds row_conflict_latency_ps() const;

  const SubsystemStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  const ChannelController& controller(uint32_t channel) const { return *controllers_[channel]; }
  uint32_t channels() const { return static_cast<uint32_t>(controllers_.size()); }
  const AddressMapper& mapper() const { return mapper_; }
  const SubsystemConfig& config() const { return config_; }
  mem::BackingStore& store() { return store_; }

 private:
  struct Parent {
    tlm::tlm_generic_payload* trans = nullptr;
    uint32_t remaining = 0;
    uint64_t done_cycle = 0;
  };
  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned debug_transport(tlm::tlm_generic_payload& trans);
  bool move_data(tlm::tlm_generic_payload& trans);
  // Enqueues or holds the request; a posted write accepted now appends its completion to `posted`.
  void submit(uint32_t channel, const Request& request, std::vector<Completion>& posted);
  // Enqueues into the controller; a posted write's completion (one cycle later) goes to `posted`.
  void accept(ChannelController& controller, const Request& request, std::vector<Completion>& posted);
  void reschedule(uint32_t channel, uint64_t not_before);
  void run_scheduler();
  void complete(const Completion& completion);
  uint32_t allocate_parent();
  void respond_error(tlm::tlm_generic_payload& trans, hw::Picoseconds at);
  uint64_t cycle_ceil(hw::Picoseconds ps) const { return (ps + config_.timing.tck_ps - 1) / config_.timing.tck_ps; }

  SubsystemConfig config_;
  AddressMapper mapper_;
  mem::BackingStore store_;
  std::vector<std::unique_ptr<ChannelController>> controllers_;
  std::vector<std::deque<Request>> overflow_;        // per channel, waiting for queue space
  std::vector<uint64_t> scheduled_;                  // per channel: cycle of its live calendar entry
  WakeCalendar calendar_;
  std::vector<Parent> parents_;
  std::vector<uint32_t> free_parents_;
  std::vector<Completion> completions_;
  std::vector<Completion> posted_;   // posted writes accepted during one forward()
  sc_core::sc_event wake_;
  uint64_t current_cycle_ = 0;
  bool in_scheduler_ = false;
  SubsystemStats stats_;
};

}  // namespace hpusim::hbm
