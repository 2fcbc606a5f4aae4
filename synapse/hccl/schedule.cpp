#include "synapse/hccl/schedule.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace hpusim::synapse::hccl {
namespace {

constexpr uint64_t kMaxDmaPiece = 1ull << 30;   // a LIN_DMA moves at most 4 GiB - 1: copies go in 1 GiB pieces
constexpr uint16_t kMaxCount = 0x7FFF;          // a sync object counts to 15 bits

struct Span {
  uint64_t begin = 0, end = 0;   // elements
  uint64_t size() const { return end - begin; }
};
// Slice s of `count` elements cut in `slices`, and its piece j of `stripes`.
Span slice_of(uint64_t count, unsigned slices, unsigned s) { return {count * s / slices, count * (s + 1) / slices}; }
Span piece_of(uint64_t count, unsigned slices, unsigned s, unsigned stripes, unsigned j) {
  const Span slice = slice_of(count, slices, s);
  return {slice.begin + slice.size() * j / stripes, slice.begin + slice.size() * (j + 1) / stripes};
}

// What a message carries.
enum class Tag : uint8_t {
  Scatter,      // reduce phase: `from`'s data of the chunk `to` owns
  Gather,       // all_reduce: `from`'s reduced chunk to everyone
  AllGather,    // `from`'s piece
  AllToAll,     // `from`'s chunk for `to`
  RootChunk,    // broadcast: chunk `to` from the root
  RootOwn,      // broadcast: the root's own chunk
  PassOn,       // broadcast: `from` passes the chunk it got from the root on
  Barrier,
  RingScatter,  // ring all_reduce, step t: `from`'s partial sum of chunk from - t to from + 1
  RingGather,   // ring all_reduce, step t: the reduced chunk from + 1 - t to from + 1
  PointToPoint, // send / recv
};
struct Message {
  Tag tag;
  unsigned from, to, slice, link;
  unsigned step = 0;   // ring steps
};
struct Cond {
  uint32_t sob = 0;
  uint16_t target = 0;
};

class Planner {
 public:
  Planner(const Topology& t, unsigned rank, const Request& q, const Config& c)
      : t_(t), r_(rank), n_(t.ranks), q_(q), c_(c), es_(reduction::element_bytes(q.type)),
        stripes_(t.stripes()), slots_(std::max(1u, c.slots)), engines_(static_cast<unsigned>(c.engines.size())) {}

  std::string run(Program* out);

 private:
  // ---- sync objects and queues ----
  uint32_t new_sob() {
    counts_.push_back(0);
    return static_cast<uint32_t>(counts_.size() - 1);
  }
  uint16_t bump(uint32_t sob) {
    if (counts_[sob] == kMaxCount) {
      if (error_.empty()) {
        error_ = std::string(name(q_.collective)) + " of " + std::to_string(q_.count) +
                 " elements needs more than 32767 operations on one sync object; a larger slice "
                 "(HPUSIM_HCCL_SLICE_BYTES) takes fewer";
      }
      return kMaxCount;
    }
    return ++counts_[sob];
  }
  QueueOps& queue(regs::QueueId id) {
    const auto [it, fresh] = queue_index_.emplace(id, p_.queues.size());
    if (fresh) {
      p_.queues.push_back({id, {}});
      p_.queues.back().ops.push_back({OpKind::Wait, p_.start_sob, 1});
    }
    return p_.queues[it->second];
  }
  QueueOps& nic(unsigned peer, unsigned link) {
    return queue(regs::make_queue(regs::QueueKind::Nic, t_.links[r_][peer][link].port, 0));
  }
  QueueOps& engine(unsigned e) { return queue(c_.engines[e % engines_]); }
  static void wait(QueueOps& q, const Cond& c) {
    if (c.target > 0) q.ops.push_back({OpKind::Wait, c.sob, c.target});
  }
  void send(unsigned peer, unsigned link, uint64_t source, uint64_t bytes) {
    Op op{OpKind::Send, sends_sob_, 0, source, 0, bytes};
    nic(peer, link).ops.push_back(op);
    bump(sends_sob_);
    p_.nic_bytes += bytes;
  }
  Cond recv(unsigned peer, unsigned link, uint64_t destination, uint64_t bytes) {
    auto [it, fresh] = recv_sob_.emplace(std::make_pair(peer, link), 0);
    if (fresh) it->second = new_sob();
    Op op{OpKind::Recv, it->second, 0, 0, destination, bytes};
    nic(peer, link).ops.push_back(op);
    return {it->second, bump(it->second)};
  }
  void copy(unsigned e, uint64_t source, uint64_t destination, uint64_t bytes) {
    for (uint64_t done = 0; done < bytes; done += kMaxDmaPiece) {
      engine(e).ops.push_back({OpKind::Copy, 0, 0, source + done, destination + done, std::min(kMaxDmaPiece, bytes - done)});
    }
  }
  void reduce(unsigned e, uint64_t source, uint64_t destination, uint64_t bytes) {
    for (uint64_t done = 0; done < bytes; done += kMaxDmaPiece) {
      engine(e).ops.push_back({OpKind::Reduce, 0, 0, source + done, destination + done, std::min(kMaxDmaPiece, bytes - done),
                               q_.op, q_.type});
    }
  }
  Cond signal(unsigned e, uint32_t sob) {
    engine(e).ops.push_back({OpKind::Signal, sob});
    return {sob, bump(sob)};
  }

