#include "hw/hbm/hbm_subsystem.h"

#include <algorithm>
#include <limits>

#include "hw/common/store_access.h"

namespace hpusim::hbm {
namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
}

HbmSubsystem::HbmSubsystem(sc_core::sc_module_name name, const SubsystemConfig& config)
    : sc_module(name),
      socket("socket"),
      config_(config),
      mapper_(config.organization, config.timing, config.controller),
      store_(std::string(basename()), config.base, mapper_.capacity_bytes()),
      calendar_(mapper_.total_channels()) {
  socket.register_nb_transport_fw(this, &HbmSubsystem::forward);
  socket.register_transport_dbg(this, &HbmSubsystem::debug_transport);
  const uint32_t channels = mapper_.total_channels();
  for (uint32_t ch = 0; ch < channels; ++ch) {
    controllers_.push_back(
        std::make_unique<ChannelController>(config.organization, config.timing, config.controller, ch));
  }
  overflow_.resize(channels);
  scheduled_.assign(channels, kNever);
  SC_HAS_PROCESS(HbmSubsystem);
  SC_METHOD(run_scheduler);
  sensitive << wake_;
  dont_initialize();
  for (uint32_t ch = 0; ch < channels; ++ch) reschedule(ch, 0);
}

double HbmSubsystem::channel_peak_bytes_per_second() const {
  const Timing& t = config_.timing;
  return double(config_.organization.pseudo_channels) * t.burst_bytes * 1e12 / (double(t.nBL) * t.tck_ps);
}

double HbmSubsystem::peak_bytes_per_second() const { return channel_peak_bytes_per_second() * controllers_.size(); }

hw::Picoseconds HbmSubsystem::unloaded_read_latency_ps() const {
  const Timing& t = config_.timing;
  return hw::Picoseconds{t.nRCDRD + t.nCL + t.nBL} * t.tck_ps;
}

hw::Picoseconds HbmSubsystem::row_hit_latency_ps() const {
  const Timing& t = config_.timing;
  return hw::Picoseconds{t.nCL + t.nBL} * t.tck_ps;
}

hw::Picoseconds HbmSubsystem::row_conflict_latency_ps() const {
  const Timing& t = config_.timing;
  return hw::Picoseconds{t.nRP + t.nRCDRD + t.nCL + t.nBL} * t.tck_ps;
}

bool HbmSubsystem::move_data(tlm::tlm_generic_payload& trans) {
  if (hw::apply_to_store(store_, trans, trans.get_address())) return true;
  ++stats_.errors;
  return false;
}

void HbmSubsystem::respond_error(tlm::tlm_generic_payload& trans, hw::Picoseconds at) {
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = hw::delay_until(at);
  socket->nb_transport_bw(trans, phase, delay);
}

uint32_t HbmSubsystem::allocate_parent() {
  if (!free_parents_.empty()) {
    uint32_t index = free_parents_.back();
    free_parents_.pop_back();
    return index;
  }
  parents_.emplace_back();
  return static_cast<uint32_t>(parents_.size() - 1);
}

tlm::tlm_sync_enum HbmSubsystem::forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const hw::Picoseconds arrival = hw::now_ps() + delay.value();
  if (!move_data(trans)) {
    respond_error(trans, arrival + config_.timing.tck_ps);
    return tlm::TLM_ACCEPTED;
  }
  const bool is_write = trans.is_write();
  const uint64_t length = trans.get_data_length();
  ++stats_.requests;
  if (is_write) {
    ++stats_.writes;
    stats_.write_bytes += length;
  } else {
    ++stats_.reads;
    stats_.read_bytes += length;
  }

  const uint32_t parent_index = allocate_parent();
  Parent& parent = parents_[parent_index];
  parent.trans = &trans;
  parent.remaining = 0;
  parent.done_cycle = 0;

  const uint64_t arrival_cycle = std::max(cycle_ceil(arrival), current_cycle_);
  const uint64_t interleave = mapper_.interleave_bytes();
  const uint64_t burst = mapper_.burst_bytes();
  uint64_t offset = trans.get_address() - config_.base;
  uint64_t end = offset + length;
  while (offset < end) {
    // One channel request per interleave chunk: its bursts are consecutive columns of one row.
    uint64_t chunk_end = std::min(end, (offset / interleave + 1) * interleave);
    uint64_t first_burst = offset / burst;
    uint64_t last_burst = (chunk_end - 1) / burst;
    Request request;
    request.id = parent_index;
    request.is_write = is_write;
    request.addr = mapper_.map(first_burst * burst);
    request.bursts = static_cast<uint32_t>(last_burst - first_burst + 1);
    request.arrival_cycle = arrival_cycle;
    ++parent.remaining;
    ++stats_.channel_requests;
    submit(request.addr.global_channel(), request, posted_);
    offset = chunk_end;
  }
  // Answered only now: a response may start a new request (re-entrantly), and every chunk of this
  // one must be counted in `remaining` first.
  std::vector<Completion> posted;
  posted.swap(posted_);
  for (const Completion& completion : posted) complete(completion);
  return tlm::TLM_ACCEPTED;
}

