#include "hw/sram/hbm_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpusim::hw {

namespace {
// The most consecutive missed lines one fill reads.
constexpr uint32_t kMaxFillLines = 64;
}  // namespace

HbmCache::HbmCache(sc_core::sc_module_name name, const HbmCacheConfig& config, Sram& sram)
    : sc_module(name),
      socket("socket"),
      to_hbm("to_hbm"),
      config_(config),
      sram_(sram),
      tags_(config.cache_bytes / (uint64_t{config.ways} * config.line_bytes), config.ways),
      answers_(this, &HbmCache::answered),
      responses_(this, &HbmCache::respond) {
  socket.register_nb_transport_fw(this, &HbmCache::forward);
  socket.register_transport_dbg(this, &HbmCache::debug_transport);
  to_hbm.register_nb_transport_bw(this, &HbmCache::backward);
}

uint32_t HbmCache::allocate_request(tlm::tlm_generic_payload* trans, Picoseconds arrival) {
  uint32_t index;
  if (!free_requests_.empty()) {
    index = free_requests_.back();
    free_requests_.pop_back();
  } else {
    index = static_cast<uint32_t>(requests_.size());
    requests_.emplace_back();
  }
  requests_[index] = Request{trans, 1, arrival};   // the 1 is forward's own hold until it is done
  return index;
}

void HbmCache::finish(uint32_t index) {
  Request& request = requests_[index];
  if (--request.outstanding > 0) return;
  tlm::tlm_generic_payload* trans = request.trans;
  const Picoseconds done = request.done;
  request.trans = nullptr;
  free_requests_.push_back(index);
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  responses_.notify(*trans, phase, delay_until(done));
}

void HbmCache::drop_all_lines() {
  if (!idle()) {
    throw std::logic_error(std::string(name()) + ": lines dropped with a request in flight");
  }
  tags_.clear();
}

void HbmCache::respond(tlm::tlm_generic_payload& trans, const tlm::tlm_phase&) {
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_bw(trans, phase, delay);
}

uint32_t HbmCache::allocate_op(OpKind kind) {
  uint32_t index;
  if (!free_ops_.empty()) {
    index = free_ops_.back();
    free_ops_.pop_back();
  } else {
    index = static_cast<uint32_t>(ops_.size());
    ops_.push_back(std::make_unique<HbmOp>());
    op_of_[&ops_.back()->trans] = index;
  }
  HbmOp& op = *ops_[index];
  op.kind = kind;
  op.ways.clear();
  op.waiters.clear();
  return index;
}

void HbmCache::send(uint32_t index, tlm::tlm_command command, uint64_t address, uint64_t bytes, Picoseconds at) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  tlm::tlm_generic_payload& trans = ops_[index]->trans;
  trans.set_address(address);
  trans.set_data_length(static_cast<unsigned>(bytes));
  trans.set_streaming_width(static_cast<unsigned>(bytes));
  trans.set_data_ptr(scratch_.data());
  trans.set_byte_enable_ptr(nullptr);
  trans.set_dmi_allowed(false);
  if (command == tlm::TLM_WRITE_COMMAND) {
    // The HBM's store already holds these bytes (the data path is functional): the write carries
    // them unchanged and only takes its time.
    trans.set_command(tlm::TLM_READ_COMMAND);
    to_hbm->transport_dbg(trans);
  }
  trans.set_command(command);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = delay_until(at);
  to_hbm->nb_transport_fw(trans, phase, delay);
}

void HbmCache::write_back(uint64_t line, Picoseconds at) {
  ++stats_.write_backs;
  send(allocate_op(OpKind::kWriteBack), tlm::TLM_WRITE_COMMAND, line * config_.line_bytes, config_.line_bytes, at);
}

