// One recipe on disk: a 40-byte header, then the payload (the framed recipe of
// synapse/recipe/recipe_file.h, whose own frame the runtime checks when it loads it).
//
//   offset  size  field (integers little-endian)
//        0     8  magic "HPUCACHE"
//        8     4  format version (2)
//       12     4  header size in bytes (40)
//       16     8  key (must match the file name)
//       24     8  payload length in bytes (the file is exactly header + payload long)
//       32     8  FNV-1a 64 of the payload
//       40     n  payload
//
// Files are written to a temporary name in the same directory and renamed into place, so a
// reader never sees a half-written recipe; the checksum catches everything else (a torn write
// after a crash, a flipped bit, a truncation, another program's file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "synapse/recipe_cache/recipe_key.h"

namespace hpusim::synapse::recipe_cache {

inline constexpr uint32_t kRecipeFormatVersion = 2;   // 1: the same layout under the recipe frame's magic
inline constexpr uint64_t kRecipeHeaderBytes = 40;

// The size on disk of a recipe whose payload is payload_bytes long.
inline uint64_t recipe_file_bytes(uint64_t payload_bytes) { return kRecipeHeaderBytes + payload_bytes; }

// The header of key's recipe file; the payload follows it.
std::string encode_recipe_header(RecipeKey key, const std::string& payload);

struct RecipeFileRead {
  enum class Status {
    Ok,        // payload holds the verified recipe
    Missing,   // no such file (never stored, or removed by someone else)
    Corrupt,   // the file exists but does not verify; problem says why
    IoError,   // the file could not be read (or is not a regular file); problem says why
  };
  Status status = Status::Missing;
  std::string payload;
  std::string problem;
  // The file that was examined (st_dev, st_ino), so a corrupt one can be removed only if the
  // name still refers to it.
  uint64_t device = 0;
  uint64_t inode = 0;
};

// Reads and verifies the recipe file at path, which must hold `key`.
RecipeFileRead read_recipe_file(const std::filesystem::path& path, RecipeKey key);

// Writes `key`'s recipe file into directory: encoded to a temporary file there, then renamed to
// its recipe name. Returns "" on success, otherwise what failed; the temporary file never stays.
std::string write_recipe_file(const std::filesystem::path& directory, RecipeKey key, const std::string& payload);

}  // namespace hpusim::synapse::recipe_cache
