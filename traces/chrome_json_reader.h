// read_chrome_json: a Chrome JSON trace (hpusim's own, torch.profiler's, chrome://tracing's
// {"traceEvents": [...]} or a bare event array) into the same TraceModel read_perfetto gives:
// a process track per pid (named by "process_name" metadata), a thread track per pid/tid ("thread_name"),
// slices from "X" and "B"/"E" events, instants from "i"/"I", counters from "C" (one track per
// process, name and argument). Flow and async events are skipped. read_trace picks the reader
// from the file's first byte. Bad input throws std::runtime_error naming the file and the event.
#pragma once

#include <string>

#include "traces/trace_reader.h"

namespace hpusim::traces {

TraceModel read_chrome_json(const std::string& path);
TraceModel parse_chrome_json(const std::string& text, const std::string& what = "<memory>");
// Chrome JSON when the file starts with '{' or '[', else Perfetto.
TraceModel read_trace(const std::string& path);

}  // namespace hpusim::traces
