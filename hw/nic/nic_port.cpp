#include "hw/nic/nic_port.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "arch/hex.h"

namespace hpusim::hw {

namespace {

uint64_t join(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

bool known_register(uint64_t offset) {
  switch (offset) {
    case NicPort::kCfg: case NicPort::kStatus: case NicPort::kErrCause: case NicPort::kAddrLo: case NicPort::kAddrHi:
    case NicPort::kSize: case NicPort::kCompAddrLo: case NicPort::kCompAddrHi: case NicPort::kCompWdata:
    case NicPort::kCommit: case NicPort::kNonSecureProps: case NicPort::kPeer:
      return true;
    default:
      return false;
  }
}

}  // namespace

NicPortConfig nic_port_config_from(const preset::Card& card, uint32_t port) {
  const auto& n = card.nic();
  if (port >= n.ports()) {
    throw std::invalid_argument("NIC port " + std::to_string(port) + " does not exist on " + card.name() + " (nic.ports " +
                                std::to_string(n.ports()) + ")");
  }
  NicPortConfig c;
  c.name = "nic" + std::to_string(port);
  c.port = port;
  c.gbps = n.gbps_per_port();
  c.mtu_bytes = n.mtu_bytes();
  c.packet_overhead_bytes = n.packet_overhead_bytes();
  c.latency_ps = Picoseconds{n.latency_ns()} * 1000;
  c.rx_buffer_packets = n.rx_buffer_packets();
  c.tx_window_packets = n.tx_window_packets();
  c.queue_depth = n.queue_depth();
  c.max_burst_bytes = card.dma().max_burst_bytes();
  return c;
}

Picoseconds nic_wire_ps(uint64_t payload, const NicPortConfig& config) {
  // bits / (gbps * 1e9) s = bytes * 8000 / gbps ps, rounded up (a packet never takes less).
  const uint64_t bytes = payload + config.packet_overhead_bytes;
  return (bytes * 8000 + config.gbps - 1) / config.gbps;
}

// ---------------------------------------------------------------------------------------------
// Construction, registers, link
// ---------------------------------------------------------------------------------------------

NicPort::NicPort(const NicPortConfig& config) : NicPort(sc_core::sc_module_name(config.name.c_str()), config) {}

NicPort::NicPort(sc_core::sc_module_name name, const NicPortConfig& config)
    : sc_module(name), tx("tx"), rx("rx"), config_(config), bus_("bus"), regs_(size_bytes() / 4, 0) {
  const std::string who = "NIC port '" + config_.name + "': ";
  if (config_.name.empty()) throw std::invalid_argument("NIC port needs a name");
  if (config_.gbps == 0) throw std::invalid_argument(who + "gbps must be positive");
  if (config_.mtu_bytes == 0) throw std::invalid_argument(who + "mtu_bytes must be positive");
  if (config_.rx_buffer_packets == 0) throw std::invalid_argument(who + "rx_buffer_packets must be at least 1");
  if (config_.tx_window_packets == 0) throw std::invalid_argument(who + "tx_window_packets must be at least 1");
  if (config_.queue_depth == 0) throw std::invalid_argument(who + "queue_depth must be at least 1");
  if (config_.max_burst_bytes == 0 || (config_.max_burst_bytes & (config_.max_burst_bytes - 1)) != 0)
    throw std::invalid_argument(who + "max_burst_bytes must be a power of two");
  bus_.set_client(this);
  rx.register_nb_transport_fw(this, &NicPort::receive);
  tx.register_nb_transport_bw(this, &NicPort::backward);
  SC_HAS_PROCESS(NicPort);
  SC_METHOD(apply_due);
  sensitive << pending_.event();
  dont_initialize();
  SC_METHOD(arrive);
  sensitive << arrival_event_;
  dont_initialize();
  SC_THREAD(transmitter);
}

void NicPort::connect(NicPort& a, NicPort& b) {
  if (&a == &b) throw std::invalid_argument("NIC port '" + a.config_.name + "' cannot be joined to itself");
  if (a.peer_ || b.peer_)
    throw std::invalid_argument("NIC ports '" + a.config_.name + "' and '" + b.config_.name + "': one is already joined");
  a.tx.bind(b.rx);
  b.tx.bind(a.rx);
  a.peer_ = &b;
  b.peer_ = &a;
  a.credits_ = a.initial_credits_ = b.config_.rx_buffer_packets;
  b.credits_ = b.initial_credits_ = a.config_.rx_buffer_packets;
}

void NicPort::mark_remote(uint32_t peer_address, uint32_t peer_rx_buffer_packets) {
  if (peer_ || switched_ || remote_) throw std::invalid_argument("NIC port '" + config_.name + "' is already joined");
  remote_ = true;
  remote_address_ = peer_address;
  credits_ = initial_credits_ = peer_rx_buffer_packets;
}

void NicPort::attach_to_switch(uint32_t credits) {
  if (peer_ || switched_ || remote_) throw std::invalid_argument("NIC port '" + config_.name + "' is already joined");
  switched_ = true;
  credits_ = initial_credits_ = credits;
}

bool NicPort::read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) {
  if (!known_register(offset)) return false;
  pending_.apply_due(at_ps);
  if (offset == kStatus) {
    const uint64_t sends = sends_.size() + unacked_.size(), recvs = filling_.size();
    value = (engine_idle() ? 0u : 1u << 31) | (static_cast<uint32_t>(std::min<uint64_t>(recvs, 0x7FFF)) << 16) |
            static_cast<uint32_t>(std::min<uint64_t>(sends, 0xFFFF));
    return true;
  }
  value = regs_[offset / 4];
  return true;
}

bool NicPort::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (!known_register(offset)) return false;
  pending_.submit(offset, value, at_ps);
  return true;
}

