#include <gtest/gtest.h>
#include <chrono>
#include "tests/dma/dma_bench.h"

namespace hpusim::testing {
namespace {
namespace dc = regs::dma_core;

TEST(DmaExplore, Bandwidths) {
  auto cfgs = DmaBench::channels({0, 1, 2, 3, 4, 5});
  cfgs[2].outstanding = 32;
  cfgs[3].outstanding = 64;
  cfgs[4].outstanding = 128;
  cfgs[5].outstanding = 256;
  cfgs[0].outstanding = 32;
  DmaBench b(cfgs);
  for (size_t i = 0; i < 6; ++i) b.enable(i);
  const uint32_t mb = 8 << 20;
  for (uint64_t off : {uint64_t(64) << 20, (uint64_t(64) << 20) + (512 << 10), (uint64_t(64) << 20) + (1 << 13)})
  for (size_t i = 2; i < 6; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    b.copy(i, b.dram(0), b.dram(off), mb);
    b.run_until_idle(i);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("hbm copy off %lx window %u: %.1f GB/s  (%.2f s wall)\n", off, b.core(i).config().outstanding, b.last_gbps(), s);
  }
  for (size_t i = 2; i < 6; ++i) {
    b.program(i, 0x11, b.dram(0), mb, dc::kCommitLin | dc::kCommitMemSet);
    b.run_until_idle(i);
    printf("memset window %u: %.1f GB/s\n", b.core(i).config().outstanding, b.last_gbps());
  }
  for (size_t i = 2; i < 6; ++i) {
    b.copy(i, b.dram(0), b.sram(0x1000), mb);
    b.run_until_idle(i);
    printf("hbm->sram window %u: %.1f GB/s\n", b.core(i).config().outstanding, b.last_gbps());
    auto st0 = b.core(i).stats();
    b.copy(i, b.sram(0x1000), b.sram(0x1000000), mb);
    b.run_until_idle(i);
    auto st = b.core(i).stats();
    printf("  rd lat %.1f ns wr lat %.1f ns\n", double(st.read_latency_ps - st0.read_latency_ps) / (st.read_bursts - st0.read_bursts) / 1000,
       double(st.write_latency_ps - st0.write_latency_ps) / (st.write_bursts - st0.write_bursts) / 1000);
    printf("sram->sram window %u: %.1f GB/s\n", b.core(i).config().outstanding, b.last_gbps());
  }
  for (size_t i = 0; i < 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    b.copy(i, b.host(0x100000), b.dram(0), mb);
    b.run_until_idle(i);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("h2d window %u: %.1f GB/s  (%.2f s wall) pcie payload %.1f\n", b.core(i).config().outstanding, b.last_gbps(), s,
           b.system.pcie().payload_bytes_per_second(256, true) / 1e9);
    b.copy(i, b.dram(0), b.host(0x10000000), mb);
    b.run_until_idle(i);
    printf("d2h window %u: %.1f GB/s\n", b.core(i).config().outstanding, b.last_gbps());
  }
  printf("port %.1f  hbm/2 %.1f\n", 256 * 1.1, b.system.hbm().peak_bytes_per_second() / 2e9);
}
}  // namespace
}  // namespace hpusim::testing
namespace hpusim::testing {
namespace {
TEST(DmaExplore, Latency) {
  auto cfgs = DmaBench::channels({2});
  DmaBench b(cfgs);
  b.enable(0);
  for (uint32_t n : {256u, 512u, 1024u, 4096u}) {
  b.copy(0, b.sram(0x1000), b.sram(0x100000), n);
  b.run_until_idle(0);
  auto& d = b.recorder.done.back(); auto& s = b.recorder.started.back();
  printf("sram->sram %u: %lu ps (setup %lu)\n", n, d.at - s.at, 16 * b.core(0).config().cycle_ps);
  b.copy(0, b.dram(0x1000), b.dram(0x100000), n);
  b.run_until_idle(0);
  auto& d2 = b.recorder.done.back(); auto& s2 = b.recorder.started.back();
  printf("dram->dram %u: %lu ps\n", n, d2.at - s2.at);
  }
}
}
}
namespace hpusim::testing {
namespace {
TEST(DmaExplore, Trace) {
  auto cfgs = DmaBench::channels({2});
  DmaBench b(cfgs);
  b.enable(0);
  b.copy(0, b.sram(0x10000), b.sram(0x1000000), 64*256);
  b.run_until_idle(0);
  printf("%.1f GB/s\n", b.last_gbps());
}
}
}