  // ---- the layout of the collective's data ----
  unsigned peer_index(unsigned x) const { return x < r_ ? x : x - 1; }
  uint64_t slot_bytes() const { return (c_.slice_bytes + 2 * 256 - 1) / 256 * 256; }
  uint64_t slot(unsigned x, unsigned s) const {
    return c_.scratch + (uint64_t{peer_index(x)} * slots_ + s % slots_) * slot_bytes();
  }
  // Chunks of the reduce phase and of broadcast: elements of chunk k and its offset in the buffer.
  uint64_t chunk_count(unsigned k) const {
    switch (q_.collective) {
      case Collective::ReduceScatter: return q_.count;
      default: return q_.count * (k + 1) / n_ - q_.count * k / n_;
    }
  }
  uint64_t chunk_offset(unsigned k) const {
    switch (q_.collective) {
      case Collective::ReduceScatter: return uint64_t{k} * stride();
      default: return q_.count * k / n_;
    }
  }
  uint64_t stride() const { return q_.stride != 0 ? q_.stride : q_.count; }
  // Where the owner accumulates its chunk (the result's place).
  uint64_t accumulator() const {
    switch (q_.collective) {
      case Collective::AllReduce: return q_.recv + es_ * chunk_offset(r_);
      case Collective::Reduce: return r_ == q_.root ? q_.recv + es_ * chunk_offset(r_) : c_.staging;
      default: return q_.recv;
    }
  }
  bool in_place() const { return accumulator() == q_.send + es_ * chunk_offset(r_); }
  // Elements a message carries and its slice partition.
  uint64_t carried(const Message& m) const {
    switch (m.tag) {
      case Tag::Scatter: return chunk_count(m.to);
      case Tag::Gather: return chunk_count(m.from);
      case Tag::RootChunk: return chunk_count(m.to);
      case Tag::RootOwn: return chunk_count(q_.root);
      case Tag::PassOn: return chunk_count(m.from);
      case Tag::Barrier: return 1;
      case Tag::RingScatter: case Tag::RingGather: return chunk_count(ring_chunk(m));
      default: return q_.count;
    }
  }
  Span piece(const Message& m) const { return piece_of(carried(m), slices_, m.slice, stripes_, m.link); }
  uint64_t bytes(const Message& m) const {
    return m.tag == Tag::Barrier ? 4 : es_ * piece(m).size();
  }

  // ---- conversations ----
  // The messages between ranks a < b on link j, in the order both post them.
  std::vector<Message> conversation(unsigned a, unsigned b, unsigned j) const;
  // This rank's side of a message.
  void post_send(const Message& m);
  void post_recv(const Message& m);
  void reduce_phase();
  // The ring all_reduce (Algorithm::Ring).
  bool ring() const { return q_.collective == Collective::AllReduce && c_.algorithm == Algorithm::Ring && n_ > 1; }
  unsigned ring_chunk(const Message& m) const {
    return m.tag == Tag::RingScatter ? (m.from + n_ - m.step % n_) % n_ : (m.from + 1 + n_ - m.step % n_) % n_;
  }
  unsigned ring_index(unsigned step, unsigned s) const { return step * slices_ + s; }   // reduced counters' order
  uint64_t ring_slot(unsigned step, unsigned s) const {
    return c_.scratch + (uint64_t{step} * slots_ + s % slots_) * slot_bytes();
  }
  void ring_reductions();
  Cond received(Tag tag, unsigned from, unsigned step, unsigned s, unsigned j) const {
    const auto got = received_.find({tag, from, step, s, j});
    return got == received_.end() ? Cond{} : got->second;
  }
  // Slice s is reduced once every engine has done its part of it.
  void wait_reduced(QueueOps& q, unsigned s) const {
    for (unsigned e = 0; e < engines_; ++e) wait(q, {reduced_sob_[e], static_cast<uint16_t>(s + 1)});
  }