void NicPort::apply_due() { pending_.on_event(); }

void NicPort::apply(uint32_t offset, uint32_t value, Picoseconds at) {
  switch (offset) {
    case kStatus: return;   // read-only
    case kErrCause: regs_[offset / 4] &= ~value; return;
    case kCommit: regs_[offset / 4] = value; commit(value, at); return;
    default: regs_[offset / 4] = value; return;
  }
}

void NicPort::commit(uint32_t value, Picoseconds at) {
  ++stats_.commits;
  const uint32_t op = (value & kCommitOpMask) >> kCommitOpShift;
  if ((regs_[kCfg / 4] & 1u) == 0) return;   // disabled: ignored
  if (op != static_cast<uint32_t>(NicOp::Send) && op != static_cast<uint32_t>(NicOp::Recv)) {
    regs_[kErrCause / 4] |= kErrBadCommit;
    ++stats_.failed;
    return;
  }
  NicOperation o;
  o.op = static_cast<NicOp>(op);
  o.address = join(regs_[kAddrHi / 4], regs_[kAddrLo / 4]);
  o.bytes = regs_[kSize / 4];
  o.completion = (value & kCommitCompEn) != 0;
  o.completion_address = join(regs_[kCompAddrHi / 4], regs_[kCompAddrLo / 4]);
  o.completion_data = regs_[kCompWdata / 4];
  o.peer = regs_[kPeer / 4];
  o.committed_ps = at;
  const bool send = o.op == NicOp::Send;
  if ((send ? sends_.size() : filling_.size()) >= config_.queue_depth) {
    regs_[kErrCause / 4] |= kErrQueueOverflow;
    ++stats_.overflows;
    return;
  }
  o.id = send ? next_send_id_++ : next_recv_id_++;
  if (send) {
    sends_.push_back(o);
    tx_event_.notify(sc_core::SC_ZERO_TIME);
  } else {
    recvs_[recv_key(o.peer)].push_back(o);
    filling_[o.id] = RecvState{o, 0, false, false};
    place();
  }
}

bool NicPort::engine_idle() const {
  return sends_.empty() && unacked_.empty() && filling_.empty() && completing_.empty();
}

uint32_t NicPort::engine_room() const {
  const size_t used = std::max(sends_.size(), filling_.size());
  return used >= config_.queue_depth ? 0 : static_cast<uint32_t>(config_.queue_depth - used);
}

void NicPort::notify_if_idle() {
  room_event_.notify(sc_core::SC_ZERO_TIME);
  if (engine_idle()) idle_event_.notify(sc_core::SC_ZERO_TIME);
}

tlm::tlm_sync_enum NicPort::backward(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
  return tlm::TLM_COMPLETED;   // the link answers nothing: a packet is delivered by its request
}

// ---------------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------------

