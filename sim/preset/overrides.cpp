// --set path.to.field=value, applied through protobuf reflection so every preset field is reachable.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "sim/preset/preset.h"

namespace hpusim::preset {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (true) {
    auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string field_names(const Descriptor* descriptor) {
  std::string names;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    names += (i ? ", " : "") + descriptor->field(i)->name();
  }
  return names;
}

[[noreturn]] void bad_value(const std::string& path, const std::string& value, const std::string& expected) {
  throw PresetError("bad value '" + value + "' for " + path + ": expected " + expected);
}

uint64_t parse_unsigned(const std::string& path, const std::string& value, uint64_t max) {
  if (value.empty() || value[0] == '-' || value[0] == '+') bad_value(path, value, "an unsigned integer");
  errno = 0;
  char* end = nullptr;
  unsigned long long parsed = std::strtoull(value.c_str(), &end, 0);
  if (errno != 0 || *end != '\0' || parsed > max) {
    bad_value(path, value, "an unsigned integer no larger than " + std::to_string(max));
  }
  return parsed;
}

int64_t parse_signed(const std::string& path, const std::string& value, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value.c_str(), &end, 0);
  if (value.empty() || errno != 0 || *end != '\0' || parsed < min || parsed > max) {
    bad_value(path, value, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return parsed;
}

double parse_double(const std::string& path, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(parsed)) bad_value(path, value, "a finite number");
  return parsed;
}

bool parse_bool(const std::string& path, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  bad_value(path, value, "true or false");
}

void set_scalar(Message& message, const FieldDescriptor* field, const std::string& path, const std::string& value) {
  const Reflection* reflection = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32: {
      auto v = static_cast<uint32_t>(parse_unsigned(path, value, std::numeric_limits<uint32_t>::max()));
      repeated ? reflection->AddUInt32(&message, field, v) : reflection->SetUInt32(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      auto v = parse_unsigned(path, value, std::numeric_limits<uint64_t>::max());
      repeated ? reflection->AddUInt64(&message, field, v) : reflection->SetUInt64(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      auto v = static_cast<int32_t>(parse_signed(path, value, std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::max()));
      repeated ? reflection->AddInt32(&message, field, v) : reflection->SetInt32(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      auto v = parse_signed(path, value, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      repeated ? reflection->AddInt64(&message, field, v) : reflection->SetInt64(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v = parse_double(path, value);
      repeated ? reflection->AddDouble(&message, field, v) : reflection->SetDouble(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      auto v = static_cast<float>(parse_double(path, value));
      repeated ? reflection->AddFloat(&message, field, v) : reflection->SetFloat(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v = parse_bool(path, value);
      repeated ? reflection->AddBool(&message, field, v) : reflection->SetBool(&message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      repeated ? reflection->AddString(&message, field, value) : reflection->SetString(&message, field, value);
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* enum_value = field->enum_type()->FindValueByName(value);
      if (enum_value == nullptr) bad_value(path, value, "a value of enum " + field->enum_type()->name());
      repeated ? reflection->AddEnum(&message, field, enum_value) : reflection->SetEnum(&message, field, enum_value);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      throw PresetError(path + " is a message, not a value; set one of its fields (" +
                        field_names(field->message_type()) + ")");
  }
}

}  // namespace

void apply_override(Card& card, const std::string& assignment) {
  auto equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw PresetError("bad --set '" + assignment + "': expected path.to.field=value");
  }
  const std::string path = assignment.substr(0, equals);
  const std::string value = assignment.substr(equals + 1);

  Message* message = &card;
  const std::vector<std::string> segments = split(path, '.');
  std::string walked;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& name = segments[i];
    const Descriptor* descriptor = message->GetDescriptor();
    const FieldDescriptor* field = descriptor->FindFieldByName(name);
    walked += (i ? "." : "") + name;
    if (field == nullptr) {
      throw PresetError("unknown preset field '" + walked + "' in --set " + path + " (" +
                        descriptor->full_name() + " has: " + field_names(descriptor) + ")");
    }
    const bool last = i + 1 == segments.size();
    if (!last) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
        throw PresetError("preset field '" + walked + "' has no sub-fields (in --set " + path + ")");
      }
      message = message->GetReflection()->MutableMessage(message, field);
      continue;
    }
    if (field->is_repeated()) {
      message->GetReflection()->ClearField(message, field);
      if (!value.empty()) {
        for (const std::string& item : split(value, ',')) set_scalar(*message, field, path, item);
      }
    } else {
      set_scalar(*message, field, path, value);
    }
  }
}

}  // namespace hpusim::preset
