// Golden values for cycle-count regression: a text file of "name value" lines under
// tests/golden/. A test compares what it measured with the file; with HPUSIM_UPDATE_GOLDEN=1 in
// the environment it rewrites the file instead (then review the diff and commit it).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace hpusim::testing {

class GoldenFile {
 public:
  explicit GoldenFile(const std::string& name)
      : path_(std::string(HPUSIM_SOURCE_DIR) + "/tests/golden/" + name) {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string key;
      uint64_t value;
      if (fields >> key >> value) expected_[key] = value;
    }
  }

  // Records a measured value and checks it against the golden one.
  void check(const std::string& key, uint64_t measured) {
    measured_[key] = measured;
    if (updating()) return;
    auto it = expected_.find(key);
    if (it == expected_.end()) {
      ADD_FAILURE() << "no golden value for '" << key << "' in " << path_
                    << " (run with HPUSIM_UPDATE_GOLDEN=1 to record it); measured " << measured;
      return;
    }
    EXPECT_EQ(measured, it->second) << "golden value '" << key << "' changed (" << path_ << ")";
  }

  ~GoldenFile() {
    if (!updating()) return;
    std::ofstream out(path_);
    out << "# Golden values: name value. Rewrite with HPUSIM_UPDATE_GOLDEN=1 and review the diff.\n";
    for (const auto& [key, value] : measured_) out << key << " " << value << "\n";
  }

 private:
  static bool updating() {
    const char* flag = std::getenv("HPUSIM_UPDATE_GOLDEN");
    return flag != nullptr && std::string(flag) == "1";
  }

  std::string path_;
  std::map<std::string, uint64_t> expected_;
  std::map<std::string, uint64_t> measured_;
};

}  // namespace hpusim::testing