  const Topology& t_;
  const unsigned r_, n_;
  const Request& q_;
  const Config& c_;
  const uint64_t es_;
  const unsigned stripes_, slots_, engines_;
  unsigned slices_ = 1;
  Program p_;
  std::map<regs::QueueId, size_t> queue_index_;
  std::vector<uint16_t> counts_;
  uint32_t sends_sob_ = 0, copies_sob_ = 0;
  std::map<std::pair<unsigned, unsigned>, uint32_t> recv_sob_;   // (peer, link)
  std::vector<uint32_t> reduced_sob_;                            // per engine
  std::map<std::tuple<Tag, unsigned, unsigned, unsigned, unsigned>, Cond> received_;   // (tag, from, step, slice, link)
  std::string error_;
};

std::vector<Message> Planner::conversation(unsigned a, unsigned b, unsigned j) const {
  std::vector<Message> out;
  const auto both = [&](Tag tag, unsigned s) {
    out.push_back({tag, a, b, s, j});
    out.push_back({tag, b, a, s, j});
  };
  if (ring()) {
    // Each direction of the pair that is a ring edge, step by step and slice by slice.
    for (const Tag tag : {Tag::RingScatter, Tag::RingGather})
      for (unsigned t = 0; t + 1 < n_; ++t)
        for (unsigned s = 0; s < slices_; ++s)
          for (const auto& [from, to] : {std::make_pair(a, b), std::make_pair(b, a)})
            if ((from + 1) % n_ == to) out.push_back({tag, from, to, s, j, t});
    return out;
  }
  switch (q_.collective) {
    case Collective::AllReduce: {
      if (q_.part == Part::ReduceScatter) {
        for (unsigned s = 0; s < slices_; ++s) both(Tag::Scatter, s);
        break;
      }
      if (q_.part == Part::AllGather) {
        for (unsigned s = 0; s < slices_; ++s) both(Tag::Gather, s);
        break;
      }
      // The gather of slice g follows the scatter of slice g + slots: by then it is reduced.
      unsigned gathered = 0;
      for (unsigned s = 0; s < slices_; ++s) {
        both(Tag::Scatter, s);
        for (; gathered + slots_ <= s; ++gathered) both(Tag::Gather, gathered);
      }
      for (; gathered < slices_; ++gathered) both(Tag::Gather, gathered);
      break;
    }
    case Collective::ReduceScatter:
      for (unsigned s = 0; s < slices_; ++s) both(Tag::Scatter, s);
      break;
    case Collective::Reduce: {
      // As all_reduce's, the reduced slices going to the root only.
      const auto to_root = [&](unsigned s) {
        if (a == q_.root) out.push_back({Tag::Gather, b, a, s, j});
        if (b == q_.root) out.push_back({Tag::Gather, a, b, s, j});
      };
      unsigned gathered = 0;
      for (unsigned s = 0; s < slices_; ++s) {
        both(Tag::Scatter, s);
        for (; gathered + slots_ <= s; ++gathered) to_root(gathered);
      }
      for (; gathered < slices_; ++gathered) to_root(gathered);
      break;
    }
    case Collective::AllGather:
      for (unsigned s = 0; s < slices_; ++s) both(Tag::AllGather, s);
      break;
    case Collective::AllToAll:
      for (unsigned s = 0; s < slices_; ++s) both(Tag::AllToAll, s);
      break;
    case Collective::Broadcast:
      for (unsigned s = 0; s < slices_; ++s) {
        if (a == q_.root || b == q_.root) {
          const unsigned other = a == q_.root ? b : a;
          out.push_back({Tag::RootChunk, q_.root, other, s, j});
          out.push_back({Tag::RootOwn, q_.root, other, s, j});
        } else {
          both(Tag::PassOn, s);
        }
      }
      break;
    case Collective::Barrier:
      if (j == 0) both(Tag::Barrier, 0);
      break;
    case Collective::Send: case Collective::Recv: {
      const unsigned from = q_.collective == Collective::Send ? r_ : q_.root;
      const unsigned to = q_.collective == Collective::Send ? q_.root : r_;
      if ((a == from && b == to) || (a == to && b == from))
        for (unsigned s = 0; s < slices_; ++s) out.push_back({Tag::PointToPoint, from, to, s, j});
      break;
    }
  }
  return out;
}

void Planner::post_send(const Message& m) {
  const Span pc = piece(m);
  uint64_t source = 0;
  switch (m.tag) {
    case Tag::Scatter: source = q_.send + es_ * (chunk_offset(m.to) + pc.begin); break;
    case Tag::Gather:
      if (q_.part != Part::AllGather) wait_reduced(nic(m.to, m.link), m.slice);
      source = accumulator() + es_ * pc.begin;
      break;
    case Tag::AllGather: source = q_.send + es_ * pc.begin; break;
    case Tag::AllToAll: source = q_.send + es_ * (uint64_t{m.to} * stride() + pc.begin); break;
    case Tag::RootChunk: source = q_.send + es_ * (chunk_offset(m.to) + pc.begin); break;
    case Tag::RootOwn: source = q_.send + es_ * (chunk_offset(q_.root) + pc.begin); break;
    case Tag::PassOn: {
      wait(nic(m.to, m.link), received(Tag::RootChunk, q_.root, 0, m.slice, m.link));
      source = q_.recv + es_ * (chunk_offset(r_) + pc.begin);
      break;
    }
    case Tag::Barrier: source = c_.scratch + c_.scratch_bytes(n_) - Config::kBarrierBytes; break;
    case Tag::PointToPoint: source = q_.send + es_ * pc.begin; break;
    case Tag::RingScatter:   // step 0 its own data, then the partial sum the last step made
      if (m.step == 0) {
        source = q_.send + es_ * (chunk_offset(ring_chunk(m)) + pc.begin);
      } else {
        wait_reduced(nic(m.to, m.link), ring_index(m.step - 1, m.slice));
        source = q_.recv + es_ * (chunk_offset(ring_chunk(m)) + pc.begin);
      }
      break;
    case Tag::RingGather:   // step 0 the chunk it reduced last, then what the last step brought
      if (m.step == 0) {
        wait_reduced(nic(m.to, m.link), ring_index(n_ - 2, m.slice));
      } else {
        wait(nic(m.to, m.link), received(Tag::RingGather, (r_ + n_ - 1) % n_, m.step - 1, m.slice, m.link));
      }
      source = q_.recv + es_ * (chunk_offset(ring_chunk(m)) + pc.begin);
      break;
  }
  send(m.to, m.link, source, bytes(m));
}

void Planner::post_recv(const Message& m) {
  const Span pc = piece(m);
  uint64_t destination = 0;
  switch (m.tag) {
    case Tag::Scatter: {
      const Span slice = slice_of(carried(m), slices_, m.slice);
      if (m.from == 0 && !in_place()) {
        destination = accumulator() + es_ * pc.begin;   // the first term lands where the sum is made
      } else {
        if (m.slice >= slots_) wait_reduced(nic(m.from, m.link), m.slice - slots_);   // the slot is free
        destination = slot(m.from, m.slice) + es_ * (pc.begin - slice.begin);
      }
      break;
    }
    case Tag::Gather: destination = q_.recv + es_ * (chunk_offset(m.from) + pc.begin); break;
    case Tag::AllGather: destination = q_.recv + es_ * (uint64_t{m.from} * stride() + pc.begin); break;
    case Tag::AllToAll: destination = q_.recv + es_ * (uint64_t{m.from} * stride() + pc.begin); break;
    case Tag::RootChunk: destination = q_.recv + es_ * (chunk_offset(r_) + pc.begin); break;
    case Tag::RootOwn: destination = q_.recv + es_ * (chunk_offset(q_.root) + pc.begin); break;
    case Tag::PassOn: destination = q_.recv + es_ * (chunk_offset(m.from) + pc.begin); break;
    case Tag::Barrier: destination = c_.scratch + c_.scratch_bytes(n_) - Config::kBarrierBytes + 8; break;
    case Tag::RingScatter:
      // Out of place straight into the result's place (the own data is added there); in place
      // into a slot (the own data sits in the result's place until the sum is copied over it).
      if (in_place()) {
        const Span slice = slice_of(carried(m), slices_, m.slice);
        if (m.slice >= slots_) wait_reduced(nic(m.from, m.link), ring_index(m.step, m.slice - slots_));
        destination = ring_slot(m.step, m.slice) + es_ * (pc.begin - slice.begin);
      } else {
        destination = q_.recv + es_ * (chunk_offset(ring_chunk(m)) + pc.begin);
      }
      break;
    case Tag::RingGather: destination = q_.recv + es_ * (chunk_offset(ring_chunk(m)) + pc.begin); break;
    case Tag::PointToPoint: destination = q_.recv + es_ * pc.begin; break;
  }
  received_[{m.tag, m.from, m.step, m.slice, m.link}] = recv(m.from, m.link, destination, bytes(m));
}

// The owner's reductions, slice by slice, each slice cut across every engine (engine e reduces
// its part of every slice, in order), each part in rank order.
void Planner::reduce_phase() {
  const uint64_t count = chunk_count(r_);
  const uint64_t own = q_.send + es_ * chunk_offset(r_);
  for (unsigned s = 0; s < slices_; ++s) {
    const Span slice = slice_of(count, slices_, s);
    for (unsigned e = 0; e < engines_; ++e) {
      const Span part{slice.begin + slice.size() * e / engines_, slice.begin + slice.size() * (e + 1) / engines_};
      const uint64_t bytes = es_ * part.size();
      const uint64_t at = es_ * (part.begin - slice.begin);   // in the slice
      const uint64_t acc = accumulator() + es_ * part.begin;
      const auto received_all = [&](unsigned k) {
        for (unsigned j = 0; j < stripes_; ++j) wait(engine(e), received(Tag::Scatter, k, 0, s, j));
      };
      if (bytes > 0) {
        // The sum is made in the result's place, but for an in-place rank other than 0, whose own
        // data sits there: it is made in rank 0's slot and copied over.
        const bool in_slot = in_place() && r_ != 0;
        const uint64_t sum = in_slot ? slot(0, s) + at : acc;
        if (r_ == 0) {
          if (!in_place()) copy(e, own + es_ * part.begin, sum, bytes);
        } else {
          received_all(0);
        }
        for (unsigned k = 1; k < n_; ++k) {
          if (k == r_) {
            reduce(e, own + es_ * part.begin, sum, bytes);
          } else {
            received_all(k);
            reduce(e, slot(k, s) + at, sum, bytes);
          }
        }
        if (in_slot) copy(e, sum, acc, bytes);
      }
      signal(e, reduced_sob_[e]);
    }
  }
}

// The ring's reductions: at step t the partial sum of chunk r - t - 1 from the predecessor, plus
// this rank's data (received first, so a chunk's sum runs along the ring from the chunk's rank),
// every slice cut across the engines.
void Planner::ring_reductions() {
  const unsigned pred = (r_ + n_ - 1) % n_;
  for (unsigned t = 0; t + 1 < n_; ++t) {
    const unsigned chunk = (r_ + 2 * n_ - t - 1) % n_;
    const uint64_t count = chunk_count(chunk);
    for (unsigned s = 0; s < slices_; ++s) {
      const Span slice = slice_of(count, slices_, s);
      for (unsigned e = 0; e < engines_; ++e) {
        const Span part{slice.begin + slice.size() * e / engines_, slice.begin + slice.size() * (e + 1) / engines_};
        const uint64_t bytes = es_ * part.size();
        const uint64_t place = q_.recv + es_ * (chunk_offset(chunk) + part.begin);   // the result's place
        const uint64_t own = q_.send + es_ * (chunk_offset(chunk) + part.begin);
        if (bytes > 0) {
          for (unsigned j = 0; j < stripes_; ++j) wait(engine(e), received(Tag::RingScatter, pred, t, s, j));
          if (in_place()) {
            const uint64_t sum = ring_slot(t, s) + es_ * (part.begin - slice.begin);
            reduce(e, own, sum, bytes);
            copy(e, sum, place, bytes);
          } else {
            reduce(e, own, place, bytes);
          }
        }
        signal(e, reduced_sob_[e]);
      }
    }
  }
}

std::string Planner::run(Program* out) {
  if (engines_ == 0) return "no DMA engine to copy and reduce with";
  p_.start_sob = new_sob();
  counts_[p_.start_sob] = 1;
  sends_sob_ = new_sob();
  copies_sob_ = new_sob();
  for (unsigned e = 0; e < engines_; ++e) reduced_sob_.push_back(new_sob());
  // Every chunk is cut into the same number of slices, so both ends of a link agree on them.
  uint64_t largest = 0;
  switch (q_.collective) {
    case Collective::AllGather: case Collective::AllToAll: case Collective::Send: case Collective::Recv:
      largest = q_.count;
      break;
    case Collective::Barrier: largest = 1; break;
    default:
      for (unsigned k = 0; k < n_; ++k) largest = std::max(largest, chunk_count(k));
  }
  slices_ = static_cast<unsigned>(std::max<uint64_t>(1, (largest * es_ + c_.slice_bytes - 1) / c_.slice_bytes));
  if (slices_ > kMaxCount) return std::string(name(q_.collective)) + ": " + std::to_string(slices_) + " slices are too many";

  // The conversations whose receives others' sends wait for come first: the root's (broadcast
  // passes on what came from the root), the predecessor's (the ring passes on what came from it).
  std::vector<unsigned> peers;
  if (q_.collective == Collective::Broadcast && r_ != q_.root) peers.push_back(q_.root);
  if (ring()) peers.push_back((r_ + n_ - 1) % n_);
  for (unsigned p = 0; p < n_; ++p)
    if (p != r_ && std::find(peers.begin(), peers.end(), p) == peers.end()) peers.push_back(p);
  for (const unsigned p : peers) {
    for (unsigned j = 0; j < stripes_; ++j) {
      for (const Message& m : conversation(std::min(r_, p), std::max(r_, p), j)) {
        if (bytes(m) == 0) continue;
        if (m.from == r_) post_send(m);
        if (m.to == r_) post_recv(m);
      }
    }
  }
  // Engine work: the reductions, or the rank's own part copied into place.
  switch (q_.collective) {
    case Collective::AllReduce: case Collective::ReduceScatter: case Collective::Reduce:
      if (q_.part == Part::AllGather) break;   // reduced already
      if (ring()) {
        ring_reductions();
      } else {
        reduce_phase();
      }
      break;
    case Collective::AllGather:
      if (q_.send != q_.recv + es_ * r_ * stride()) {
        copy(0, q_.send, q_.recv + es_ * r_ * stride(), es_ * q_.count);
        signal(0, copies_sob_);
      }
      break;
    case Collective::AllToAll:
      if (q_.send != q_.recv) {
        copy(0, q_.send + es_ * r_ * stride(), q_.recv + es_ * r_ * stride(), es_ * q_.count);
        signal(0, copies_sob_);
      }
      break;
    case Collective::Broadcast:
      if (r_ == q_.root && q_.send != q_.recv) {
        copy(0, q_.send, q_.recv, es_ * q_.count);
        signal(0, copies_sob_);
      }
      break;
    case Collective::Barrier: case Collective::Send: case Collective::Recv: break;
  }
  if (!error_.empty()) return error_;
  for (uint32_t sob = 0; sob < counts_.size(); ++sob)
    if (counts_[sob] > 0) p_.final_values.push_back({sob, counts_[sob]});
  p_.sob_count = static_cast<uint32_t>(counts_.size());
  *out = std::move(p_);
  return "";
}

}  // namespace

