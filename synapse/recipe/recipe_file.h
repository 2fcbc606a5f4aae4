// Recipes as bytes: the framed form synRecipeSerialize writes and the recipe cache stores, and
// the checks a recipe passes before the runtime trusts it.
//
// Frame: "HPURECIP" (8 bytes), format version (u32 LE), payload length (u64 LE), FNV-1a 64 of the
// payload (u64 LE), then the payload: the Recipe protobuf message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synapse/recipe/recipe.pb.h"

namespace hpusim::synapse::recipe {

inline constexpr uint32_t kFormatVersion = 2;   // 2: sync objects relocated per launch
inline constexpr size_t kFrameHeaderBytes = 8 + 4 + 8 + 8;

std::vector<uint8_t> serialize(const Recipe& recipe);

// Parses and checks (check_recipe) a framed recipe. On failure returns false and *error says
// what is wrong ("recipe: checksum mismatch (file is corrupt or truncated)", ...).
bool deserialize(const uint8_t* data, size_t size, Recipe* recipe, std::string* error);

// The structural checks: version, every job's queue and command buffer, every patch inside its
// command buffer with a field that fits, persistent indices in range, node records consistent.
// "" when the recipe is sound.
std::string check_recipe(const Recipe& recipe);

// The value a patch writes for an address (FIELD_LOW32 / HIGH32: 4 bytes, ADDR64: 8 bytes, LOW8:
// 1 byte).
void apply_patch(const Patch& patch, uint64_t section_base, uint8_t* command_buffer, size_t size);
uint32_t field_bytes(Field field);

// The device address of E_N sync object `sob` (what a message to it is sent to): a
// SECTION_SYNC_OBJECTS addend is this for the SOB's index in the launch's range.
uint64_t sync_object_address(uint32_t sob);

}  // namespace hpusim::synapse::recipe
