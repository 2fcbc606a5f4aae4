// The instruction schedule of a kernel body the glue writes (elementwise clusters): ops.inc's
// macros expanded into instructions, the second vector's copy on scratch registers of its own,
// and a list schedule that issues each instruction as early as its operands allow, so that
// independent chains (the step's two vectors, and independent ops) fill each other's latency.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels::schedule {

// The instructions of ops.inc's macro `name` called with `args` (nested macros expanded). With
// `second`, its scratch registers (V4..V8, VP1) are renamed to V24..V28, VP2, so the two vectors'
// copies of an op can interleave (ops.inc's _PAIR macros do the same). Empty: no such macro.
std::vector<std::string> expand_op(const std::string& name, const std::vector<std::string>& args, bool second);

// `line` with every register the map names replaced by its image (whole register names only).
std::string rename_registers(const std::string& line, const std::map<std::string, std::string>& moved);

// The instructions of `call` (a macro and its arguments) with the macros `definitions` defines
// (an assembly text; nested calls expanded, instructions sharing a bundle one a line); nullopt
// when a macro it calls is not defined there.
std::optional<std::vector<std::string>> expand_macro(const std::string& definitions, const std::string& call);

// `lines` (one instruction each, in an order that is correct) packed into bundles by a list
// schedule: every register read after write and write after write kept apart by the writer's
// latency (VPU 4 cycles, special functions 8, tensor loads 16, scalar 1), a write after a read no
// earlier than the read's bundle, every store after every load (in-place updates), VLM loads
// after the VLM stores before them and VLM stores after the VLM loads before them; a bundle holds
// one instruction per slot (load, scalar, vector, store) and one immediate; the longest
// remaining path first. `last` (if any) goes in the last bundle (nest.inc's dim-0 step).
std::vector<std::string> list_schedule(const std::vector<std::string>& lines, const std::string& last = "");

}  // namespace hpusim::synapse::tpc_kernels::schedule
