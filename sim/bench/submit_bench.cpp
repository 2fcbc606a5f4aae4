#include "sim/bench/submit_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <stdexcept>

#include "arch/packets/packets.h"
#include "driver/device_file.h"
#include "sim/platform/platform.h"
#include "sim/report/json_records.h"
#include "synapse/hlthunk/hlthunk.h"
#include "traces/timeline.h"

namespace hpusim::bench {
namespace {

using uapi::hl_cs_chunk;

// The bench is a user-space client: the device file for the work, the platform's clock to time it.
struct Device {
  int fd;
  platform::Platform& platform;
  uint64_t dram_user_base;
  uint64_t host_now_ps() { return platform.host_now_ps(); }
};

constexpr uint32_t kPage = 4096;

uint64_t make_cb(Device& device, const std::vector<uint8_t>& bytes) {
  uint64_t handle = 0;
  if (hlthunk::cb_create(device.fd, static_cast<uint32_t>(bytes.size()), &handle) != 0) throw std::runtime_error("CB create failed");
  void* memory = nullptr;
  const uint64_t length = (bytes.size() + kPage - 1) / kPage * kPage;
  if (driver::hl_mmap(device.fd, length, handle, &memory) != 0) throw std::runtime_error("CB mmap failed");
  std::memcpy(memory, bytes.data(), bytes.size());
  driver::hl_munmap(memory, length);
  return handle;
}

hl_cs_chunk chunk(uint64_t handle, uint32_t size, regs::QueueId queue = regs::QueueId::DMA_0_0) {
  hl_cs_chunk c{};
  c.cb_handle = handle;
  c.queue_index = static_cast<uint32_t>(queue);
  c.cb_size = size;
  return c;
}

void wait_done(Device& device, uint64_t seq) {
  uint32_t status = 0;
  const int rc = hlthunk::wait(device.fd, seq, 1000000, &status);
  if (rc != 0 || status != uapi::HL_WAIT_CS_STATUS_COMPLETED) {
    throw std::runtime_error("command submission " + std::to_string(seq) + " did not complete (rc " +
                             std::to_string(rc) + ", status " + std::to_string(status) + ")");
  }
}

// Submits `total` NOP submissions, waiting after every `batch`; returns the case result.
SubmitCaseResult run_case(Device& device, const std::string& name, uint32_t nops, uint64_t total, uint64_t batch) {
  qman::CommandBufferBuilder builder;
  for (uint32_t i = 0; i < nops; ++i) builder.nop();
  const uint32_t size = static_cast<uint32_t>(builder.size());
  const uint64_t handle = make_cb(device, builder.bytes());
  const uint64_t host_start = device.host_now_ps();
  const auto wall_start = std::chrono::steady_clock::now();
  uint64_t seq = 0;
  for (uint64_t done = 0; done < total;) {
    const uint64_t n = std::min(batch, total - done);
    for (uint64_t i = 0; i < n; ++i) {
      if (hlthunk::submit(device.fd, {chunk(handle, size)}, &seq) != 0) throw std::runtime_error("CS submit failed");
    }
    wait_done(device, seq);
    done += n;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double host_ns = double(device.host_now_ps() - host_start) / 1000.0;
  hlthunk::cb_destroy(device.fd, handle);
  SubmitCaseResult r;
  r.name = name;
  r.size_bytes = size;
  r.submissions = total;
  r.sim_latency_ns = batch == 1 ? host_ns / double(total) : 0.0;
  r.sim_per_s = host_ns > 0 ? double(total) / (host_ns * 1e-9) : 0.0;
  r.wall_per_s = wall > 0 ? double(total) / wall : 0.0;
  return r;
}

// `reps` CSs of one LIN_DMA each between a mapped host buffer and DRAM, waiting for each.
SubmitCaseResult run_dma_case(Device& device, bool to_device, uint64_t bytes, uint64_t reps) {
  std::vector<uint8_t> host(bytes, 0x3C);
  uint64_t va = 0;
  if (hlthunk::host_memory_map(device.fd, host.data(), bytes, &va) != 0) throw std::runtime_error("mapping the host buffer failed");
  const uint64_t dram = device.dram_user_base;
  qman::CommandBufferBuilder builder;
  builder.lin_dma(to_device ? va : dram, to_device ? dram : va, static_cast<uint32_t>(bytes));
  const uint32_t size = static_cast<uint32_t>(builder.size());
  const uint64_t handle = make_cb(device, builder.bytes());
  const auto queue = to_device ? regs::QueueId::DMA_0_0 : regs::QueueId::DMA_1_0;
  const uint64_t host_start = device.host_now_ps();
  const auto wall_start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < reps; ++i) {
    uint64_t seq = 0;
    if (hlthunk::submit(device.fd, {chunk(handle, size, queue)}, &seq) != 0) throw std::runtime_error("CS submit failed");
    wait_done(device, seq);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double host_ns = double(device.host_now_ps() - host_start) / 1000.0;
  hlthunk::cb_destroy(device.fd, handle);
  hlthunk::memory_unmap(device.fd, va);
  SubmitCaseResult r;
  r.name = to_device ? "dma_host_to_dram" : "dma_dram_to_host";
  r.size_bytes = bytes;
  r.submissions = reps;
  r.sim_latency_ns = host_ns / double(reps);
  r.sim_per_s = host_ns > 0 ? double(reps) / (host_ns * 1e-9) : 0.0;
  r.wall_per_s = wall > 0 ? double(reps) / wall : 0.0;
  r.sim_gb_per_s = host_ns > 0 ? double(bytes * reps) / host_ns : 0.0;
  return r;
}

}  // namespace

std::vector<SubmitCaseResult> run_submit_bench(const SubmitBenchOptions& options, std::ostream& out) {
  if (!(options.scale > 0)) throw std::invalid_argument("--scale must be greater than 0");
  auto count = [&](uint64_t n) { return std::max<uint64_t>(4, static_cast<uint64_t>(double(n) * options.scale)); };
  platform::PlatformOptions platform_options;
  platform_options.preset = options.preset;
  platform_options.overrides = options.overrides;
  platform_options.trace_path = options.trace_path;
  platform_options.driver.cs_timeout_us = 1000000;
  platform::Platform box(platform_options);
  const int fd = driver::hl_open(platform::Platform::device_path(0).c_str());
  if (fd < 0) throw std::runtime_error("cannot open " + platform::Platform::device_path(0) + " (" + std::to_string(fd) + ")");
  uapi::hl_info_hw_ip_info info{};
  if (const int rc = hlthunk::hw_ip_info(fd, &info); rc != 0) {
    throw std::runtime_error("INFO failed (" + std::to_string(rc) + ")");
  }
  Device device{fd, box, info.dram_base_address};

  out << "hpusim bench submit — preset " << box.preset().name() << " (modeled host time)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-26s %8s %8s %14s %14s %14s\n", "case", "CB bytes", "CS", "sim latency ns",
                "sim CS/s", "wall CS/s");
  out << line << std::string(90, '-') << "\n";
  std::vector<SubmitCaseResult> results;
  struct Case {
    const char* name;
    uint32_t nops;
    uint64_t total;
    uint64_t batch;
  };
  const Case cases[] = {
      {"nop_cs_round_trip", 1, 200, 1},     {"nop_cs_round_trip_64nops", 64, 200, 1},
      {"nop_cs_throughput_batch16", 1, 1024, 16}, {"nop_cs_throughput_batch64", 1, 2048, 64},
  };
  for (const Case& c : cases) {
    SubmitCaseResult r = run_case(device, c.name, c.nops, count(c.total), c.batch);
    std::snprintf(line, sizeof line, "%-26s %8llu %8llu %14.1f %14.0f %14.0f\n", r.name.c_str(),
                  static_cast<unsigned long long>(r.size_bytes), static_cast<unsigned long long>(r.submissions),
                  r.sim_latency_ns, r.sim_per_s, r.wall_per_s);
    out << line << std::flush;
    results.push_back(r);
  }
  out << "\n";
  std::snprintf(line, sizeof line, "%-26s %10s %6s %14s %12s %14s\n", "case", "bytes", "CS", "sim latency ns",
                "sim GB/s", "wall CS/s");
  out << line << std::string(88, '-') << "\n";
  for (const bool to_device : {true, false}) {
    for (const uint64_t bytes : {uint64_t{4} << 10, uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{16} << 20,
                                 uint64_t{64} << 20}) {
      // Fewer repetitions for the big transfers: each 64 MB one is ~0.3 M bursts to simulate.
      const uint64_t reps = std::max<uint64_t>(1, static_cast<uint64_t>(double(bytes >= (16u << 20) ? 2 : 20) * options.scale));
      SubmitCaseResult r = run_dma_case(device, to_device, bytes, reps);
      std::snprintf(line, sizeof line, "%-26s %10llu %6llu %14.1f %12.2f %14.1f\n", r.name.c_str(),
                    static_cast<unsigned long long>(r.size_bytes), static_cast<unsigned long long>(r.submissions),
                    r.sim_latency_ns, r.sim_gb_per_s, r.wall_per_s);
      out << line << std::flush;
      results.push_back(r);
    }
  }
  driver::hl_close(fd);
  if (!options.trace_path.empty()) {
    box.write_trace();
    out << "trace: " << options.trace_path << "\n";
  }

  if (!options.json_path.empty()) {
    std::vector<report::JsonRecord> records;
    for (const SubmitCaseResult& r : results) {
      report::JsonRecord record;
      record.add("preset", options.preset)
          .add("case", r.name)
          .add("size_bytes", r.size_bytes)
          .add("submissions", r.submissions)
          .add("sim_latency_ns", r.sim_latency_ns)
          .add("sim_per_s", r.sim_per_s)
          .add("wall_per_s", r.wall_per_s)
          .add("sim_gb_per_s", r.sim_gb_per_s);
      records.push_back(std::move(record));
    }
    report::write_json_records(records, options.json_path);
  }
  return results;
}

}  // namespace hpusim::bench