void HbmSubsystem::accept(ChannelController& controller, const Request& request, std::vector<Completion>& posted) {
  controller.enqueue(request);
  if (request.is_write && controller.posted_writes()) {
    posted.push_back(Completion{request.id, std::max(request.arrival_cycle, controller.last_cycle()) + 1});
  }
}

void HbmSubsystem::submit(uint32_t channel, const Request& request, std::vector<Completion>& posted) {
  ChannelController& controller = *controllers_[channel];
  if (overflow_[channel].empty() && controller.can_accept(request)) {
    accept(controller, request, posted);
  } else {
    ++stats_.backpressured;
    overflow_[channel].push_back(request);
  }
  reschedule(channel, request.arrival_cycle);
}

void HbmSubsystem::reschedule(uint32_t channel, uint64_t not_before) {
  uint64_t next = controllers_[channel]->next_event_cycle();
  if (next == kNever) return;
  next = std::max(next, not_before);
  if (next >= scheduled_[channel]) return;
  scheduled_[channel] = next;
  calendar_.push(next, channel);
  if (!in_scheduler_) wake_.notify(hw::delay_until(calendar_.top().first * config_.timing.tck_ps));
}

void HbmSubsystem::run_scheduler() {
  ++stats_.wakeups;
  in_scheduler_ = true;
  const uint64_t now_cycle = hw::now_ps() / config_.timing.tck_ps;
  current_cycle_ = now_cycle;
  while (!calendar_.empty() && calendar_.top().first <= now_cycle) {
    const auto [cycle, channel] = calendar_.top();
    calendar_.pop();
    if (scheduled_[channel] != cycle) continue;  // superseded by an earlier entry
    scheduled_[channel] = kNever;
    ChannelController& controller = *controllers_[channel];
    completions_.clear();
    controller.advance(now_cycle, completions_);
    std::deque<Request>& waiting = overflow_[channel];
    while (!waiting.empty() && controller.can_accept(waiting.front())) {
      Request request = waiting.front();
      waiting.pop_front();
      request.arrival_cycle = std::max(request.arrival_cycle, now_cycle);
      accept(controller, request, completions_);
    }
    // Responses may make initiators issue new requests right here (re-entrantly).
    for (const Completion& completion : completions_) complete(completion);
    reschedule(channel, now_cycle + 1);
  }
  in_scheduler_ = false;
  if (!calendar_.empty()) wake_.notify(hw::delay_until(calendar_.top().first * config_.timing.tck_ps));
}

void HbmSubsystem::complete(const Completion& completion) {
  Parent& parent = parents_[completion.id];
  parent.done_cycle = std::max(parent.done_cycle, completion.done_cycle);
  if (--parent.remaining > 0) return;
  tlm::tlm_generic_payload* trans = parent.trans;
  const uint64_t done_cycle = parent.done_cycle;
  parent.trans = nullptr;
  free_parents_.push_back(static_cast<uint32_t>(completion.id));
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = hw::delay_until(done_cycle * config_.timing.tck_ps);
  socket->nb_transport_bw(*trans, phase, delay);
}

unsigned HbmSubsystem::debug_transport(tlm::tlm_generic_payload& trans) {
  return move_data(trans) ? trans.get_data_length() : 0;
}

void HbmSubsystem::register_stats(stats::Scope scope) {
  scope.formula("requests", "count", "requests received", [this] { return double(stats_.requests); });
  scope.formula("read_bytes", "bytes", "bytes read", [this] { return double(stats_.read_bytes); });
  scope.formula("write_bytes", "bytes", "bytes written", [this] { return double(stats_.write_bytes); });
  scope.formula("channel_requests", "count", "requests after splitting at interleave boundaries",
                [this] { return double(stats_.channel_requests); });
  scope.formula("backpressured", "count", "channel requests that waited for controller queue space",
                [this] { return double(stats_.backpressured); });
  scope.formula("errors", "count", "requests answered with an error", [this] { return double(stats_.errors); });
  for (uint32_t ch = 0; ch < channels(); ++ch) {
    const ChannelController& c = controller(ch);
    stats::Scope s = scope.scope("ch" + std::to_string(ch));
    s.formula("read_bursts", "count", "RD commands", [&c] { return double(c.read_bursts()); });
    s.formula("write_bursts", "count", "WR commands", [&c] { return double(c.write_bursts()); });
    s.formula("activates", "count", "ACT commands", [&c] { return double(c.activates()); });
    s.formula("precharges", "count", "PRE commands", [&c] { return double(c.precharges()); });
    s.formula("refreshes", "count", "refresh commands (REF and REFSB)", [&c] { return double(c.refreshes()); });
    s.formula("per_bank_refreshes", "count", "single-bank REFSB commands", [&c] { return double(c.per_bank_refreshes()); });
    s.formula("row_hits", "count", "requests that found their row open", [&c] { return double(c.row_hits()); });
    s.formula("row_misses", "count", "requests that activated a closed bank", [&c] { return double(c.row_misses()); });
    s.formula("row_conflicts", "count", "requests that closed another row first", [&c] { return double(c.row_conflicts()); });
    s.formula("busy_data_cycles", "cycles", "data-bus cycles carrying bursts", [&c] { return double(c.busy_data_cycles()); });
    s.formula("mode_switches", "count", "read/write drain-mode changes", [&c] { return double(c.mode_switches()); });
  }
}

}  // namespace hpusim::hbm