// Packets of the queued sends, read from memory, up to tx_window_packets ahead of the wire.
void NicPort::fill_window() {
  while (window_.size() < config_.tx_window_packets && !sends_.empty()) {
    const NicOperation& send = sends_.front();
    if (!send_has_packet_) unacked_[send.id] = SendState{send, 0, false, false};
    TxPacket& p = window_.emplace_back();
    p.send_id = send.id;
    p.offset = send_offset_;
    p.bytes = static_cast<uint32_t>(std::min<uint64_t>(config_.mtu_bytes, send.bytes - send_offset_));
    p.payload.resize(p.bytes);
    for (uint32_t at = 0; at < p.bytes;) {
      const uint64_t address = send.address + p.offset + at;
      const uint32_t room = config_.max_burst_bytes - static_cast<uint32_t>(address % config_.max_burst_bytes);
      const uint32_t n = std::min(room, p.bytes - at);
      DmaPort::Access& a = bus_.acquire(false, address, n);
      a.kind = kPayloadRead | epoch_ << 8;
      a.tag = reinterpret_cast<uint64_t>(&p);
      a.tag2 = at;
      ++p.reads_left;
      bus_.issue(a);
      at += n;
    }
    send_offset_ += p.bytes;
    send_has_packet_ = true;
    if (send_offset_ >= send.bytes) {   // the send's last packet (a 0-byte send is one empty packet)
      sends_.pop_front();
      send_offset_ = 0;
      send_has_packet_ = false;
      room_event_.notify(sc_core::SC_ZERO_TIME);
    }
  }
}

void NicPort::transmitter() {
  while (true) {
    fill_window();
    if (window_.empty() || window_.front().reads_left > 0) {
      wait(tx_event_);
      continue;
    }
    TxPacket& p = window_.front();
    SendState& state = unacked_.at(p.send_id);
    const bool last = p.offset + p.bytes >= state.op.bytes;
    if (p.failed || state.failed) {   // a read failed: the send's packets go nowhere
      state.failed = true;
      state.all_sent = state.all_sent || last;
      const uint64_t id = p.send_id;
      window_.pop_front();
      finish_send(id);
      continue;
    }
    if (credits_ == 0) {
      const Picoseconds since = now_ps();
      while (credits_ == 0) wait(tx_event_);
      stats_.credit_stall_ps += now_ps() - since;
      continue;
    }
    if (wire_free_ps_ > now_ps()) {
      wait(delay_until(wire_free_ps_));
      continue;
    }
    const Picoseconds start = now_ps(), wire = nic_wire_ps(p.bytes, config_);
    wire_free_ps_ = start + wire;
    --credits_;
    ++state.in_flight;
    state.all_sent = last;
    NicHeader header;
    header.kind = NicHeader::Kind::Data;
    header.epoch = connection_;
    header.send_id = p.send_id;
    header.source = address_;
    header.dest = switched_ ? state.op.peer : peer_ != nullptr ? peer_->address_ : remote_address_;
    wire_.set_extension(&header);
    wire_.set_command(tlm::TLM_WRITE_COMMAND);
    wire_.set_address(0);
    wire_.set_data_ptr(p.payload.data());
    wire_.set_data_length(p.bytes);
    wire_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = ps_to_time(wire + config_.latency_ps);
    tx->nb_transport_fw(wire_, phase, delay);
    wire_.clear_extension(&header);
    ++stats_.tx_packets;
    stats_.tx_bytes += p.bytes;
    stats_.tx_wire_bytes += p.bytes + config_.packet_overhead_bytes;
    stats_.tx_busy_ps += wire;
    if (stats_.tx_packets == 1) stats_.first_tx_ps = start;
    stats_.last_tx_ps = wire_free_ps_;
    if (observer_) observer_->packet_sent(config_.port, p.bytes, start, wire_free_ps_);
    window_.pop_front();
  }
}

void NicPort::finish_send(uint64_t id) {
  const auto it = unacked_.find(id);
  if (it == unacked_.end() || !it->second.all_sent || it->second.in_flight != 0) return;
  const SendState state = it->second;
  unacked_.erase(it);
  complete(state.op, state.failed, "a read of its buffer failed");
}

// ---------------------------------------------------------------------------------------------
// Receiving
// ---------------------------------------------------------------------------------------------

tlm::tlm_sync_enum NicPort::receive(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const NicHeader* header = trans.get_extension<NicHeader>();
  if (header == nullptr) throw std::logic_error("NIC port '" + config_.name + "': a transaction without a NIC header");
  RxPacket* packet = nullptr;
  if (header->kind == NicHeader::Kind::Data) {
    packet = new RxPacket;
    packet->send_id = header->send_id;
    packet->source = header->source;
    packet->epoch = header->epoch;
    packet->payload.assign(trans.get_data_ptr(), trans.get_data_ptr() + trans.get_data_length());
  }
  const Picoseconds at = now_ps() + delay.value();
  arrivals_.push_back(Arrival{at, arrival_seq_++, header->kind, header->send_id, packet, header->source, header->epoch, false});
  std::push_heap(arrivals_.begin(), arrivals_.end(), std::greater<Arrival>());
  arrival_event_.notify(delay_until(arrivals_.front().at));
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return tlm::TLM_COMPLETED;
}

