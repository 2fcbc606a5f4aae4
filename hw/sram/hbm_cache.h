// The part of the SRAM that caches the HBM (Gaudi 3's DCORE caches): a memory-side, set-associative,
// write-back cache of `line_bytes` lines in front of the HBM subsystem. The fabric sends it every
// access to the HBM range. A hit is served from the SRAM's banks; a read miss allocates the line and
// fills it from the HBM (consecutive missed lines of one request in one HBM read), and later
// requests for a line being filled wait for that fill; a whole-line write allocates without a fill;
// a partial-line write that misses goes through to the HBM; an evicted dirty line is written back.
//
// Data stays where it always was: the HBM's backing store, updated when a request is accepted (the
// memory protocol's functional data path). The cache models only time, so it can never hold a
// stale copy.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/common/payload_event_queue.h"
#include "hw/sram/cache_tags.h"
#include "hw/sram/sram.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct HbmCacheConfig {
  uint64_t cache_bytes = 0;
  uint32_t ways = 16;
  uint32_t line_bytes = 128;
  uint64_t data_offset = 0;      // where the lines live in the SRAM (after its scratchpad)
  Picoseconds period_ps = 640;   // the SRAM's clock: an error answers one cycle after arriving
};

struct HbmCacheStats {
  uint64_t read_hits = 0, read_misses = 0;       // lines
  uint64_t write_hits = 0, write_misses = 0;     // lines
  uint64_t hits_under_fill = 0;                  // lines found while their fill was in flight
  uint64_t fills = 0, fill_bytes = 0;            // HBM reads that fill lines
  uint64_t write_backs = 0;                      // dirty lines evicted to the HBM
  uint64_t write_throughs = 0;                   // partial-line write misses sent to the HBM
  uint64_t bypasses = 0;                         // pieces sent to the HBM because every way was filling
  uint64_t errors = 0;
};

class HbmCache : public sc_core::sc_module {
 public:
  // `sram` owns the banks the lines occupy (shared with its scratchpad).
  HbmCache(sc_core::sc_module_name name, const HbmCacheConfig& config, Sram& sram);

  tlm_utils::simple_target_socket<HbmCache> socket;        // the HBM range, from the fabric
  tlm_utils::simple_initiator_socket<HbmCache> to_hbm;     // the HBM subsystem behind it

  const HbmCacheStats& stats() const { return stats_; }
  const HbmCacheConfig& config() const { return config_; }
  const CacheTags& tags() const { return tags_; }
  // Starts cold: every line dropped, the dirty ones without their write-back (the HBM's store
  // always holds the data, so only the timing of those writes is lost). For a benchmark between
  // cases; refused (std::logic_error) with a request in flight.
  void drop_all_lines();
  // No request of the fabric's and no fill, direct access or write-back of its own in flight.
  bool idle() const { return free_requests_.size() == requests_.size() && free_ops_.size() == ops_.size(); }
  void register_stats(stats::Scope scope);

 private:
  struct Request {
    tlm::tlm_generic_payload* trans = nullptr;
    uint32_t outstanding = 0;
    Picoseconds done = 0;
  };
  struct Waiter {
    uint32_t request = 0;
    uint32_t line_index = 0;   // which of the fill's lines
  };
  enum class OpKind { kFill, kDirect, kWriteBack };
  struct HbmOp {
    tlm::tlm_generic_payload trans;
    OpKind kind = OpKind::kFill;
    uint64_t first_line = 0;
    std::vector<uint32_t> ways;     // kFill: the way of each line
    std::vector<Waiter> waiters;    // kFill: the requests' lines waiting for it
    uint32_t request = 0;           // kDirect: the request it serves
  };

  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  // An HBM access's answer, handled at its time (so the lines a fill writes take the banks in time
  // order with the hits, not ahead of them).
  void answered(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase);
  unsigned debug_transport(tlm::tlm_generic_payload& trans);

  uint32_t allocate_request(tlm::tlm_generic_payload* trans, Picoseconds arrival);
  void finish(uint32_t request);
  uint32_t allocate_op(OpKind kind);
  // Sends an op's HBM access of [address, address + bytes), arriving at `at`.
  void send(uint32_t op, tlm::tlm_command command, uint64_t address, uint64_t bytes, Picoseconds at);
  void write_back(uint64_t line, Picoseconds at);
  uint64_t line_offset_in_sram(uint64_t line, uint32_t way) const {
    return config_.data_offset + tags_.slot(line, way) * config_.line_bytes;
  }

  HbmCacheConfig config_;
  Sram& sram_;
  CacheTags tags_;
  std::vector<Request> requests_;
  std::vector<uint32_t> free_requests_;
  std::vector<std::unique_ptr<HbmOp>> ops_;
  std::vector<uint32_t> free_ops_;
  std::unordered_map<const tlm::tlm_generic_payload*, uint32_t> op_of_;
  std::unordered_map<uint64_t, uint32_t> filling_;   // line -> its fill op
  std::vector<unsigned char> scratch_;   // the HBM copies an op's bytes when it accepts it
  PayloadEventQueue<HbmCache> answers_;
  // Answers to the fabric, sent at their time: the fabric's ports take responses in the order they
  // come, so one sent ahead of time would hold back those due before it.
  PayloadEventQueue<HbmCache> responses_;
  void respond(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase);
  HbmCacheStats stats_;
};

}  // namespace hpusim::hw
