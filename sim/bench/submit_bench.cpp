#include "sim/bench/submit_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <stdexcept>

#include "driver/device.h"
#include "hw/qman/packets.h"
#include "sim/report/json_records.h"

namespace hpusim::bench {
namespace {

using driver::HlDevice;
using driver::uapi::hl_cs_chunk;

constexpr uint32_t kPage = 4096;

uint64_t make_cb(HlDevice& device, const std::vector<uint8_t>& bytes) {
  uint64_t handle = 0;
  if (device.cb_create(static_cast<uint32_t>(bytes.size()), &handle) != 0) throw std::runtime_error("CB create failed");
  void* memory = nullptr;
  const uint64_t length = (bytes.size() + kPage - 1) / kPage * kPage;
  if (device.mmap_cb(handle, length, &memory) != 0) throw std::runtime_error("CB mmap failed");
  std::memcpy(memory, bytes.data(), bytes.size());
  device.munmap_cb(memory, length);
  return handle;
}

hl_cs_chunk chunk(uint64_t handle, uint32_t size) {
  hl_cs_chunk c{};
  c.cb_handle = handle;
  c.queue_index = static_cast<uint32_t>(regs::QueueId::DMA_0_0);
  c.cb_size = size;
  return c;
}

void wait_done(HlDevice& device, uint64_t seq) {
  uint32_t status = 0;
  const int rc = device.wait(seq, 1000000, &status);
  if (rc != 0 || status != driver::uapi::HL_WAIT_CS_STATUS_COMPLETED) {
    throw std::runtime_error("command submission " + std::to_string(seq) + " did not complete (rc " +
                             std::to_string(rc) + ", status " + std::to_string(status) + ")");
  }
}

// Submits `total` NOP submissions, waiting after every `batch`; returns the case result.
SubmitCaseResult run_case(HlDevice& device, const std::string& name, uint32_t nops, uint64_t total, uint64_t batch) {
  qman::CommandBufferBuilder builder;
  for (uint32_t i = 0; i < nops; ++i) builder.nop();
  const uint32_t size = static_cast<uint32_t>(builder.size());
  const uint64_t handle = make_cb(device, builder.bytes());
  const uint64_t host_start = device.cosim().host_now_ps();
  const auto wall_start = std::chrono::steady_clock::now();
  uint64_t seq = 0;
  for (uint64_t done = 0; done < total;) {
    const uint64_t n = std::min(batch, total - done);
    for (uint64_t i = 0; i < n; ++i) {
      if (device.submit({chunk(handle, size)}, &seq) != 0) throw std::runtime_error("CS submit failed");
    }
    wait_done(device, seq);
    done += n;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double host_ns = double(device.cosim().host_now_ps() - host_start) / 1000.0;
  device.cb_destroy(handle);
  SubmitCaseResult r;
  r.name = name;
  r.size_bytes = size;
  r.submissions = total;
  r.sim_latency_ns = batch == 1 ? host_ns / double(total) : 0.0;
  r.sim_per_s = host_ns > 0 ? double(total) / (host_ns * 1e-9) : 0.0;
  r.wall_per_s = wall > 0 ? double(total) / wall : 0.0;
  return r;
}

}  // namespace

std::vector<SubmitCaseResult> run_submit_bench(const SubmitBenchOptions& options, std::ostream& out) {
  if (!(options.scale > 0)) throw std::invalid_argument("--scale must be greater than 0");
  auto count = [&](uint64_t n) { return std::max<uint64_t>(4, static_cast<uint64_t>(double(n) * options.scale)); };
  driver::HlDeviceOptions device_options;
  device_options.preset = options.preset;
  device_options.overrides = options.overrides;
  device_options.cs_timeout_us = 1000000;
  HlDevice device(device_options);
  if (int rc = device.open(); rc != 0) throw std::runtime_error("cannot open the device (" + std::to_string(rc) + ")");

  out << "hpusim bench submit — preset " << device.preset().name() << " (modeled host time)\n";
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
  device.close();

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
          .add("wall_per_s", r.wall_per_s);
      records.push_back(std::move(record));
    }
    report::write_json_records(records, options.json_path);
  }
  return results;
}

}  // namespace hpusim::bench
