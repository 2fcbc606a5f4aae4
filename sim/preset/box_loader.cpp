// Box presets: parsing and the checks against the box's card.
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/preset/builtin_presets.h"
#include "sim/preset/preset.h"

namespace hpusim::preset {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string origin) : origin_(std::move(origin)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) first_ = origin_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  const std::string& first() const { return first_; }

 private:
  std::string origin_, first_;
};

Box parse_box(const std::string& name_or_file) {
  std::string text, origin;
  for (const BuiltinFile& file : builtin_box_files()) {
    if (name_or_file == file.stem) {
      text = file.text;
      origin = "boxes/" + name_or_file + ".textproto";
    }
  }
  if (origin.empty()) {
    std::ifstream in(name_or_file, std::ios::binary);
    if (!in) {
      std::string names;
      for (const std::string& n : builtin_box_names()) names += (names.empty() ? "" : ", ") + n;
      throw PresetError("unknown box '" + name_or_file + "': not a built-in box (" + names + ") and not a readable file");
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
    origin = name_or_file;
  }
  Box box;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(origin);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &box)) throw PresetError("invalid box " + (errors.first().empty() ? origin : errors.first()));
  if (!box.has_card() || box.card().empty()) throw PresetError("box " + origin + ": card (the card preset) is missing");
  return box;
}

std::string end_text(const NicEnd& end) {
  return "card " + std::to_string(end.card()) + " port " + std::to_string(end.port());
}

}  // namespace

std::vector<std::string> builtin_box_names() {
  std::vector<std::string> names;
  for (const BuiltinFile& file : builtin_box_files()) names.emplace_back(file.stem);
  return names;
}

std::string box_card_preset(const std::string& name_or_file) { return parse_box(name_or_file).card(); }

std::string to_text(const Box& box) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(false);
  std::string out;
  printer.PrintToString(box, &out);
  return out;
}

Box load_box(const std::string& name_or_file, const Card& card) {
  Box box = parse_box(name_or_file);
  const std::string who = "box '" + (box.name().empty() ? name_or_file : box.name()) + "': ";
  if (box.cards() < 1 || box.cards() > 16) throw PresetError(who + "cards = " + std::to_string(box.cards()) + ": a box has 1 to 16 cards");
  std::set<std::pair<uint32_t, uint32_t>> used;
  const auto take = [&](const NicEnd& end, const std::string& what) {
    if (end.card() >= box.cards())
      throw PresetError(who + what + " " + end_text(end) + ": the box has " + std::to_string(box.cards()) + " cards");
    if (end.port() >= card.nic().ports())
      throw PresetError(who + what + " " + end_text(end) + ": " + card.name() + " has " + std::to_string(card.nic().ports()) +
                        " NIC ports (nic.ports)");
    if (!used.insert({end.card(), end.port()}).second) throw PresetError(who + what + " " + end_text(end) + ": the port is used twice");
  };
  for (const NicLink& link : box.link()) {
    take(link.a(), "link");
    take(link.b(), "link");
  }
  for (const NicEnd& end : box.scale_out()) take(end, "scale_out");
  if (box.has_switch_()) {
    const SwitchConfig& s = box.switch_();
    if (s.gbps_per_port() == 0) throw PresetError(who + "switch.gbps_per_port must be greater than 0");
    if (s.buffer_packets() == 0) throw PresetError(who + "switch.buffer_packets must be greater than 0");
  }
  return box;
}

}  // namespace hpusim::preset
