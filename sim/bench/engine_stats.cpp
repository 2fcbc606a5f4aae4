#include "sim/bench/engine_stats.h"

#include <string>

#include "hw/mme/mme_engine.h"
#include "hw/mmu/mmu.h"
#include "hw/tpc/tpc_core.h"

namespace hpusim::bench {
namespace {

// Registers `getter(block)` as a count under `scope.name`.
template <class Block, class Getter>
void count(stats::Scope& scope, const char* name, const char* unit, const char* desc, Block* block,
           Getter getter) {
  scope.formula(name, unit, desc, [block, getter] { return double(getter(*block)); });
}

}  // namespace

void register_engine_stats(stats::Registry& registry, hw::Card& card) {
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    const regs::QmanId id = regs::qman_from_index(i);
    hw::Qman* q = card.qman(id);
    if (q == nullptr) continue;
    auto s = registry.scope("qman." + stats::path_component(regs::qman_name(id)));
    count(s, "command_buffers", "count", "command buffers fetched", q, [](hw::Qman& b) { return b.stats().command_buffers; });
    count(s, "packets", "count", "packets executed", q, [](hw::Qman& b) { return b.stats().packets; });
    count(s, "messages", "count", "messages sent", q, [](hw::Qman& b) { return b.stats().messages; });
    count(s, "register_writes", "count", "engine register writes", q, [](hw::Qman& b) { return b.stats().register_writes; });
    count(s, "fence_waits", "count", "fences that waited", q, [](hw::Qman& b) { return b.stats().fence_waits; });
    count(s, "errors", "count", "error events", q, [](hw::Qman& b) { return b.stats().errors; });
  }
  for (unsigned ch = 0; hw::DmaCore* d = card.dma_core(ch); ++ch) {
    auto s = registry.scope("dma.ch" + std::to_string(ch));
    count(s, "commits", "count", "COMMIT writes that took effect", d, [](hw::DmaCore& b) { return b.stats().commits; });
    count(s, "transfers", "count", "transfers completed", d, [](hw::DmaCore& b) { return b.stats().transfers; });
    count(s, "failed_transfers", "count", "transfers that failed", d, [](hw::DmaCore& b) { return b.stats().failed_transfers; });
    count(s, "bytes", "bytes", "data bytes written", d, [](hw::DmaCore& b) { return b.stats().bytes; });
    count(s, "read_bursts", "count", "read bursts", d, [](hw::DmaCore& b) { return b.stats().read_bursts; });
    count(s, "write_bursts", "count", "write bursts", d, [](hw::DmaCore& b) { return b.stats().write_bursts; });
    count(s, "errors", "count", "error events", d, [](hw::DmaCore& b) { return b.stats().errors; });
    count(s, "busy_ps", "ps", "time busy", d, [](hw::DmaCore& b) { return b.stats().busy_ps; });
  }
  for (regs::SyncManager which : {regs::SyncManager::W_S, regs::SyncManager::E_S, regs::SyncManager::W_N,
                                  regs::SyncManager::E_N}) {
    hw::SyncManager* sm = &card.sync_manager(which);
    auto s = registry.scope("syncmgr." + stats::path_component(regs::sync_manager_name(which)));
    count(s, "sob_writes", "count", "SET/ADD writes to sync objects", sm, [](hw::SyncManager& b) { return b.stats().sob_writes; });
    count(s, "monitor_arms", "count", "monitors armed", sm, [](hw::SyncManager& b) { return b.stats().monitor_arms; });
    count(s, "monitor_fires", "count", "monitor payloads written", sm, [](hw::SyncManager& b) { return b.stats().monitor_fires; });
    count(s, "payload_errors", "count", "payload writes answered with an error", sm,
          [](hw::SyncManager& b) { return b.stats().payload_errors; });
  }
  for (hw::Mmu* m : card.mmus()) {
    auto s = registry.scope("mmu." + stats::path_component(m->config().engine));
    count(s, "requests", "count", "requests from the engine", m, [](hw::Mmu& b) { return b.stats().requests; });
    count(s, "tlb_hits", "count", "TLB hits", m, [](hw::Mmu& b) { return b.stats().tlb_hits; });
    count(s, "tlb_misses", "count", "TLB misses", m, [](hw::Mmu& b) { return b.stats().tlb_misses; });
    count(s, "walks", "count", "page-table walks", m, [](hw::Mmu& b) { return b.stats().walks; });
    count(s, "pte_reads", "count", "PTE reads through the fabric", m, [](hw::Mmu& b) { return b.stats().pte_reads; });
    count(s, "walk_ps", "ps", "time walking", m, [](hw::Mmu& b) { return b.stats().walk_ps; });
    count(s, "faults", "count", "page faults", m, [](hw::Mmu& b) { return b.stats().faults; });
    count(s, "invalidations", "count", "cache invalidations", m, [](hw::Mmu& b) { return b.stats().invalidations; });
  }
  for (unsigned t = 0; hw::TpcCore* core = card.tpc_core(t); ++t) {
    auto s = registry.scope("tpc.core" + std::to_string(t));
    count(s, "kernels", "count", "kernels run", core, [](hw::TpcCore& b) { return b.kernel_totals().kernels; });
    count(s, "bundles", "count", "bundles executed", core, [](hw::TpcCore& b) { return b.kernel_totals().bundles; });
    count(s, "cycles", "cycles", "cycles running kernels", core, [](hw::TpcCore& b) { return b.kernel_totals().cycles; });
    count(s, "busy_ps", "ps", "time running kernels", core, [](hw::TpcCore& b) { return b.kernel_totals().busy_ps; });
    count(s, "load_bytes", "bytes", "global bytes loaded", core, [](hw::TpcCore& b) { return b.kernel_totals().load_bytes; });
    count(s, "store_bytes", "bytes", "global bytes stored", core, [](hw::TpcCore& b) { return b.kernel_totals().store_bytes; });
    count(s, "faults", "count", "kernels that faulted", core, [](hw::TpcCore& b) { return b.kernel_totals().faulted; });
  }
  for (unsigned m = 0; m < card.mme_numbers(); ++m) {
    hw::MmeEngine* engine = card.mme_engine(m);
    if (engine == nullptr) continue;
    auto s = registry.scope("mme.engine" + std::to_string(m));
    count(s, "jobs", "count", "jobs run", engine, [](hw::MmeEngine& b) { return b.job_totals().jobs; });
    count(s, "macs", "count", "useful multiply-accumulates", engine, [](hw::MmeEngine& b) { return b.job_totals().macs; });
    count(s, "array_cycles", "cycles", "cycles the array was busy", engine,
          [](hw::MmeEngine& b) { return b.job_totals().array_cycles; });
    count(s, "busy_ps", "ps", "time running jobs", engine, [](hw::MmeEngine& b) { return b.job_totals().busy_ps; });
    count(s, "read_bytes", "bytes", "operand bytes read", engine, [](hw::MmeEngine& b) { return b.job_totals().read_bytes; });
    count(s, "write_bytes", "bytes", "output bytes written", engine, [](hw::MmeEngine& b) { return b.job_totals().write_bytes; });
    count(s, "faults", "count", "jobs that faulted", engine, [](hw::MmeEngine& b) { return b.job_totals().faulted; });
  }
}

}  // namespace hpusim::bench