void NicPort::arrive() {
  bool placed = false;
  while (!arrivals_.empty() && arrivals_.front().at <= now_ps()) {
    std::pop_heap(arrivals_.begin(), arrivals_.end(), std::greater<Arrival>());
    const Arrival a = arrivals_.back();
    arrivals_.pop_back();
    // A direct link's credits and acknowledgements of a connection before this port's reset
    // answer packets it has forgotten (a switch's credits are its own: they count on).
    const bool current = switched_ || a.epoch == connection_;
    if (a.kind == NicHeader::Kind::Credit) {   // the far end's buffer has room for one more
      if (!current) continue;
      ++credits_;
      tx_event_.notify(sc_core::SC_ZERO_TIME);
      continue;
    }
    if (a.kind == NicHeader::Kind::Reset) {
      peer_reset(a.source, a.epoch);
      continue;
    }
    if (a.kind == NicHeader::Kind::Ack) {   // the destination wrote one of this port's packets
      if (!current) continue;
      const auto it = unacked_.find(a.send_id);
      if (it != unacked_.end()) {
        --it->second.in_flight;
        finish_send(a.send_id);
      }
      continue;
    }
    if (a.dropped) {   // on the wire when this port was reset: its room goes back to the sender
      send_credit(a.packet->epoch);
      delete a.packet;
      continue;
    }
    if (!switched_ && a.packet->epoch < peer_connection_[a.packet->source]) {   // its sender was reset since
      delete a.packet;
      continue;
    }
    if (rx_buffer_.size() + writing_.size() - stale_writing_ >= config_.rx_buffer_packets) {
      delete a.packet;
      throw std::logic_error("NIC port '" + config_.name + "': a packet arrived without a credit");
    }
    ++stats_.rx_packets;
    stats_.rx_bytes += a.packet->payload.size();
    rx_buffer_.push_back(a.packet);
    placed = true;
  }
  if (placed) place();
  if (!arrivals_.empty()) arrival_event_.notify(delay_until(arrivals_.front().at));
}

void NicPort::pop_filled(std::deque<NicOperation>& queue, uint64_t& filled) {
  while (!queue.empty() && filled >= queue.front().bytes) {   // a 0-byte receive at once
    const uint64_t id = queue.front().id;
    filling_.at(id).filled = true;
    queue.pop_front();
    filled = 0;
    room_event_.notify(sc_core::SC_ZERO_TIME);
    finish_recv(id);
  }
}

// Received bytes into the posted receives: a packet's bytes fill the receives of its source's
// queue in order and are written through the fabric; a packet whose writes have all completed
// gives its credit back and is acknowledged. A packet whose source has no receive posted waits in
// the buffer (holding its credit), and so do the packets of that source behind it.
void NicPort::place() {
  std::set<uint32_t> blocked;
  for (auto it = rx_buffer_.begin(); it != rx_buffer_.end();) {
    RxPacket* packet = *it;
    const uint32_t key = recv_key(packet->source);
    if (blocked.count(key)) {
      ++it;
      continue;
    }
    std::deque<NicOperation>& queue = recvs_[key];
    uint64_t& filled = recv_filled_[key];
    while (packet->placed < packet->payload.size()) {
      pop_filled(queue, filled);
      if (queue.empty()) break;
      const NicOperation& recv = queue.front();
      RecvState& state = filling_.at(recv.id);
      const uint64_t n = std::min<uint64_t>(packet->payload.size() - packet->placed, recv.bytes - filled);
      for (uint64_t at = 0; at < n;) {
        const uint64_t address = recv.address + filled + at;
        const uint32_t room = config_.max_burst_bytes - static_cast<uint32_t>(address % config_.max_burst_bytes);
        const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(room, n - at));
        DmaPort::Access& a = bus_.acquire(true, address, len);
        std::memcpy(a.buffer.data(), packet->payload.data() + packet->placed + at, len);
        a.kind = kPayloadWrite | epoch_ << 8;
        a.tag = reinterpret_cast<uint64_t>(packet);
        a.tag2 = recv.id;
        ++packet->writes_left;
        ++state.writes;
        bus_.issue(a);
        at += len;
      }
      packet->placed += n;
      filled += n;
    }
    pop_filled(queue, filled);
    if (packet->placed < packet->payload.size()) {
      blocked.insert(key);
      ++it;
      continue;
    }
    it = rx_buffer_.erase(it);
    if (packet->writes_left == 0) {
      packet_written(packet);   // an empty packet
    } else {
      writing_.insert(packet);
    }
  }
  for (auto& [key, queue] : recvs_) pop_filled(queue, recv_filled_[key]);
}

