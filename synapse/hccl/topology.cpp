#include "synapse/hccl/topology.h"

#include <google/protobuf/text_format.h>

#include <algorithm>

#include "card_preset.pb.h"

namespace hpusim::synapse::hccl {

unsigned Topology::stripes() const {
  size_t fewest = SIZE_MAX;
  for (unsigned r = 0; r < ranks; ++r)
    for (unsigned p = 0; p < ranks; ++p)
      if (p != r) fewest = std::min(fewest, links[r][p].size());
  return fewest == SIZE_MAX ? 1 : static_cast<unsigned>(fewest);
}

std::string topology_from_box(const std::string& box_text, unsigned ranks, Topology* out) {
  Topology t;
  t.ranks = ranks;
  if (ranks > 1) {
    if (box_text.empty()) {
      return "the cards are not in a box (no NIC links between them): bring the platform up with a box "
             "(HPUSIM_BOX=hls1 or hls2)";
    }
    preset::Box box;
    if (!google::protobuf::TextFormat::ParseFromString(box_text, &box)) return "the platform's box preset does not parse";
    if (box.cards() < ranks) {
      return "the box has " + std::to_string(box.cards()) + " cards, the communicator " + std::to_string(ranks) + " ranks";
    }
    t.links.assign(ranks, std::vector<std::vector<LinkPorts>>(ranks));
    // Sorted by the lower card's port: both ends see the same order.
    std::vector<preset::NicLink> links(box.link().begin(), box.link().end());
    const auto low = [](const preset::NicLink& l) { return l.a().card() < l.b().card() ? l.a() : l.b(); };
    std::stable_sort(links.begin(), links.end(), [&](const preset::NicLink& x, const preset::NicLink& y) {
      return low(x).port() < low(y).port();
    });
    for (const preset::NicLink& l : links) {
      const unsigned a = l.a().card(), b = l.b().card();
      if (a >= ranks || b >= ranks || a == b) continue;
      t.links[a][b].push_back({l.a().port(), l.b().port()});
      t.links[b][a].push_back({l.b().port(), l.a().port()});
    }
    for (unsigned r = 0; r < ranks; ++r)
      for (unsigned p = 0; p < ranks; ++p)
        if (p != r && t.links[r][p].empty())
          return "cards " + std::to_string(r) + " and " + std::to_string(p) + " of box '" + box.name() + "' share no link";
  }
  if (t.links.empty()) t.links.assign(ranks, std::vector<std::vector<LinkPorts>>(ranks));
  *out = std::move(t);
  return "";
}

}  // namespace hpusim::synapse::hccl
