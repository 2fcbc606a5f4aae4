// The instruction schedule of a kernel body the glue writes (elementwise clusters): ops.inc's
// macros expanded into instructions, each vector's copy on scratch registers of its own,
// and a list schedule that issues each instruction as early as its operands allow, so that
// independent chains (the step's vectors, and independent ops) fill each other's latency.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::schedule {

// The instructions of ops.inc's macro `name` called with `args` (nested macros expanded), for
// vector `copy` of a step (0 .. kOpCopies - 1): copy 0 keeps the macros' scratch registers (V4..V8,
// VP1), copy 1 moves them to V24..V28, VP2 (as ops.inc's _PAIR macros do), copy 2 to V30..V34,
// VP3 and copy 3 to V35..V39, VP4, so the copies of an op can interleave. Empty: no such macro.
constexpr unsigned kOpCopies = 4;
std::vector<std::string> expand_op(const std::string& name, const std::vector<std::string>& args, unsigned copy);

// `line` with every register the map names replaced by its image (whole register names only).
std::string rename_registers(const std::string& line, const std::map<std::string, std::string>& moved);

// The instructions of `call` (a macro and its arguments) with the macros `definitions` defines
// (an assembly text; nested calls expanded, instructions sharing a bundle one a line); nullopt
// when a macro it calls is not defined there.
std::optional<std::vector<std::string>> expand_macro(const std::string& definitions, const std::string& call);

// `lines` (one instruction each, in an order that is correct) packed into bundles by a list
// schedule: every register read after write and write after write kept apart by the writer's
// latency (VPU 4 cycles, special functions and vector division 8, tensor loads `load_latency`:
// 16 for a read from HBM, 4 where the body's streams are prefetched and hit; local memory loads
// 4; scalar 1), a write after a read no earlier than the read's bundle, every store after every
// load (in-place updates; prefetches, which read ahead, excepted), VLM loads after the VLM stores
// before them and VLM stores after the VLM loads before them (the SLM likewise, and its stores in
// order); a bundle holds one instruction per slot (load, scalar, vector, store) and one
// immediate; the longest remaining path first (prefetches, on no path, fill free load slots).
// `last` (if any) goes in the last bundle (nest.inc's dim-0 step).
// A load the prefetch buffer serves (every preset's tpc.prefetch_hit_latency): the load latency
// of bodies whose streams are prefetched.
constexpr unsigned kPrefetchHitLatency = 4;
std::vector<std::string> list_schedule(const std::vector<std::string>& lines, const std::string& last = "",
                                       unsigned load_latency = 16);

// The bundles as nest.inc's dim-0 loop body, one a line: the last one carries the label end_d0.
std::string loop_body(const std::vector<std::string>& bundles);

}  // namespace hpusim::synapse::tpc_kernels::schedule