tlm::tlm_sync_enum HbmCache::forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const Picoseconds arrival = now_ps() + delay.value();
  const uint64_t length = trans.get_data_length();
  if (length == 0 || to_hbm->transport_dbg(trans) != length) {
    ++stats_.errors;
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time back = delay_until(arrival + config_.period_ps);
    socket->nb_transport_bw(trans, phase, back);
    return tlm::TLM_ACCEPTED;
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  const bool is_write = trans.is_write();
  const uint32_t request = allocate_request(&trans, arrival);
  const uint64_t line_bytes = config_.line_bytes;
  const uint64_t begin = trans.get_address();
  const uint64_t end = begin + length;

  // A run of consecutive read-missed lines, read from the HBM in one access.
  std::optional<uint32_t> run;
  auto flush_run = [&] {
    if (!run) return;
    HbmOp& op = *ops_[*run];
    const uint64_t bytes = op.ways.size() * line_bytes;
    ++stats_.fills;
    stats_.fill_bytes += bytes;
    const uint32_t index = *run;
    run.reset();
    send(index, tlm::TLM_READ_COMMAND, op.first_line * line_bytes, bytes, arrival);
  };
  auto direct = [&](uint64_t lo, uint64_t hi) {
    flush_run();
    const uint32_t index = allocate_op(OpKind::kDirect);
    ops_[index]->request = request;
    ++requests_[request].outstanding;
    send(index, is_write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND, lo, hi - lo, arrival);
  };

  for (uint64_t line = begin / line_bytes; line * line_bytes < end; ++line) {
    const uint64_t lo = std::max(begin, line * line_bytes);
    const uint64_t hi = std::min(end, (line + 1) * line_bytes);
    if (std::optional<uint32_t> way = tags_.find(line)) {
      ++(is_write ? stats_.write_hits : stats_.read_hits);
      if (is_write) tags_.set_dirty(line, *way);
      if (tags_.filling(line, *way)) {
        ++stats_.hits_under_fill;
        HbmOp& fill = *ops_[filling_.at(line)];
        fill.waiters.push_back(Waiter{request, static_cast<uint32_t>(line - fill.first_line)});
        ++requests_[request].outstanding;
      } else {
        Request& r = requests_[request];
        r.done = std::max(r.done, sram_.reserve_banks(line_offset_in_sram(line, *way) + lo % line_bytes, hi - lo, arrival));
      }
      continue;
    }
    ++(is_write ? stats_.write_misses : stats_.read_misses);
    if (is_write && hi - lo < line_bytes) {
      ++stats_.write_throughs;
      direct(lo, hi);
      continue;
    }
    std::optional<CacheTags::Victim> victim = tags_.install(line);
    if (!victim) {
      ++stats_.bypasses;
      direct(lo, hi);
      continue;
    }
    if (victim->evicted_dirty) write_back(victim->evicted_line, arrival);
    if (is_write) {
      tags_.set_dirty(line, victim->way);
      Request& r = requests_[request];
      r.done = std::max(r.done, sram_.reserve_banks(line_offset_in_sram(line, victim->way), line_bytes, arrival));
      continue;
    }
    if (run && (ops_[*run]->first_line + ops_[*run]->ways.size() != line || ops_[*run]->ways.size() == kMaxFillLines)) {
      flush_run();
    }
    if (!run) {
      run = allocate_op(OpKind::kFill);
      ops_[*run]->first_line = line;
    }
    HbmOp& fill = *ops_[*run];
    fill.waiters.push_back(Waiter{request, static_cast<uint32_t>(fill.ways.size())});
    fill.ways.push_back(victim->way);
    tags_.set_filling(line, victim->way, true);
    filling_[line] = *run;
    ++requests_[request].outstanding;
  }
  flush_run();
  finish(request);
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum HbmCache::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  answers_.notify(trans, phase, delay);
  return tlm::TLM_COMPLETED;
}

void HbmCache::answered(tlm::tlm_generic_payload& trans, const tlm::tlm_phase&) {
  const uint32_t index = op_of_.at(&trans);
  const Picoseconds at = now_ps();
  HbmOp& op = *ops_[index];
  if (op.kind == OpKind::kFill) {
    std::vector<Picoseconds> written(op.ways.size());
    for (size_t i = 0; i < op.ways.size(); ++i) {
      const uint64_t line = op.first_line + i;
      tags_.set_filling(line, op.ways[i], false);
      filling_.erase(line);
      written[i] = sram_.reserve_banks(line_offset_in_sram(line, op.ways[i]), config_.line_bytes, at);
    }
    // A waiter's data leaves with its line's write into the array.
    std::vector<Waiter> waiters;
    waiters.swap(op.waiters);
    free_ops_.push_back(index);
    for (const Waiter& w : waiters) {
      Request& r = requests_[w.request];
      r.done = std::max(r.done, written[w.line_index]);
      finish(w.request);
    }
  } else if (op.kind == OpKind::kDirect) {
    const uint32_t request = op.request;
    free_ops_.push_back(index);
    Request& r = requests_[request];
    r.done = std::max(r.done, at);
    finish(request);
  } else {
    free_ops_.push_back(index);
  }
}

unsigned HbmCache::debug_transport(tlm::tlm_generic_payload& trans) { return to_hbm->transport_dbg(trans); }

void HbmCache::register_stats(stats::Scope scope) {
  scope.formula("read_hits", "count", "lines read from the cache", [this] { return double(stats_.read_hits); });
  scope.formula("read_misses", "count", "lines read that were not in the cache", [this] { return double(stats_.read_misses); });
  scope.formula("write_hits", "count", "lines written in the cache", [this] { return double(stats_.write_hits); });
  scope.formula("write_misses", "count", "lines written that were not in the cache", [this] { return double(stats_.write_misses); });
  scope.formula("hits_under_fill", "count", "lines found while their fill was in flight",
                [this] { return double(stats_.hits_under_fill); });
  scope.formula("fills", "count", "HBM reads filling lines", [this] { return double(stats_.fills); });
  scope.formula("fill_bytes", "bytes", "bytes the fills read", [this] { return double(stats_.fill_bytes); });
  scope.formula("write_backs", "count", "dirty lines written back to the HBM", [this] { return double(stats_.write_backs); });
  scope.formula("write_throughs", "count", "partial-line write misses sent to the HBM",
                [this] { return double(stats_.write_throughs); });
  scope.formula("bypasses", "count", "pieces sent to the HBM because every way of their set was filling",
                [this] { return double(stats_.bypasses); });
  scope.formula("hit_rate", "ratio", "hit lines over accessed lines", [this] {
    const double hits = double(stats_.read_hits + stats_.write_hits);
    const double all = hits + double(stats_.read_misses + stats_.write_misses);
    return all > 0 ? hits / all : 0.0;
  });
}

}  // namespace hpusim::hw
