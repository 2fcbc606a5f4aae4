// What the C API's translation units share: the thread's last error message, the helpers that
// set it, the guard that keeps exceptions from crossing the C boundary, and the graph lookup
// the compile entry point needs from the graph part.
#pragma once

#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "synapse/graph/graph.h"
#include "synapse/graph/status.h"
#include "synapse_types.h"

namespace hpusim::synapse::api {

// Handles are numbers from one process-wide counter, never reused, cast to the API's opaque
// pointer types: every handle of every kind (graph, section, tensor, stream, event, recipe) is a
// different number, so a handle passed as the wrong kind is found in no table and refused.
inline uint64_t new_handle_key() {
  static std::atomic<uint64_t> next{1};
  return next++;
}
template <class Handle>
uint64_t key_of(Handle h) {
  return reinterpret_cast<uintptr_t>(h);
}
template <class Handle>
Handle handle_of(uint64_t key) {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(key));
}

synStatus fail(synStatus status, std::string message);
synStatus finish(const graph::Result& r);
synStatus succeed();
const std::string& last_error();

// Runs `body` (returning synStatus); an exception becomes synOutOfHostMemory or synFail with
// the function's name in the message.
template <class Body>
synStatus guard(const char* function, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(synOutOfHostMemory, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(synFail, std::string(function) + ": internal error: " + e.what());
  } catch (...) {
    return fail(synFail, std::string(function) + ": internal error");
  }
}

// A copy of the graph behind a live handle (false for anything else). Defined by the graph part.
bool copy_graph(synGraphHandle handle, graph::Graph* out);

}  // namespace hpusim::synapse::api