void NicPort::packet_written(RxPacket* packet) {
  if (packet->stale) {
    --stale_writing_;
  } else {
    send_credit(packet->epoch);
    send_ack(packet->source, packet->send_id, packet->epoch);
  }
  writing_.erase(packet);
  delete packet;
}

void NicPort::send_credit(uint32_t epoch) { send_control(NicHeader::Kind::Credit, 0, 0, epoch); }

void NicPort::send_ack(uint32_t source, uint64_t send_id, uint32_t epoch) {
  send_control(NicHeader::Kind::Ack, source, send_id, epoch);
}

void NicPort::peer_reset(uint32_t source, uint32_t epoch) {
  peer_connection_[source] = std::max(peer_connection_[source], epoch);
  // Its packets waiting here are dropped without credits (its credits started again); those being
  // written finish, unanswered.
  for (auto it = rx_buffer_.begin(); it != rx_buffer_.end();) {
    RxPacket* packet = *it;
    if (packet->source != source || packet->epoch >= epoch) {
      ++it;
    } else if (packet->writes_left == 0) {
      delete packet;
      it = rx_buffer_.erase(it);
    } else {   // partly written: the rest of it is not placed
      packet->payload.resize(packet->placed);
      packet->stale = true;
      ++stale_writing_;
      ++it;
    }
  }
  for (RxPacket* packet : writing_) {
    if (packet->source == source && packet->epoch < epoch && !packet->stale) {
      packet->stale = true;
      ++stale_writing_;
    }
  }
}

// Credits and acknowledgements take the link's latency and no wire time (README.md).
void NicPort::send_control(NicHeader::Kind kind, uint32_t dest, uint64_t send_id, uint32_t epoch) {
  if (!connected()) return;
  NicHeader header;
  header.kind = kind;
  header.epoch = epoch;
  header.send_id = send_id;
  header.source = address_;
  header.dest = dest;
  tlm::tlm_generic_payload message;
  message.set_command(tlm::TLM_IGNORE_COMMAND);
  message.set_data_length(0);
  message.set_extension(&header);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = ps_to_time(config_.latency_ps);
  tx->nb_transport_fw(message, phase, delay);
  message.clear_extension(&header);
}

void NicPort::finish_recv(uint64_t id) {
  const auto it = filling_.find(id);
  if (it == filling_.end() || !it->second.filled || it->second.writes != 0) return;
  const RecvState state = it->second;
  filling_.erase(it);
  complete(state.op, state.failed, "a write into its buffer failed");
}

// ---------------------------------------------------------------------------------------------
// Fabric responses and completion
// ---------------------------------------------------------------------------------------------

