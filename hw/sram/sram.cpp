#include "hw/sram/sram.h"

#include <algorithm>

#include "hw/common/store_access.h"

namespace hpusim::hw {

Sram::Sram(sc_core::sc_module_name name, const SramConfig& config)
    : sc_module(name), socket("socket"), config_(config), store_(std::string(basename()), config.base, config.size_bytes) {
  socket.register_nb_transport_fw(this, &Sram::forward);
  socket.register_transport_dbg(this, &Sram::debug_transport);
  banks_.assign(config_.banks, BandwidthServer(config_.bank_width_bytes, config_.period_ps));
}

double Sram::peak_bytes_per_second() const {
  return double(config_.banks) * config_.bank_width_bytes * 1e12 / double(config_.period_ps);
}

Picoseconds Sram::unloaded_latency_ps(uint64_t bytes) const {
  // Chunks spread over the banks in parallel; the busiest bank decides.
  uint64_t chunks = (bytes + config_.interleave_bytes - 1) / config_.interleave_bytes;
  uint64_t per_bank_chunks = (chunks + config_.banks - 1) / config_.banks;
  uint64_t per_chunk_bytes = std::min<uint64_t>(bytes, config_.interleave_bytes);
  uint64_t cycles_per_chunk = (per_chunk_bytes + config_.bank_width_bytes - 1) / config_.bank_width_bytes;
  return (per_bank_chunks * cycles_per_chunk + config_.latency_cycles) * config_.period_ps;
}

bool Sram::move_data(tlm::tlm_generic_payload& trans) {
  if (apply_to_store(store_, trans, trans.get_address())) return true;
  ++stats_.errors;
  return false;
}

tlm::tlm_sync_enum Sram::forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const Picoseconds arrival = now_ps() + delay.value();
  Picoseconds done = arrival + config_.period_ps;
  if (move_data(trans)) {
    const uint64_t length = trans.get_data_length();
    if (trans.is_write()) {
      ++stats_.writes;
      stats_.write_bytes += length;
    } else {
      ++stats_.reads;
      stats_.read_bytes += length;
    }
    done = reserve_banks(trans.get_address() - config_.base, length, arrival);
  }
  tlm::tlm_phase response = tlm::BEGIN_RESP;
  sc_core::sc_time back = delay_until(done);
  socket->nb_transport_bw(trans, response, back);
  return tlm::TLM_ACCEPTED;
}

Picoseconds Sram::reserve_banks(uint64_t offset, uint64_t length, Picoseconds arrival) {
  Picoseconds done = arrival;
  uint64_t remaining = length;
  while (remaining > 0) {
    uint64_t in_chunk = std::min<uint64_t>(remaining, config_.interleave_bytes - offset % config_.interleave_bytes);
    BandwidthServer& bank = banks_[(offset / config_.interleave_bytes) % config_.banks];
    uint64_t waited_before = bank.waited_ps();
    // A bank moves whole lines: a partial or unaligned chunk still occupies every line it touches.
    const uint64_t first_line = offset / config_.bank_width_bytes;
    const uint64_t last_line = (offset + in_chunk - 1) / config_.bank_width_bytes;
    done = std::max(done, bank.reserve(arrival, (last_line - first_line + 1) * config_.bank_width_bytes));
    stats_.bank_wait_ps += bank.waited_ps() - waited_before;
    offset += in_chunk;
    remaining -= in_chunk;
  }
  // A partial line still occupies the bank for a whole cycle.
  done = std::max(done, arrival + config_.period_ps);
  return done + Picoseconds{config_.latency_cycles} * config_.period_ps;
}

unsigned Sram::debug_transport(tlm::tlm_generic_payload& trans) {
  return move_data(trans) ? trans.get_data_length() : 0;
}

void Sram::register_stats(stats::Scope scope) {
  scope.formula("reads", "count", "read accesses", [this] { return double(stats_.reads); });
  scope.formula("writes", "count", "write accesses", [this] { return double(stats_.writes); });
  scope.formula("read_bytes", "bytes", "bytes read", [this] { return double(stats_.read_bytes); });
  scope.formula("write_bytes", "bytes", "bytes written", [this] { return double(stats_.write_bytes); });
  scope.formula("bank_wait_ps", "ps", "time accesses waited for a busy bank", [this] { return double(stats_.bank_wait_ps); });
}

}  // namespace hpusim::hw
