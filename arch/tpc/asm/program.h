// A TPC program: its bundles, the assembler's symbol table, and the binary program file.
//
// Program file (little-endian), version 1:
//   bytes 0..5    magic "HPTPC\0"
//   bytes 6..7    u16 version (1)
//   bytes 8..11   u32 bundle count N
//   bytes 12..15  u32 reserved, 0
//   then N bundles of 32 bytes each (isa.h encode()); the file ends there.
// Labels are not stored: the file is what the core fetches.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "arch/tpc/isa.h"

namespace hpusim::tpc {

struct Program {
  std::vector<Bundle> bundles;
  std::map<std::string, uint32_t> labels;   // label -> bundle index (may equal bundles.size())
};

inline constexpr char kProgramMagic[6] = {'H', 'P', 'T', 'P', 'C', '\0'};
inline constexpr uint16_t kProgramVersion = 1;
inline constexpr size_t kProgramHeaderBytes = 16;

// The file image of the bundles. Throws std::invalid_argument for a bundle encode() refuses.
std::vector<uint8_t> program_to_binary(const Program& program);

// Parses a file image: checks the header and the size, decodes every bundle. On failure returns
// nullopt and sets *error (e.g. "bundle 3: VPU slot, opcode: 12 is not defined in the VPU slot").
std::optional<Program> program_from_binary(const uint8_t* data, size_t size, std::string* error = nullptr);
std::optional<Program> program_from_binary(const std::vector<uint8_t>& data, std::string* error = nullptr);

// The same on files; errors name the file.
bool write_program_file(const std::string& path, const Program& program, std::string* error = nullptr);
std::optional<Program> read_program_file(const std::string& path, std::string* error = nullptr);

}  // namespace hpusim::tpc