void NicPort::access_done(DmaPort::Access& access) {
  if ((access.kind >> 8) != epoch_) {   // a request of an operation reset() dropped
    bus_.release(access);
    return;
  }
  switch (access.kind & 0xFF) {
    case kPayloadRead: {
      TxPacket& p = *reinterpret_cast<TxPacket*>(access.tag);
      if (access.ok()) {
        std::memcpy(p.payload.data() + access.tag2, access.buffer.data(), access.get_data_length());
      } else {
        p.failed = true;
        regs_[kErrCause / 4] |= kErrReadFailed;
      }
      --p.reads_left;
      bus_.release(access);
      tx_event_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    case kPayloadWrite: {
      RxPacket* packet = reinterpret_cast<RxPacket*>(access.tag);
      RecvState& state = filling_.at(access.tag2);
      if (!access.ok()) {
        state.failed = true;
        regs_[kErrCause / 4] |= kErrWriteFailed;
      }
      --state.writes;
      const uint64_t recv = access.tag2;
      bus_.release(access);
      if (--packet->writes_left == 0 && packet->placed == packet->payload.size()) packet_written(packet);
      finish_recv(recv);
      return;
    }
    case kCompletionWrite: {
      const NicOperation op = completing_.at(access.tag);
      completing_.erase(access.tag);
      const bool ok = access.ok();
      bus_.release(access);
      if (!ok) {
        regs_[kErrCause / 4] |= kErrCompletionFailed;
        ++stats_.failed;
        if (observer_) observer_->operation_failed(config_.port, op, "its completion message failed", now_ps());
      } else {
        ++stats_.completion_messages;
        ++(op.op == NicOp::Send ? stats_.sends : stats_.recvs);
        if (observer_) observer_->operation_done(config_.port, op, now_ps());
      }
      notify_if_idle();
      return;
    }
    default:
      bus_.release(access);
  }
}

void NicPort::complete(const NicOperation& op, bool failed, const std::string& message) {
  if (failed) {
    ++stats_.failed;
    if (observer_) observer_->operation_failed(config_.port, op, message, now_ps());
    notify_if_idle();
    return;
  }
  if (op.completion) {
    DmaPort::Access& a = bus_.acquire(true, op.completion_address, 4);
    std::memcpy(a.buffer.data(), &op.completion_data, 4);
    a.kind = kCompletionWrite | epoch_ << 8;
    a.tag = next_completion_++;
    completing_[a.tag] = op;
    bus_.issue(a);
    return;
  }
  ++(op.op == NicOp::Send ? stats_.sends : stats_.recvs);
  if (observer_) observer_->operation_done(config_.port, op, now_ps());
  notify_if_idle();
}

void NicPort::reset() {
  ++epoch_;
  pending_.clear();
  std::fill(regs_.begin(), regs_.end(), 0u);
  sends_.clear();
  send_offset_ = 0;
  send_has_packet_ = false;
  window_.clear();
  unacked_.clear();
  recvs_.clear();
  recv_filled_.clear();
  filling_.clear();
  completing_.clear();
  // Dropped packets free their buffer space (credits back), but are not acknowledged; so do the
  // packets still on the wire to this port when they arrive.
  for (RxPacket* packet : rx_buffer_) {
    if (!packet->stale) send_credit(packet->epoch);
    delete packet;
  }
  rx_buffer_.clear();
  for (RxPacket* packet : writing_) {
    if (!packet->stale) send_credit(packet->epoch);
    delete packet;
  }
  writing_.clear();
  stale_writing_ = 0;
  for (Arrival& a : arrivals_)
    if (a.kind == NicHeader::Kind::Data) a.dropped = true;
  if (!switched_) {   // a new connection: the peer drops what it holds of the old one
    ++connection_;
    credits_ = initial_credits_;
    send_control(NicHeader::Kind::Reset, 0, 0, connection_);
  }
  tx_event_.notify(sc_core::SC_ZERO_TIME);
  notify_if_idle();
}

NicPortStats NicPort::stats() const { return stats_; }

void NicPort::register_stats(stats::Scope scope) {
  const auto add = [&](const char* name, const char* unit, const char* desc, uint64_t NicPortStats::*field) {
    scope.formula(name, unit, desc, [this, field] { return double(stats().*field); });
  };
  add("commits", "count", "COMMIT writes", &NicPortStats::commits);
  add("sends", "count", "sends completed", &NicPortStats::sends);
  add("recvs", "count", "receives completed", &NicPortStats::recvs);
  add("failed", "count", "operations that failed", &NicPortStats::failed);
  add("tx_packets", "count", "packets sent", &NicPortStats::tx_packets);
  add("tx_bytes", "bytes", "payload bytes sent", &NicPortStats::tx_bytes);
  add("tx_wire_bytes", "bytes", "bytes on the wire sent (payload and per-packet overhead)", &NicPortStats::tx_wire_bytes);
  add("rx_packets", "count", "packets received", &NicPortStats::rx_packets);
  add("rx_bytes", "bytes", "payload bytes received", &NicPortStats::rx_bytes);
  add("tx_busy_ps", "ps", "time the wire carried this port's packets", &NicPortStats::tx_busy_ps);
  add("credit_stall_ps", "ps", "time a packet waited for a credit (the peer's receive buffer full)",
      &NicPortStats::credit_stall_ps);
  scope.formula("tx_gbps", "Gb/s", "payload sent per time from the first packet's start to the last one's end", [this] {
    const NicPortStats s = stats();
    return s.last_tx_ps > s.first_tx_ps ? double(s.tx_bytes) * 8000.0 / double(s.last_tx_ps - s.first_tx_ps) : 0.0;
  });
}

}  // namespace hpusim::hw
