#include "synapse/hccl/hierarchy.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

namespace hpusim::synapse::hccl {
namespace {

// The scratch memory a part receives into: none, one of two halves for the box's parts (they
// alternate, so a box part overlaps the one before it), or the rail's.
enum class Region { None, Box, Rail };

class Builder {
 public:
  Builder(const Hierarchy& h, unsigned ranks, const Request& q, const Config& config, Stages* out)
      : h_(h), q_(q), config_(config), out_(out), boxes_(ranks / h.group),
        peer_region_(config.scratch_bytes(2) - Config::kBarrierBytes) {}

  unsigned boxes() const { return boxes_; }
  const std::string& error() const { return error_; }

  // A part on this rank's box or rail, after `deps` and after the last part that used its scratch;
  // `staging`: Config::staging (a reduce's).
  std::optional<size_t> box(Request r, Region region, std::vector<size_t> deps, uint64_t staging = 0) {
    return add(h_.box, h_.box_rank, r, region, std::move(deps), staging);
  }
  std::optional<size_t> rail(Request r, Region region, std::vector<size_t> deps, uint64_t staging = 0) {
    return add(h_.rail, h_.rail_rank, r, region, std::move(deps), staging);
  }

  // Stage functions run as a pipeline over `groups` slice groups: at step t stage s plans slice
  // group t - s, after the parts of the group's last stage that made any.
  using Stage = std::function<std::vector<size_t>(unsigned group, const std::vector<size_t>& after)>;
  void pipeline(unsigned groups, const std::vector<Stage>& stages) {
    std::vector<std::vector<size_t>> last(groups);
    for (unsigned t = 0; t + 1 < groups + stages.size(); ++t) {
      for (unsigned s = 0; s < stages.size(); ++s) {
        if (t < s || t - s >= groups || !error_.empty()) continue;
        std::vector<size_t> made = stages[s](t - s, last[t - s]);
        if (!made.empty()) last[t - s] = std::move(made);
      }
    }
  }

