// Linked into a program (as an object library), it lets the Synapse layer bring the platform up
// on its first device acquire: the platform is built from the acquire's preset and overrides and
// lives until the program exits. It is never destroyed: static destruction at exit would tear
// SystemC down under it in no defined order.
#include <cstdlib>

#include "sim/platform/platform.h"

namespace hpusim::platform {
namespace {

std::string boot_platform(const BootRequest& request) {
  if (Platform* running = Platform::current()) return running->accepts(request);
  PlatformOptions options;
  if (!request.preset.empty()) options.preset = request.preset;
  options.overrides = request.overrides;
  options.box = request.box;
  options.cards = request.cards != 0 ? request.cards : 1;   // with a box, 1 is the box's count
  options.trace_path = request.trace_path;
  options.trace_packets = request.trace_packets;
  options.distributed = request.distributed;
  options.rendezvous = request.rendezvous;
  options.rank = request.rank;
  options.ranks = request.ranks;
  options.rendezvous_timeout_s = request.rendezvous_timeout_s;
  try {
    if (!request.host_time.empty()) options.time_source = cosim::parse_host_time_source(request.host_time);
    new Platform(options);   // Platform::current() from now on
    // A split box's process keeps its cards running for the others until all are done, and ends
    // MPI, when the program exits (the platform itself is never destroyed).
    if (options.distributed) std::atexit([] { Platform::current()->leave_at_exit(); });
  } catch (const std::exception& e) {
    return std::string("the card could not be built: ") + e.what();
  }
  return "";
}

const bool installed = [] {
  set_boot_handler(boot_platform);
  return true;
}();

}  // namespace
}  // namespace hpusim::platform
