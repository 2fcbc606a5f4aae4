// The host-bound analysis of a trace: per step, how long the host worked and waited, how long the
// device was busy and how long it idled waiting for the host, each engine's utilisation,
// compiles, CPU fallbacks and host synchronisations; over the steady steps a verdict
// (host-bound, device-bound, balanced) and guidance naming what to change.
//
// What it reads (the names hpusim's layers write; sim/analyze/README.md):
//   steps       slices "step N" (hpusim.torch.StepReport, hpusim run) or "ProfilerStep#N"
//               (torch.profiler); without any, the whole trace is one step
//   host waits  "wait: ..." slices (the PyTorch bridge) and the driver's "WAIT_CS" ioctls
//   device      slices of a "device ..." process: command buffers on QMAN stream tracks and
//               engine work on "TPC<n>", "MME<n>", "DMA<n> core" (without those, the launches of
//               "device: recipes")
//   compiles    "compile" / "recipe cache hit" slices (args graph, nodes and constants)
//   fallbacks   "cpu fallback <op>" slices; syncs: "wait: copy to host"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/trace_reader.h"

namespace hpusim::analyze {

struct StepMetrics {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t host_busy_ns = 0;         // the step minus the host's waits
  uint64_t host_wait_ns = 0;         // the host waiting for the device
  uint64_t device_busy_ns = 0;       // any engine busy
  uint64_t device_idle_ns = 0;       // the step minus device_busy_ns
  uint64_t idle_for_host_ns = 0;     // the device idle while the host works (not waiting)
  std::map<std::string, double> engine_class_use;   // "TPC", "MME", "DMA": mean busy fraction
  unsigned compiles = 0, cache_hits = 0;
  unsigned syncs = 0;                // host synchronisations reading values back (.item(), print, .cpu())
  unsigned ops = 0;                  // ops recorded or dispatched by the framework
  unsigned mark_steps = 0;
  std::map<std::string, unsigned> fallbacks;   // op -> count
  std::string verdict;

  uint64_t duration_ns() const { return end_ns - start_ns; }
};

struct EngineUse {
  std::string instance;   // "TPC3"
  std::string engine;     // "TPC"
  double busy_fraction = 0;   // over the steady steps
};

struct Recompile {
  std::string graph;      // the name the framework compiled it under
  unsigned compiles = 0;  // in the steady steps
  std::string change;     // what differs from its previous compile
};

struct Report {
  std::string source;
  std::vector<StepMetrics> steps;
  unsigned first_steady = 0;        // steps before it are warm-up (the leading steps that compile)
  StepMetrics steady;               // medians over the steady steps (counts: per step)
  std::vector<EngineUse> engines;
  std::vector<std::pair<std::string, uint64_t>> top_host;   // host work by kind, ns per steady step
  std::map<std::string, unsigned> fallbacks;                // over the whole trace
  std::vector<Recompile> recompiles;
  std::string verdict;              // "host-bound", "device-bound" or "balanced"
  std::vector<std::string> guidance;
};

// Throws std::runtime_error when the trace holds nothing to analyse (no host or device events).
Report analyze(const traces::TraceModel& trace, const std::string& source);

}  // namespace hpusim::analyze
