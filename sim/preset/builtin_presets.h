// The preset files of sim/presets/, compiled into the program so `--preset hl205` works anywhere.
#pragma once

#include <string>
#include <vector>

namespace hpusim::preset {

struct BuiltinFile {
  const char* stem;   // file name without extension, e.g. "hl205"
  const char* text;   // text-format protobuf
};

const std::vector<BuiltinFile>& builtin_files();
// The box presets of sim/presets/boxes/.
const std::vector<BuiltinFile>& builtin_box_files();

}  // namespace hpusim::preset