 private:
  std::optional<size_t> add(const Topology& topology, unsigned rank, const Request& r, Region region,
                            std::vector<size_t> deps, uint64_t staging) {
    if (!error_.empty()) return std::nullopt;
    Config c = config_;
    c.staging = staging;
    std::optional<size_t> key;
    if (region == Region::Box) {
      key = next_box_half_;
      next_box_half_ ^= 1;
      c.scratch += *key * (h_.group - 1) * peer_region_;
    } else if (region == Region::Rail) {
      key = 2;
      c.scratch += 2 * (h_.group - 1) * peer_region_;
    }
    if (key && last_user_[*key]) deps.push_back(*last_user_[*key]);
    Program program;
    if (std::string why = plan(topology, rank, r, c, &program); !why.empty()) {
      error_ = std::move(why);
      return std::nullopt;
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    out_->parts.push_back(std::move(program));
    out_->after.push_back(std::move(deps));
    const size_t index = out_->parts.size() - 1;
    if (key) last_user_[*key] = index;
    return index;
  }

  const Hierarchy& h_;
  const Request& q_;
  const Config& config_;
  Stages* out_;
  const unsigned boxes_;
  const uint64_t peer_region_;   // one peer's scratch slots
  size_t next_box_half_ = 0;
  std::array<std::optional<size_t>, 3> last_user_;   // box halves, rail
  std::string error_;
};

std::vector<size_t> list(std::optional<size_t> part) { return part ? std::vector<size_t>{*part} : std::vector<size_t>{}; }

struct Segment {
  uint64_t first = 0, count = 0;
};
Segment segment(uint64_t count, unsigned groups, unsigned j) {
  return {count * j / groups, count * (j + 1) / groups - count * j / groups};
}

// The slice groups a collective moving `bytes` per rank through the box is pipelined in: enough
// for each stage to cut every box rank's share into two slices or more, at most 4. Measured on
// hls2x2, all_reduce 32 MiB (busbw): 2 groups 167 GB/s, 4 groups 185, 8 groups (one slice per
// chunk) 172: each group adds a fill and a drain of the box's reductions.
unsigned slice_groups(uint64_t bytes, const Hierarchy& h, const Config& config) {
  const uint64_t per_group = uint64_t{h.group} * config.slice_bytes * 2;
  return static_cast<unsigned>(std::clamp<uint64_t>(bytes / std::max<uint64_t>(per_group, 1), 1, 4));
}

// A hierarchical reduce's staging: on the root's rail, its box's sum (at 0); then per slice group
// the chunk this rank reduces in the box's reduce (from box_chunks_at) and in the rail's (from
// rail_chunks_at), `box_chunk` and `rail_chunk` bytes apart.
struct ReduceStaging {
  uint64_t box_chunks_at = 0, rail_chunks_at = 0, box_chunk = 0, rail_chunk = 0, total = 0;
};
ReduceStaging reduce_staging(const Hierarchy& h, unsigned ranks, const Request& q, unsigned groups) {
  const uint64_t es = reduction::element_bytes(q.type), largest = (q.count + groups - 1) / groups;
  ReduceStaging s;
  s.box_chunk = Config::reduce_staging_bytes(largest, h.group, es);
  s.rail_chunk = Config::reduce_staging_bytes(largest, ranks / h.group, es);
  s.box_chunks_at = h.box_rank == q.root % h.group ? q.count * es : 0;
  s.rail_chunks_at = s.box_chunks_at + groups * s.box_chunk;
  s.total = s.rail_chunks_at + groups * s.rail_chunk;
  return s;
}

}  // namespace

uint64_t staging_bytes(const Hierarchy& h, unsigned ranks, const Request& q, const Config& config) {
  const uint64_t es = reduction::element_bytes(q.type);
  switch (q.collective) {
    case Collective::ReduceScatter: return uint64_t{ranks / h.group} * q.count * es;
    case Collective::Reduce: return reduce_staging(h, ranks, q, slice_groups(q.count * es, h, config)).total;
    case Collective::AllToAll: return uint64_t{ranks} * q.count * es;
    default: return 0;
  }
}

std::string plan_stages(const Hierarchy& h, unsigned ranks, const Request& q, const Config& config, uint64_t staging,
                        Stages* out) {
  *out = {};
  Builder b(h, ranks, q, config, out);
  const uint64_t es = reduction::element_bytes(q.type);
  const unsigned g = h.group, l = h.box_rank;
  const uint64_t c = q.count;
  const auto shifted = [&](uint64_t address, uint64_t elements) { return address + es * elements; };
  switch (q.collective) {
    case Collective::AllReduce: {
      const unsigned groups = slice_groups(c * es, h, config);
      b.pipeline(groups, {
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            Request r = q;
            r.part = Part::ReduceScatter;
            r.count = s.count;
            r.send = shifted(q.send, s.first);
            r.recv = shifted(q.recv, s.first);
            return list(b.box(r, Region::Box, after));
          },
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            const Segment chunk = segment(s.count, g, l);   // box rank l's chunk of the group
            if (chunk.count == 0) return std::vector<size_t>{};
            Request r = q;
            r.count = chunk.count;
            r.send = r.recv = shifted(q.recv, s.first + chunk.first);
            return list(b.rail(r, Region::Rail, after));
          },
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            Request r = q;
            r.part = Part::AllGather;
            r.count = s.count;
            r.send = r.recv = shifted(q.recv, s.first);
            return list(b.box(r, Region::None, after));
          },
      });
      break;
    }
    case Collective::ReduceScatter: {
      const unsigned groups = slice_groups(uint64_t{ranks} * c * es, h, config);
      b.pipeline(groups, {
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            std::vector<size_t> made;
            for (unsigned box = 0; box < b.boxes(); ++box) {   // box `box`'s chunks, summed over this box
              Request r = q;
              r.count = s.count;
              r.stride = c;
              r.send = shifted(q.send, uint64_t{box} * g * c + s.first);
              r.recv = shifted(staging, uint64_t{box} * c + s.first);
              if (const auto part = b.box(r, Region::Box, after)) made.push_back(*part);
            }
            return made;
          },
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            Request r = q;
            r.count = s.count;
            r.stride = c;
            r.send = shifted(staging, s.first);
            r.recv = shifted(q.recv, s.first);
            return list(b.rail(r, Region::Rail, after));
          },
      });
      break;
    }
    case Collective::AllGather: {
      const unsigned groups = slice_groups(uint64_t{ranks} * c * es, h, config);
      b.pipeline(groups, {
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            Request r = q;
            r.count = s.count;
            r.stride = uint64_t{g} * c;
            r.send = shifted(q.send, s.first);
            r.recv = shifted(q.recv, uint64_t{l} * c + s.first);
            return list(b.rail(r, Region::None, after));
          },
          [&](unsigned j, const std::vector<size_t>& after) {
            const Segment s = segment(c, groups, j);
            std::vector<size_t> made;
            for (unsigned box = 0; box < b.boxes(); ++box) {   // box `box`'s pieces, in place
              Request r = q;
              r.count = s.count;
              r.stride = c;
              r.recv = shifted(q.recv, uint64_t{box} * g * c + s.first);
              r.send = shifted(r.recv, uint64_t{l} * c);
              if (const auto part = b.box(r, Region::None, after)) made.push_back(*part);
            }
            return made;
          },
      });
      break;
    }
    case Collective::Broadcast: case Collective::Reduce: {
      const bool broadcast = q.collective == Collective::Broadcast;
      const unsigned root_box = q.root / g, root_rail = q.root % g;
      const unsigned groups = slice_groups(c * es, h, config);
      const ReduceStaging st = reduce_staging(h, ranks, q, groups);
      const auto rail_stage = [&](unsigned j, const std::vector<size_t>& after) {
        if (l != root_rail) return std::vector<size_t>{};
        const Segment s = segment(c, groups, j);
        Request r = q;
        r.root = root_box;
        r.count = s.count;
        r.send = shifted(broadcast ? q.send : staging, s.first);
        r.recv = shifted(q.recv, s.first);
        if (broadcast) return list(b.rail(r, Region::None, after));
        return list(b.rail(r, Region::Rail, after, staging + st.rail_chunks_at + j * st.rail_chunk));
      };
      const auto box_stage = [&](unsigned j, const std::vector<size_t>& after) {
        const Segment s = segment(c, groups, j);
        Request r = q;
        r.root = root_rail;
        r.count = s.count;
        if (broadcast) {
          r.send = r.recv = shifted(q.recv, s.first);
          return list(b.box(r, Region::None, after));
        }
        r.send = shifted(q.send, s.first);
        r.recv = l == root_rail ? shifted(staging, s.first) : 0;
        return list(b.box(r, Region::Box, after, staging + st.box_chunks_at + j * st.box_chunk));
      };
      if (broadcast) {
        b.pipeline(groups, {rail_stage, box_stage});
      } else {
        b.pipeline(groups, {box_stage, rail_stage});
      }
      break;
    }
    case Collective::AllToAll: {
      Request r = q;
      r.count = uint64_t{g} * c;   // every rank's blocks for one box
      r.recv = staging;
      const std::vector<size_t> along = list(b.rail(r, Region::None, {}));
      for (unsigned box = 0; box < b.boxes(); ++box) {   // the blocks from box `box`'s ranks on this rail
        Request p = q;
        p.send = shifted(staging, uint64_t{box} * g * c);
        p.recv = shifted(q.recv, uint64_t{box} * g * c);
        b.box(p, Region::None, along);
      }
      break;
    }
    case Collective::Barrier: {
      // Small: the three ways one after the other.
      const auto first = b.box(q, Region::None, {});
      const auto second = b.rail(q, Region::None, list(first));
      b.box(q, Region::None, list(second));
      break;
    }
    case Collective::Send: case Collective::Recv:
      return "sends and receives between boxes joined rail by rail are not supported yet";
  }
  return b.error();
}

}  // namespace hpusim::synapse::hccl
