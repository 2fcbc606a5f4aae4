#include "sim/bench/memory_stats.h"

namespace hpusim::bench {

void register_memory_system_stats(stats::Registry& registry, hw::MemorySystem& system) {
  auto& hbm = system.hbm();
  auto h = registry.scope("hbm");
  h.formula("requests", "count", "requests received", [&hbm] { return double(hbm.stats().requests); });
  h.formula("read_bytes", "bytes", "bytes read", [&hbm] { return double(hbm.stats().read_bytes); });
  h.formula("write_bytes", "bytes", "bytes written", [&hbm] { return double(hbm.stats().write_bytes); });
  h.formula("channel_requests", "count", "requests after splitting at interleave boundaries",
            [&hbm] { return double(hbm.stats().channel_requests); });
  h.formula("backpressured", "count", "channel requests that waited for controller queue space",
            [&hbm] { return double(hbm.stats().backpressured); });
  h.formula("errors", "count", "requests answered with an error", [&hbm] { return double(hbm.stats().errors); });
  for (uint32_t ch = 0; ch < hbm.channels(); ++ch) {
    const hbm::ChannelController& c = hbm.controller(ch);
    auto s = h.scope("ch" + std::to_string(ch));
    s.formula("read_bursts", "count", "RD commands", [&c] { return double(c.read_bursts()); });
    s.formula("write_bursts", "count", "WR commands", [&c] { return double(c.write_bursts()); });
    s.formula("activates", "count", "ACT commands", [&c] { return double(c.activates()); });
    s.formula("precharges", "count", "PRE commands", [&c] { return double(c.precharges()); });
    s.formula("refreshes", "count", "refresh commands (REF and REFSB)", [&c] { return double(c.refreshes()); });
    s.formula("per_bank_refreshes", "count", "single-bank REFSB commands", [&c] { return double(c.per_bank_refreshes()); });
    s.formula("row_hits", "count", "requests that found their row open", [&c] { return double(c.row_hits()); });
    s.formula("row_misses", "count", "requests that activated a closed bank", [&c] { return double(c.row_misses()); });
    s.formula("row_conflicts", "count", "requests that closed another row first",
              [&c] { return double(c.row_conflicts()); });
    s.formula("busy_data_cycles", "cycles", "data-bus cycles carrying bursts", [&c] { return double(c.busy_data_cycles()); });
    s.formula("mode_switches", "count", "read/write drain-mode changes", [&c] { return double(c.mode_switches()); });
  }

  auto& sram = system.sram();
  auto s = registry.scope("sram");
  s.formula("reads", "count", "read accesses", [&sram] { return double(sram.stats().reads); });
  s.formula("writes", "count", "write accesses", [&sram] { return double(sram.stats().writes); });
  s.formula("read_bytes", "bytes", "bytes read", [&sram] { return double(sram.stats().read_bytes); });
  s.formula("write_bytes", "bytes", "bytes written", [&sram] { return double(sram.stats().write_bytes); });
  s.formula("bank_wait_ps", "ps", "time accesses waited for a busy bank", [&sram] { return double(sram.stats().bank_wait_ps); });

  auto& pcie = system.pcie();
  auto p = registry.scope("pcie");
  p.formula("upstream_tlps", "count", "TLPs device to host", [&pcie] { return double(pcie.stats().upstream_tlps); });
  p.formula("downstream_tlps", "count", "TLPs host to device", [&pcie] { return double(pcie.stats().downstream_tlps); });
  p.formula("upstream_wire_bytes", "bytes", "bytes on the wire device to host, overheads included",
            [&pcie] { return double(pcie.stats().upstream_bytes); });
  p.formula("downstream_wire_bytes", "bytes", "bytes on the wire host to device, overheads included",
            [&pcie] { return double(pcie.stats().downstream_bytes); });
  p.formula("device_read_bytes", "bytes", "host memory bytes read by the device",
            [&pcie] { return double(pcie.stats().device_read_bytes); });
  p.formula("device_write_bytes", "bytes", "host memory bytes written by the device",
            [&pcie] { return double(pcie.stats().device_write_bytes); });
  p.formula("msis", "count", "message-signalled interrupts delivered", [&pcie] { return double(pcie.stats().msis); });

  auto& fabric = system.fabric();
  auto f = registry.scope("fabric");
  f.formula("unmapped_accesses", "count", "accesses to no target", [&fabric] { return double(fabric.unmapped_accesses()); });
  const auto targets = fabric.target_stats();
  for (size_t i = 0; i < targets.size(); ++i) {
    auto t = f.scope("target_" + stats::path_component(targets[i].name));
    t.formula("transactions", "count", "transactions through the port",
              [&fabric, i] { return double(fabric.target_stats()[i].transactions); });
    t.formula("request_bytes", "bytes", "write data towards the target",
              [&fabric, i] { return double(fabric.target_stats()[i].request_bytes); });
    t.formula("response_bytes", "bytes", "read data back from the target",
              [&fabric, i] { return double(fabric.target_stats()[i].response_bytes); });
    t.formula("waited_ps", "ps", "time transfers queued behind others on the port",
              [&fabric, i] { return double(fabric.target_stats()[i].waited_ps); });
  }
}

}  // namespace hpusim::bench
