// Running the built hpusim program from a test, as a user does: its exit code and its output
// (stdout and stderr), with optional environment assignments in front ("VAR=value ...").
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace hpusim::cli_testing {

struct ProgramRun {
  int exit_code;
  std::string output;   // stdout and stderr
};

inline ProgramRun run_hpusim(const std::string& args, const std::string& env = "") {
  const std::string command = env + " " + std::string(HPUSIM_BINARY_DIR) + "/hpusim " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace hpusim::cli_testing
