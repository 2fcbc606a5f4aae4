// The links a communicator's ranks reach each other by: from the box's port map (the platform's
// box preset, as the real HCL reads its server type's connectivity), rank i on card i.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpusim::synapse::hccl {

struct LinkPorts {
  uint32_t port = 0;        // this rank's NIC port
  uint32_t peer_port = 0;   // the peer's port at the other end
};

struct Topology {
  unsigned ranks = 0;
  // links[r][p]: the links joining rank r's card to rank p's, in an order both ends share (by the
  // lower rank's port), so the j-th link of r to p is the j-th of p to r.
  std::vector<std::vector<std::vector<LinkPorts>>> links;
  // The fewest links between any two ranks (the stripes a message is split into).
  unsigned stripes() const;
};

// The topology of ranks on cards of the box `box_text` (sim/preset's Box in text form), rank i on
// cards[i]. "" or why not: no box, a card the box does not have, a pair of ranks with no link.
std::string topology_of_cards(const std::string& box_text, const std::vector<unsigned>& cards, Topology* out);

// A communicator over boxes joined rail by rail (sim/presets/boxes/hls2x2): ranks in groups of
// `group` whose cards are linked all to all (a box), the i-th card of every group linked to the
// i-th of every other (a rail). HCCL's hierarchical algorithms run in the box, then along the
// rail, then in the box again.
struct Hierarchy {
  unsigned group = 0;              // ranks per box
  unsigned box_rank = 0;           // this rank's place in its box (= its rail)
  unsigned rail_rank = 0;          // its box's place along the rail
  Topology box;                    // this rank's box: its rank i is rank group * rail_rank + i
  Topology rail;                   // its rail: its rank b is rank group * b + box_rank
};
// The largest such grouping of the ranks on `cards` (rank i on cards[i], box b's ranks b * group
// .. b * group + group - 1), seen from `rank`; "" or why there is none.
std::string hierarchy_of_cards(const std::string& box_text, const std::vector<unsigned>& cards, unsigned rank,
                               Hierarchy* out);

}  // namespace hpusim::synapse::hccl
