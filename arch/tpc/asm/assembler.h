// The TPC assembler: assembly text (arch/tpc/ASSEMBLY.md) -> Program (bundles and labels).
//
//   auto result = hpusim::tpc::assemble_file("kernel.s");
//   if (!result.ok()) std::cerr << result.error_text();   // "kernel.s:12:9: unknown mnemonic 'ad'"
//   write_program_file("kernel.bin", result.program);
//
// The assembler never throws and never crashes on bad input: every problem is a diagnostic with
// a file, line and (mostly) column.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arch/tpc/asm/program.h"

namespace hpusim::tpc {

struct AsmDiagnostic {
  std::string file;
  unsigned line = 0;     // 1-based; 0 when the message is about the whole file
  unsigned column = 0;   // 1-based; 0 when unknown
  std::string message;
  std::string to_string() const;   // "file:line:column: message" (fewer parts when unknown)
};

struct AssembleOptions {
  // Reads a source file (the top-level file of assemble_file, and includes); nullopt when it
  // cannot be read. Empty: regular files of the file system.
  std::function<std::optional<std::string>(const std::string& path)> read_file;
  // Searched, in order, for a relative .include that is not found next to the including file.
  std::vector<std::string> include_dirs;
  // Constants defined before the first line, as if by ".equ NAME VALUE" (VALUE is assembly text).
  std::vector<std::pair<std::string, std::string>> defines;
  // Assembly stops after this many errors (and says so).
  size_t max_errors = 20;
};

struct AssembleResult {
  Program program;                      // meaningful only when ok()
  std::vector<AsmDiagnostic> errors;
  bool ok() const { return errors.empty(); }
  std::string error_text() const;       // every diagnostic, one per line
};

// Assembles source text; file_name is used in messages and as the base of relative includes.
AssembleResult assemble(const std::string& source, const std::string& file_name = "<input>",
                        const AssembleOptions& options = {});
// Reads the file with options.read_file (or from disk) and assembles it.
AssembleResult assemble_file(const std::string& path, const AssembleOptions& options = {});

}  // namespace hpusim::tpc
