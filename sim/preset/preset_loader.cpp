#include "sim/preset/preset.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/preset/builtin_presets.h"

namespace hpusim::preset {
namespace {

constexpr const char* kTimingLibraryStem = "hbm_timing_sets";

class CollectingErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectingErrors(std::string origin) : origin_(std::move(origin)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) {
      first_ = origin_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string origin_;
  std::string first_;
};

template <typename Message>
Message parse_text(const std::string& text, const std::string& origin) {
  Message message;
  google::protobuf::TextFormat::Parser parser;
  CollectingErrors errors(origin);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &message)) {
    throw PresetError("invalid preset " + (errors.first().empty() ? origin : errors.first()));
  }
  return message;
}

const BuiltinFile* find_builtin(const std::string& stem) {
  for (const BuiltinFile& file : builtin_files()) {
    if (stem == file.stem) return &file;
  }
  return nullptr;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PresetError("cannot read preset file '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Clears every repeated field of `base` that `top` sets, recursing into sub-messages both set, so
// that a following MergeFrom replaces repeated fields instead of appending to them.
void clear_replaced_repeated(Message& base, const Message& top) {
  const auto* descriptor = top.GetDescriptor();
  const auto* top_reflection = top.GetReflection();
  const auto* base_reflection = base.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) {
      if (top_reflection->FieldSize(top, field) > 0) base_reflection->ClearField(&base, field);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && top_reflection->HasField(top, field) &&
               base_reflection->HasField(base, field)) {
      clear_replaced_repeated(*base_reflection->MutableMessage(&base, field), top_reflection->GetMessage(top, field));
    }
  }
}

constexpr size_t kMaxBaseDepth = 8;

// Reads a preset by built-in name or path; `relative_to` is the directory a relative path of a
// base is looked up in first. Follows `base` chains; `chain` holds the presets being loaded.
Card read_preset(const std::string& name_or_file, const std::filesystem::path& relative_to,
                 std::vector<std::string>& chain) {
  Card card;
  std::filesystem::path directory;
  const BuiltinFile* builtin = find_builtin(name_or_file);
  const std::filesystem::path beside = relative_to.empty() ? std::filesystem::path(name_or_file)
                                                           : relative_to / name_or_file;
  std::string identity = name_or_file;
  if (builtin != nullptr && name_or_file != kTimingLibraryStem) {
    card = parse_preset_text(builtin->text, name_or_file + ".textproto");
  } else if (std::filesystem::is_regular_file(beside) || std::filesystem::is_regular_file(name_or_file)) {
    const std::filesystem::path path = std::filesystem::is_regular_file(beside) ? beside : std::filesystem::path(name_or_file);
    card = parse_preset_text(read_file(path.string()), path.string());
    directory = path.parent_path();
    identity = std::filesystem::weakly_canonical(path).string();
  } else {
    throw PresetError("unknown preset '" + name_or_file + "': not a built-in preset (" +
                      join(builtin_preset_names()) + ") and not a readable file");
  }
  if (std::find(chain.begin(), chain.end(), identity) != chain.end()) {
    throw PresetError("preset '" + name_or_file + "' is its own base (through " + join(chain) + ")");
  }
  if (!card.has_base()) return card;
  if (chain.size() + 1 >= kMaxBaseDepth) {
    throw PresetError("preset '" + name_or_file + "': more than " + std::to_string(kMaxBaseDepth) +
                      " levels of base presets");
  }
  chain.push_back(identity);
  Card merged = read_preset(card.base(), directory, chain);
  chain.pop_back();
  card.clear_base();
  clear_replaced_repeated(merged, card);
  merged.MergeFrom(card);
  return merged;
}

}  // namespace

std::vector<std::string> builtin_preset_names() {
  std::vector<std::string> names;
  for (const BuiltinFile& file : builtin_files()) {
    if (std::string(file.stem) != kTimingLibraryStem) names.emplace_back(file.stem);
  }
  return names;
}

HbmTimingLibrary builtin_timing_sets() {
  const BuiltinFile* file = find_builtin(kTimingLibraryStem);
  if (file == nullptr) throw PresetError("the HBM timing-set library is missing from this build");
  return parse_text<HbmTimingLibrary>(file->text, std::string(kTimingLibraryStem) + ".textproto");
}

Card parse_preset_text(const std::string& text, const std::string& origin) {
  return parse_text<Card>(text, origin);
}

Card load_preset(const std::string& name_or_file, const std::vector<std::string>& overrides) {
  std::vector<std::string> chain;
  Card card = read_preset(name_or_file, {}, chain);
  for (const std::string& assignment : overrides) apply_override(card, assignment);
  resolve_and_validate(card);
  return card;
}

std::string to_text(const Card& card) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true);
  std::string out;
  printer.PrintToString(card, &out);
  return out;
}

}  // namespace hpusim::preset
