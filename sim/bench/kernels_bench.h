// `hpusim bench kernels`: every kernel-library GUID as a one-node graph through the Synapse API
// on a simulated card, on the shapes the zoo's models use (a BERT activation, attention rows, a
// layer's parameters) and a large one, against the card's rooflines: the HBM bandwidth (bytes the
// node reads and writes) and the VPU (one op per lane per TPC cycle).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace hpusim::bench {

struct KernelsBenchOptions {
  std::string preset = "hl205";
  std::vector<std::string> overrides;
  std::string filter;      // a regex over the GUIDs ("" = all)
  bool large = true;       // also the large shape of each case
  std::string json_path;   // also write the rows as a JSON array
  std::string trace_path;  // also write the timeline (every case's launches)
  unsigned phases = 1;     // measured launches of each case, started 37 ns apart; the row is their median (1..64)
};

struct KernelsBenchRow {
  std::string guid, shape;
  double device_us = 0;     // the launch on the device (its frame included)
  double kernel_us = 0;     // the TPCs' busy time over the TPCs used
  double bytes = 0, ops = 0;
  double memory_us = 0, compute_us = 0;   // the rooflines' times
  std::string bound;                      // "memory" or "compute"
  double pct_roofline = 0;                // the bound's time / max(kernel_us, device_us)
  unsigned tpcs = 0;                      // TPCs the index space is spread over
  // The first kernel's start to the last one's end (every phase; no submission, no completion: a
  // node's time inside a graph, whose launch frame the other nodes overlap), and the bound's time
  // over max(kernel_us, engines_us).
  double engines_us = 0, pct_engines = 0;
  unsigned phases = 1;                    // measured launches: the row is the median one by device time
  double device_us_min = 0, device_us_max = 0;
};

// Runs the cases and prints the table; a GUID with no case is listed as such, never skipped
// silently. Throws std::invalid_argument for a bad filter.
std::vector<KernelsBenchRow> run_kernels_bench(const KernelsBenchOptions& options, std::ostream& out);

}  // namespace hpusim::bench
