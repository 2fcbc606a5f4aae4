// `hpusim report correlation`: every published number hpusim reproduces, beside hpusim's value.
//
// Each row names a public value and its source, how it is compared and the tolerance. The values
// come from the benchmarks, each run as a child `hpusim bench ...` writing JSON (a benchmark that
// elaborates SystemC runs once per process), so the report is exactly what a user re-runs.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace hpusim::report {

enum class Comparison {
  kValue,      // |hpusim - public| / public <= tolerance
  kBelowPeak,  // the public value is a peak: hpusim at most it, and at most `tolerance` below it
};

struct CorrelationRow {
  std::string id;            // stable key, e.g. "gemm.hl225.bf16_8192"
  std::string quantity;      // what is compared
  std::string preset;
  std::string unit;
  double published = 0;
  std::string source;
  Comparison comparison = Comparison::kValue;
  double tolerance_pct = 0;
  bool quick = false;        // part of --quick (and of the golden-tier test)
  std::string pending;       // non-empty: not reproducible yet, and why

  // Filled by the run.
  bool measured = false;
  double hpusim = 0;
  double error_pct = 0;      // (hpusim - public) / public
  bool pass = false;
  std::string failure;       // why it could not be measured (the benchmark failed)
};

// The table of published numbers (unmeasured).
std::vector<CorrelationRow> correlation_rows();

// Records hpusim's value for a row and judges it.
void judge(CorrelationRow& row, double hpusim);

// Runs `hpusim` with these arguments (without the program name), its output going to `log`;
// returns the exit status.
using ChildRunner = std::function<int(const std::vector<std::string>& args, const std::string& log)>;

struct CorrelationOptions {
  bool quick = false;
  std::string work_dir;       // where the benchmarks' JSON and logs go
  bool with_bridge = true;    // the bridge's rows (bench modes) need the PyTorch bridge
};

// Runs the benchmarks the rows need (only the quick ones with options.quick) and fills the rows.
// Progress goes to `progress`, one line per benchmark.
std::vector<CorrelationRow> run_correlation(const CorrelationOptions& options, const ChildRunner& run_child,
                                            std::ostream& progress);

void write_correlation_table(const std::vector<CorrelationRow>& rows, std::ostream& out);
void write_correlation_json(const std::vector<CorrelationRow>& rows, const std::string& path);

}  // namespace hpusim::report
