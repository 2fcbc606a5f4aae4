#include "arch/tpc/asm/program.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hpusim::tpc {
namespace {

void put_le(std::vector<uint8_t>& out, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t get_le(const uint8_t* data, unsigned bytes) {
  uint64_t value = 0;
  for (unsigned i = 0; i < bytes; ++i) value |= uint64_t{data[i]} << (8 * i);
  return value;
}

std::nullopt_t fail(std::string* error, const std::string& message) {
  if (error) *error = message;
  return std::nullopt;
}

}  // namespace

std::vector<uint8_t> program_to_binary(const Program& program) {
  std::vector<uint8_t> out(kProgramMagic, kProgramMagic + sizeof kProgramMagic);
  put_le(out, kProgramVersion, 2);
  put_le(out, program.bundles.size(), 4);
  put_le(out, 0, 4);
  out.reserve(kProgramHeaderBytes + program.bundles.size() * kBundleBytes);
  for (const Bundle& bundle : program.bundles) {
    const auto bytes = encode(bundle);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

std::optional<Program> program_from_binary(const uint8_t* data, size_t size, std::string* error) {
  if (size < kProgramHeaderBytes) {
    return fail(error, "not a TPC program: " + std::to_string(size) + " bytes, shorter than the 16-byte header");
  }
  if (std::memcmp(data, kProgramMagic, sizeof kProgramMagic) != 0) {
    return fail(error, "not a TPC program: the file does not start with \"HPTPC\\0\"");
  }
  const uint64_t version = get_le(data + 6, 2);
  if (version != kProgramVersion) {
    return fail(error, "unsupported TPC program version " + std::to_string(version) + " (this build reads " +
                           std::to_string(kProgramVersion) + ")");
  }
  const uint64_t count = get_le(data + 8, 4);
  const uint64_t reserved = get_le(data + 12, 4);
  if (reserved != 0) return fail(error, "bad TPC program header: reserved word is " + std::to_string(reserved));
  const uint64_t expected = kProgramHeaderBytes + count * kBundleBytes;
  if (size != expected) {
    return fail(error, "bad TPC program size: the header says " + std::to_string(count) + " bundles (" +
                           std::to_string(expected) + " bytes) but the file has " + std::to_string(size) + " bytes");
  }
  Program program;
  program.bundles.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    std::string why;
    auto bundle = decode(data + kProgramHeaderBytes + i * kBundleBytes, &why);
    if (!bundle) return fail(error, "bundle " + std::to_string(i) + ": " + why);
    program.bundles.push_back(*bundle);
  }
  return program;
}

std::optional<Program> program_from_binary(const std::vector<uint8_t>& data, std::string* error) {
  return program_from_binary(data.data(), data.size(), error);
}

bool write_program_file(const std::string& path, const Program& program, std::string* error) {
  std::vector<uint8_t> bytes;
  try {
    bytes = program_to_binary(program);
  } catch (const std::exception& e) {
    if (error) *error = path + ": " + e.what();
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    if (error) *error = "cannot write output file '" + path + "'";
    return false;
  }
  return true;
}

std::optional<Program> read_program_file(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(error, "cannot read '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail(error, "cannot read '" + path + "'");
  std::string why;
  auto program = program_from_binary(bytes, &why);
  if (!program) return fail(error, path + ": " + why);
  return program;
}

}  // namespace hpusim::tpc