const char* name(Algorithm a) { return a == Algorithm::Ring ? "ring" : "direct"; }

const char* name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllToAll: return "all_to_all";
    case Collective::Barrier: return "barrier";
    case Collective::Send: return "send";
    case Collective::Recv: return "recv";
  }
  return "?";
}

uint64_t Config::scratch_bytes(unsigned ranks) const {
  const uint64_t slot = (slice_bytes + 2 * 256 - 1) / 256 * 256;
  return uint64_t{ranks > 0 ? ranks - 1 : 0} * std::max(1u, slots) * slot + kBarrierBytes;
}

std::string plan(const Topology& topology, unsigned rank, const Request& request, const Config& config, Program* out) {
  if (rank >= topology.ranks) return "rank " + std::to_string(rank) + " of " + std::to_string(topology.ranks);
  if (request.root >= topology.ranks) {
    return "root " + std::to_string(request.root) + ": the communicator has " + std::to_string(topology.ranks) + " ranks";
  }
  if ((request.collective == Collective::Send || request.collective == Collective::Recv) && request.root == rank) {
    return "peer " + std::to_string(rank) + " is this rank";
  }
  Planner planner(topology, rank, request, config);
  return planner.run(out);
}

}  // namespace hpusim::synapse::hccl

namespace hpusim::synapse::hccl {


Program chain(const std::vector<Program>& parts, const std::vector<std::vector<size_t>>& after,
              std::optional<regs::QueueId> join_queue) {
  Program out;
  out.start_sob = 0;
  out.sob_count = 1;
  out.has_join_queue = join_queue.has_value();
  if (join_queue) out.join_queue = *join_queue;
  std::map<regs::QueueId, size_t> index;
  std::map<uint32_t, uint16_t> finals{{0, 1}};
  for (const Program& p : parts) {
    for (const QueueOps& q : p.queues) {
      if (q.queue == join_queue) throw std::invalid_argument("hccl chain: the join queue is a part's queue");
    }
  }
  const auto ops_of = [&](regs::QueueId queue) -> std::vector<Op>& {
    const auto [it, fresh] = index.emplace(queue, out.queues.size());
    if (fresh) out.queues.push_back({queue, {}});
    return out.queues[it->second].ops;
  };
  std::vector<uint32_t> offset(parts.size());
  std::vector<int64_t> done(parts.size(), -1);   // a part's "done" sync object, once a later part needs it
  const auto renumbered = [&](size_t i, uint32_t sob) { return sob == parts[i].start_sob ? 0 : offset[i] + sob; };
  for (size_t i = 0; i < parts.size(); ++i) {
    const Program& p = parts[i];
    std::vector<uint32_t> waits;
    for (const size_t d : i < after.size() ? after[i] : std::vector<size_t>{}) {
      if (d >= i) throw std::invalid_argument("hccl chain: part " + std::to_string(i) + " waits for a later part");
      if (!join_queue) throw std::invalid_argument("hccl chain: parts that wait for others need a join queue");
      if (done[d] < 0) {
        done[d] = out.sob_count++;
        std::vector<Op>& join = ops_of(*join_queue);
        for (const auto& [sob, value] : parts[d].final_values)
          if (sob != parts[d].start_sob) join.push_back({OpKind::Wait, renumbered(d, sob), value});
        join.push_back({OpKind::Signal, static_cast<uint32_t>(done[d])});
        finals[static_cast<uint32_t>(done[d])] = 1;
      }
      waits.push_back(static_cast<uint32_t>(done[d]));
    }
    offset[i] = out.sob_count;
    for (const QueueOps& q : p.queues) {
      std::vector<Op>& ops = ops_of(q.queue);
      for (const uint32_t w : waits) ops.push_back({OpKind::Wait, w, 1});
      for (Op op : q.ops) {
        op.sob = renumbered(i, op.sob);
        ops.push_back(op);
      }
    }
    for (const auto& [sob, value] : p.final_values)
      if (sob != p.start_sob) finals[renumbered(i, sob)] = value;
    out.sob_count = offset[i] + p.sob_count;
    out.nic_bytes += p.nic_bytes;
  }
  out.final_values.assign(finals.begin(), finals.end());
  return out;
}

std::string to_text(const Program& program) {
  std::string out;
  const auto hexa = [](uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  for (const QueueOps& q : program.queues) {
    out += regs::queue_name(q.queue) + ":\n";
    for (const Op& op : q.ops) {
      switch (op.kind) {
        case OpKind::Wait: out += "  wait sob " + std::to_string(op.sob) + " >= " + std::to_string(op.target) + "\n"; break;
        case OpKind::Send: out += "  send " + hexa(op.source) + " " + std::to_string(op.bytes) + " -> sob " + std::to_string(op.sob) + "\n"; break;
        case OpKind::Recv: out += "  recv " + hexa(op.destination) + " " + std::to_string(op.bytes) + " -> sob " + std::to_string(op.sob) + "\n"; break;
        case OpKind::Copy: out += "  copy " + hexa(op.source) + " -> " + hexa(op.destination) + " " + std::to_string(op.bytes) + "\n"; break;
        case OpKind::Reduce: out += "  reduce " + hexa(op.source) + " -> " + hexa(op.destination) + " " + std::to_string(op.bytes) + "\n"; break;
        case OpKind::Signal: out += "  signal sob " + std::to_string(op.sob) + "\n"; break;
      }
    }
  }
  out += "final:";
  for (const auto& [sob, v] : program.final_values) out += " sob " + std::to_string(sob) + "=" + std::to_string(v);
  return out + "\n";
}

}  // namespace hpusim::synapse::hccl
