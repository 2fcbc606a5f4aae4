#include "synapse/recipe/recipe_file.h"

#include <cstring>
#include <stdexcept>

#include "arch/regs/gaudi1_map.h"
#include "synapse/recipe_cache/fnv1a.h"

namespace hpusim::synapse::recipe {
namespace {

constexpr char kMagic[8] = {'H', 'P', 'U', 'R', 'E', 'C', 'I', 'P'};

void put_le(std::vector<uint8_t>& out, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
uint64_t get_le(const uint8_t* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

uint64_t sync_object_address(uint32_t sob) {
  return regs::cfg_address(regs::sm_sob(regs::SyncManager::E_N, sob));
}

uint32_t field_bytes(Field field) { return field == FIELD_ADDR64 ? 8 : field == FIELD_LOW8 ? 1 : 4; }

std::vector<uint8_t> serialize(const Recipe& recipe) {
  const std::string payload = recipe.SerializeAsString();
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_le(out, kFormatVersion, 4);
  put_le(out, payload.size(), 8);
  put_le(out, recipe_cache::fnv1a64(payload.data(), payload.size()), 8);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

bool deserialize(const uint8_t* data, size_t size, Recipe* recipe, std::string* error) {
  const auto fail = [error](const std::string& what) {
    *error = "recipe: " + what;
    return false;
  };
  if (size < kFrameHeaderBytes) {
    return fail(std::to_string(size) + " bytes, shorter than the " + std::to_string(kFrameHeaderBytes) +
                "-byte header (truncated)");
  }
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) return fail("not a recipe (bad magic)");
  const uint32_t version = static_cast<uint32_t>(get_le(data + 8, 4));
  if (version != kFormatVersion) {
    return fail("format version " + std::to_string(version) + ", this build reads version " +
                std::to_string(kFormatVersion));
  }
  const uint64_t length = get_le(data + 12, 8);
  if (length != size - kFrameHeaderBytes) {
    return fail("payload is " + std::to_string(size - kFrameHeaderBytes) + " bytes, the header says " +
                std::to_string(length) + " (truncated or corrupt)");
  }
  const uint8_t* payload = data + kFrameHeaderBytes;
  if (recipe_cache::fnv1a64(payload, length) != get_le(data + 20, 8)) {
    return fail("checksum mismatch (file is corrupt or truncated)");
  }
  Recipe parsed;
  if (!parsed.ParseFromArray(payload, static_cast<int>(length))) return fail("payload is not a Recipe message");
  const std::string problem = check_recipe(parsed);
  if (!problem.empty()) return fail(problem);
  *recipe = std::move(parsed);
  return true;
}

std::string check_recipe(const Recipe& recipe) {
  if (recipe.format_version() != kFormatVersion) {
    return "format_version " + std::to_string(recipe.format_version()) + " (expected " +
           std::to_string(kFormatVersion) + ")";
  }
  for (int j = 0; j < recipe.jobs_size(); ++j) {
    const QueueJob& job = recipe.jobs(j);
    const std::string who = "job " + std::to_string(j);
    if (job.queue_id() >= regs::kNumQueues) return who + ": queue id " + std::to_string(job.queue_id()) + " does not exist";
    if (job.command_buffer().empty() || job.command_buffer().size() % 8 != 0) {
      return who + ": command buffer of " + std::to_string(job.command_buffer().size()) +
             " bytes (must be a non-zero multiple of 8)";
    }
    for (int p = 0; p < job.patches_size(); ++p) {
      const Patch& patch = job.patches(p);
      const std::string pwho = who + " patch " + std::to_string(p);
      if (!Field_IsValid(patch.field()) || !Section_IsValid(patch.section())) return pwho + ": unknown field or section";
      if (uint64_t{patch.offset()} + field_bytes(patch.field()) > job.command_buffer().size()) {
        return pwho + ": offset " + std::to_string(patch.offset()) + " is outside the command buffer";
      }
      if (patch.section() == SECTION_PERSISTENT && patch.index() >= static_cast<uint32_t>(recipe.persistent_size())) {
        return pwho + ": persistent tensor " + std::to_string(patch.index()) + " does not exist (" +
               std::to_string(recipe.persistent_size()) + " in the recipe)";
      }
      if (patch.section() == SECTION_WORKSPACE && patch.addend() >= recipe.workspace_bytes()) {
        return pwho + ": workspace offset " + std::to_string(patch.addend()) + " is past the workspace";
      }
      if (patch.section() == SECTION_SRAM && patch.addend() >= recipe.sram_bytes()) {
        return pwho + ": SRAM offset " + std::to_string(patch.addend()) + " is past the SRAM arena";
      }
      if (patch.section() == SECTION_PROGRAM && patch.addend() >= recipe.program_image().size()) {
        return pwho + ": program offset " + std::to_string(patch.addend()) + " is past the program image";
      }
      const uint64_t first_sob = sync_object_address(0);
      if (patch.section() == SECTION_SYNC_OBJECTS &&
          (patch.addend() < first_sob || patch.addend() >= sync_object_address(recipe.sob_count()) ||
           (patch.addend() - first_sob) % 4 != 0)) {
        return pwho + ": sync object address " + std::to_string(patch.addend()) + " is outside the recipe's " +
               std::to_string(recipe.sob_count()) + " sync objects";
      }
      if (patch.section() == SECTION_SYNC_GROUPS && patch.addend() >= (uint64_t{recipe.sob_count()} + 7) / 8) {
        return pwho + ": sync group " + std::to_string(patch.addend()) + " is outside the recipe's " +
               std::to_string(recipe.sob_count()) + " sync objects";
      }
    }
  }
  for (int n = 0; n < recipe.nodes_size(); ++n) {
    const NodeRecord& node = recipe.nodes(n);
    if (node.sync_object() >= recipe.sob_count()) {
      return "node '" + node.name() + "': sync object " + std::to_string(node.sync_object()) +
             " outside the recipe's range";
    }
    for (uint32_t w : node.waits_for()) {
      if (w >= static_cast<uint32_t>(n)) return "node '" + node.name() + "' waits for a node that runs after it";
    }
  }
  return "";
}

void apply_patch(const Patch& patch, uint64_t section_base, uint8_t* command_buffer, size_t size) {
  const uint64_t address = section_base + patch.addend();
  uint64_t value = address;
  if (patch.field() == FIELD_LOW32) value = address & 0xFFFFFFFFu;
  if (patch.field() == FIELD_HIGH32) value = address >> 32;
  if (patch.field() == FIELD_LOW8) value = address & 0xFFu;
  const uint32_t bytes = field_bytes(patch.field());
  if (uint64_t{patch.offset()} + bytes > size) throw std::out_of_range("recipe patch outside its command buffer");
  for (uint32_t i = 0; i < bytes; ++i) command_buffer[patch.offset() + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace hpusim::synapse::recipe
