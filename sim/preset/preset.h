// Loading, overriding and validating card presets.
//
//   Card card = load_preset("hl205", {"hbm.stacks=2", "clocks.tpc_mhz=1500"});
//
// A preset is a built-in name (sim/presets/NAME.textproto) or the path of a text-format file. A
// preset may name a `base` preset (a built-in name, or a path relative to its own file) and set
// only what differs: its fields replace the base's, a repeated field as a whole.
// Overrides are applied in order, then the HBM timing set is resolved and the whole card is
// validated. Every problem is a PresetError whose message names the file, field or value.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "card_preset.pb.h"

namespace hpusim::preset {

using Card = hpusim::preset::Card;

class PresetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* kDefaultPreset = "hl205";

// Names of the card presets compiled into the program (timing-set libraries excluded).
std::vector<std::string> builtin_preset_names();

// Parses a preset by name or path, applies the overrides, resolves and validates it.
Card load_preset(const std::string& name_or_file, const std::vector<std::string>& overrides = {});

// Parses text-format preset contents; `origin` names the source in error messages.
Card parse_preset_text(const std::string& text, const std::string& origin);

// Applies one "path.to.field=value" assignment. Repeated fields take a comma-separated list.
void apply_override(Card& card, const std::string& assignment);

// Fills hbm.timing from the named timing set (explicit hbm.timing fields win), then checks that
// every field the models need is present and sensible.
void resolve_and_validate(Card& card);

// The SRAM's scratchpad (its range on the memory map): what the HBM cache leaves of it.
inline uint64_t sram_scratchpad_bytes(const Card& card) {
  return card.sram().size_bytes() - card.sram().hbm_cache_bytes();
}

// The HBM timing sets known to the program.
HbmTimingLibrary builtin_timing_sets();

// Text-format rendering of a card, as `hpusim info` prints it.
std::string to_text(const Card& card);

// ---- Boxes (sim/presets/boxes): cards joined by their NIC ports ----

// Names of the box presets compiled into the program.
std::vector<std::string> builtin_box_names();
// Parses a box by built-in name or path and checks it against `card` (its card preset, as the
// caller resolved it with any overrides): 1 to 8 cards, every link and scale-out port on a card
// of the box and a port the card has, no port used twice, no port joined to itself.
Box load_box(const std::string& name_or_file, const Card& card);
// The box's card preset name (as the file names it), to load before load_box.
std::string box_card_preset(const std::string& name_or_file);
// Text-format rendering of a box, as `hpusim info --box` prints it.
std::string to_text(const Box& box);

}  // namespace hpusim::preset
