// One Gaudi-1 sync manager block (E_N, E_S, W_N or W_S): sync objects (SOBs) that producers write
// with SET / ADD messages, and monitors that watch a group of 8 SOBs and, when their condition
// holds, write a 32-bit payload to any device address through the fabric (typically +1 into a
// QMAN fence register). The block is a RegisterBlock in the CFG space and a fabric master.
//
// Timing: the CFG space calls the register callbacks when an access is accepted, with the time
// it takes effect. Writes are queued and applied in effective-time order at that time; a read
// first applies every queued write due at or before its own effective time. A monitor that fires
// at time t issues its payload write into the fabric at t + payload_latency_ps.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/cfg/cfg_space.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/timed_writes.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

// Byte offsets, inside the block, of the first register of each array (each an array of 32-bit
// registers). Defaults: the packed Gaudi-1 `block_sob_objs` layout.
struct SyncManagerLayout {
  uint64_t sob_obj = 0x0;
  uint64_t mon_pay_addrl = 0x2000;
  uint64_t mon_pay_addrh = 0x2800;
  uint64_t mon_pay_data = 0x3000;
  uint64_t mon_arm = 0x3800;
  uint64_t mon_status = 0x4000;
  // Bytes the block claims in the CFG space; 0 means "up to the end of the last array".
  uint64_t block_bytes = 0;
};

struct SyncManagerConfig {
  std::string name;             // block name: used for the sc_module, stats and observer calls
  uint32_t sobs = 2048;         // multiple of 8, at most 2048 (sid is 8 bits)
  uint32_t monitors = 512;
  SyncManagerLayout layout;
  Picoseconds payload_latency_ps = 0;  // from a monitor firing to its payload write entering the fabric
};

struct SyncManagerStats {
  uint64_t sob_writes = 0;          // SET/ADD writes applied to SOBs
  uint64_t monitor_arms = 0;        // mon_arm writes applied
  uint64_t monitor_fires = 0;       // payload writes issued
  uint64_t payload_errors = 0;      // payload writes answered with an error response
  uint64_t payload_responses = 0;   // payload writes answered (ok or error)
  uint64_t register_reads = 0;      // accepted register reads
  uint64_t rejected_accesses = 0;   // register accesses refused (error response)
};

// Optional hooks so the card can trace the block. Times are effective device times.
struct SyncManagerObserver {
  virtual ~SyncManagerObserver() = default;
  // A SOB took `value` (its new 15-bit value) at `at`.
  virtual void sob_updated(const std::string& block, uint32_t sob, uint32_t value, Picoseconds at) {
    (void)block, (void)sob, (void)value, (void)at;
  }
  // A monitor's condition held at `at`; its payload write enters the fabric payload_latency later.
  virtual void monitor_fired(const std::string& block, uint32_t monitor, uint64_t address, uint32_t data,
                             Picoseconds at) {
    (void)block, (void)monitor, (void)address, (void)data, (void)at;
  }
  // The payload write of `monitor` was answered at `at` (`ok` = TLM_OK_RESPONSE).
  virtual void payload_done(const std::string& block, uint32_t monitor, uint64_t address, bool ok, Picoseconds at) {
    (void)block, (void)monitor, (void)address, (void)ok, (void)at;
  }
};

class SyncManager : public sc_core::sc_module, public RegisterBlock {
 public:
  // Throws std::invalid_argument for an inconsistent configuration (see README).
  explicit SyncManager(const SyncManagerConfig& config);
  ~SyncManager() override;

  // Payload writes leave through this socket; bind it as a fabric master.
  tlm_utils::simple_initiator_socket<SyncManager> payload_socket;

  // RegisterBlock: 32-bit registers of the arrays in the layout; anything else returns false.
  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  // Bytes to claim in the CFG space: cfg.attach(name, base, sm.size_bytes(), sm).
  uint64_t size_bytes() const { return size_bytes_; }
  const SyncManagerConfig& config() const { return config_; }
  const std::string& block_name() const { return config_.name; }

  const SyncManagerStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  void set_observer(SyncManagerObserver* observer) { observer_ = observer; }

  // Untimed inspection for tests and debuggers: the state at the current simulation time (writes
  // due by now are applied first). Throw std::out_of_range for a bad index.
  uint32_t sob_value(uint32_t sob);
  bool monitor_armed(uint32_t monitor);
  // Payload writes issued and not yet answered.
  uint32_t payloads_in_flight() const { return in_flight_; }

  // Modelled hard reset at the current simulation time: all SOBs 0, every monitor disarmed, its
  // payload and arm registers 0. Writes that take effect later than now still apply afterwards;
  // payload writes already in the fabric complete. Statistics are kept.
  void reset();

 private:
  enum class Reg : uint8_t { kSob, kPayAddrL, kPayAddrH, kPayData, kArm, kStatus };
  struct Array {
    uint64_t begin;
    uint64_t end;
    Reg reg;
  };
  struct PendingWrite {
    uint32_t index;
    uint32_t value;
    Reg reg;
  };
  struct Monitor {
    uint32_t pay_addrl = 0;
    uint32_t pay_addrh = 0;
    uint32_t pay_data = 0;
    uint32_t arm = 0;
    uint32_t group = 0;
    uint32_t target = 0;
    uint8_t watched = 0;   // bit i: SOB i of the group takes part (mask bit i clear)
    bool equal = false;
    bool armed = false;
    int32_t prev = -1;     // links in the list of armed monitors of `group`
    int32_t next = -1;
  };
  struct PayloadSlot;

  SyncManager(sc_core::sc_module_name name, const SyncManagerConfig& config);

  bool decode(uint64_t offset, Reg& reg, uint32_t& index) const;
  void apply_due();                   // SC_METHOD
  void apply_until(Picoseconds at) { pending_.apply_due(at); }
  void apply(const PendingWrite& write, Picoseconds at);
  void write_sob(uint32_t sob, uint32_t value, Picoseconds at);
  void arm(uint32_t monitor, uint32_t value, Picoseconds at);
  void disarm(uint32_t monitor);
  uint8_t unmet(const Monitor& monitor) const;  // watched SOBs whose comparison fails
  void link(uint32_t monitor);
  void unlink(uint32_t monitor);
  void fire(uint32_t monitor, Picoseconds at);           // an armed (linked) monitor's condition holds
  void issue_payload(uint32_t monitor, Picoseconds at);  // the payload write into the fabric
  uint32_t status_word(uint32_t monitor) const;
  tlm::tlm_sync_enum payload_response(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                      sc_core::sc_time& delay);

  SyncManagerConfig config_;
  uint64_t size_bytes_ = 0;
  uint32_t groups_ = 0;
  Array arrays_[6];

  std::vector<uint32_t> sobs_;
  std::vector<Monitor> monitors_;
  std::vector<int32_t> group_head_;   // first armed monitor watching each group, -1 if none
  std::vector<int32_t> group_tail_;

  // Every write queues; a payload write re-entering the block while one applies only queues.
  TimedWrites<PendingWrite> pending_{[this](const PendingWrite& w, Picoseconds at) { apply(w, at); },
                                     {/*apply_if_due_and_idle=*/false, /*notify_earliest=*/false,
                                      /*queue_while_applying=*/true}};

  std::vector<std::unique_ptr<PayloadSlot>> slots_;
  std::vector<uint32_t> free_slots_;
  uint32_t in_flight_ = 0;

  SyncManagerStats stats_;
  SyncManagerObserver* observer_ = nullptr;
};

}  // namespace hpusim::hw
