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

std::string topology_of_cards(const std::string& box_text, const std::vector<unsigned>& cards, Topology* out) {
  const unsigned ranks = static_cast<unsigned>(cards.size());
  Topology t;
  t.ranks = ranks;
  if (ranks > 1) {
    if (box_text.empty()) {
      return "the cards are not in a box (no NIC links between them): bring the platform up with a box "
             "(HPUSIM_BOX=hls1 or hls2)";
    }
    preset::Box box;
    if (!google::protobuf::TextFormat::ParseFromString(box_text, &box)) return "the platform's box preset does not parse";
    const unsigned highest = *std::max_element(cards.begin(), cards.end());
    if (box.cards() <= highest) {
      return highest + 1 == ranks ? "the box has " + std::to_string(box.cards()) + " cards, the communicator " +
                                        std::to_string(ranks) + " ranks"
                                  : "the box has " + std::to_string(box.cards()) + " cards, no card " + std::to_string(highest);
    }
    std::vector<int> rank_of(box.cards(), -1);
    for (unsigned r = 0; r < ranks; ++r) rank_of[cards[r]] = static_cast<int>(r);
    t.links.assign(ranks, std::vector<std::vector<LinkPorts>>(ranks));
    // Sorted by the lower card's port: both ends see the same order.
    std::vector<preset::NicLink> links(box.link().begin(), box.link().end());
    const auto low = [](const preset::NicLink& l) { return l.a().card() < l.b().card() ? l.a() : l.b(); };
    std::stable_sort(links.begin(), links.end(), [&](const preset::NicLink& x, const preset::NicLink& y) {
      return low(x).port() < low(y).port();
    });
    for (const preset::NicLink& l : links) {
      if (l.a().card() >= box.cards() || l.b().card() >= box.cards()) continue;
      const int a = rank_of[l.a().card()], b = rank_of[l.b().card()];
      if (a < 0 || b < 0 || a == b) continue;
      t.links[a][b].push_back({l.a().port(), l.b().port()});
      t.links[b][a].push_back({l.b().port(), l.a().port()});
    }
    for (unsigned r = 0; r < ranks; ++r)
      for (unsigned p = 0; p < ranks; ++p)
        if (p != r && t.links[r][p].empty())
          return "cards " + std::to_string(cards[r]) + " and " + std::to_string(cards[p]) + " of box '" + box.name() +
                 "' share no link";
  }
  if (t.links.empty()) t.links.assign(ranks, std::vector<std::vector<LinkPorts>>(ranks));
  *out = std::move(t);
  return "";
}

std::string hierarchy_of_cards(const std::string& box_text, const std::vector<unsigned>& cards, unsigned rank,
                               Hierarchy* out) {
  const unsigned ranks = static_cast<unsigned>(cards.size());
  const auto box_cards = [&](unsigned group, unsigned b) {
    return std::vector<unsigned>(cards.begin() + b * group, cards.begin() + (b + 1) * group);
  };
  const auto rail_cards = [&](unsigned group, unsigned i) {
    std::vector<unsigned> rail;
    for (unsigned b = 0; b < ranks / group; ++b) rail.push_back(cards[b * group + i]);
    return rail;
  };
  for (unsigned group = ranks / 2; group >= 2; --group) {
    if (ranks % group != 0) continue;
    bool linked = true;
    Topology t;
    for (unsigned b = 0; b < ranks / group && linked; ++b) linked = topology_of_cards(box_text, box_cards(group, b), &t).empty();
    for (unsigned i = 0; i < group && linked; ++i) linked = topology_of_cards(box_text, rail_cards(group, i), &t).empty();
    if (!linked) continue;
    Hierarchy h;
    h.group = group;
    h.box_rank = rank % group;
    h.rail_rank = rank / group;
    topology_of_cards(box_text, box_cards(group, h.rail_rank), &h.box);
    topology_of_cards(box_text, rail_cards(group, h.box_rank), &h.rail);
    *out = std::move(h);
    return "";
  }
  return "its cards are neither linked all to all nor boxes joined rail by rail";
}

}  // namespace hpusim::synapse::hccl
