#include "sim/bench/gemm_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <regex>
#include <stdexcept>

#include "hw/mme/mme_compute.h"
#include "hw/mme/mme_engine.h"
#include "arch/mme/mme_launch.h"
#include "arch/packets/packets.h"
#include "sim/bench/bench_card.h"
#include "sim/report/json_records.h"
#include "sim/preset/preset.h"

namespace hpusim::bench {
namespace {

constexpr unsigned kFirstSob = 240;   // one sync object per engine
constexpr unsigned kSamples = 48;     // output elements checked per case

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Operand element `index` of operand `which`: a value in [-1, 1), representable in the type.
float operand_value(uint64_t index, unsigned which, mme::MmeType type) {
  const float v = static_cast<float>(static_cast<int64_t>(mix(index * 2 + which) >> 40) - (1 << 23)) / float(1 << 23);
  return type == mme::MmeType::Bf16 ? mme::bf16_to_f32(mme::f32_to_bf16(v)) : v;
}

void write_operand(BenchCard& bench, uint64_t base, uint64_t count, unsigned which, mme::MmeType type, bool sram) {
  const uint32_t e = mme::type_bytes(type);
  std::vector<uint8_t> block;
  const uint64_t per_block = uint64_t{1} << 22;
  for (uint64_t first = 0; first < count; first += per_block) {
    const uint64_t n = std::min(per_block, count - first);
    block.resize(n * e);
    for (uint64_t i = 0; i < n; ++i) {
      const float v = operand_value(first + i, which, type);
      if (type == mme::MmeType::Bf16) {
        const uint16_t h = mme::f32_to_bf16(v);
        std::memcpy(block.data() + i * 2, &h, 2);
      } else {
        std::memcpy(block.data() + i * 4, &v, 4);
      }
    }
    bench.on_sim_thread([&] {
      auto& store = sram ? bench.card().memory().sram().store() : bench.card().memory().hbm().store();
      store.write(base + first * e, block.data(), block.size());
    });
  }
}

std::string shape_text(const GemmCase& c) {
  std::string s = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
  if (c.batch > 1) s = std::to_string(c.batch) + "*" + s;
  return s;
}

void print_header(std::ostream& out, const preset::Card& card, unsigned engines, const hw::MmeEngineParams& p,
                  double peak_tflops, double mem_peak_gbps, const std::string& memory) {
  char line[512];
  const auto& g = p.geometries.front();
  std::snprintf(line, sizeof line,
                "hpusim bench gemm — preset %s: %u MME engines (master+slave, %ux%u PEs in geometry 0) at %.0f MHz, "
                "operands in %s\n",
                card.name().c_str(), engines, g.rows, g.cols, double(card.clocks().mme_mhz()), memory.c_str());
  out << line;
  std::string f32 = "bf16 and f32 alike";
  if (p.f32_array_cycles_per_k > 1) {
    f32 = "bf16; f32 a " + std::to_string(p.f32_array_cycles_per_k) + "th of it, mme.f32_array_cycles_per_k";
  }
  std::snprintf(line, sizeof line,
                "peak: one MAC per PE per cycle = 2 flop: engines x PEs x 2 x clock = %.1f TFLOPS (%s); "
                "memory roof %.1f GB/s (HBM)\n",
                peak_tflops, f32.c_str(), mem_peak_gbps);
  out << line;
  std::snprintf(line, sizeof line, "%-8s %-19s %-4s %12s %9s %7s %8s %-8s %-17s %7s %10s\n", "case", "shape", "type",
                "cycles", "TFLOPS", "%peak", "GB/s", "bound", "super-tile", "wall s", "GMAC/s");
  out << line << std::string(118, '-') << "\n" << std::flush;
}

void print_row(std::ostream& out, const GemmCaseResult& r) {
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-19s %-4s %12llu %9.2f %6.1f%% %8.1f %-8s %-17s %7.2f %10.2f\n",
                r.shape.label.c_str(), shape_text(r.shape).c_str(), r.shape.dtype.c_str(),
                static_cast<unsigned long long>(r.cycles), r.tflops, r.pct_peak, r.gbps, r.bound.c_str(),
                r.supertile.c_str(), r.wall_seconds, r.sim_macs_per_s / 1e9);
  out << line << std::flush;
}

// HBM controller counters summed over channels.
struct HbmTotals {
  uint64_t row_hits = 0, row_misses = 0, row_conflicts = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t cache_hits = 0, cache_lines = 0;
};
HbmTotals hbm_totals(BenchCard& bench) {
  return bench.on_sim_thread([&] {
    HbmTotals t;
    const auto& hbm = bench.card().memory().hbm();
    for (uint32_t c = 0; c < hbm.channels(); ++c) {
      const auto& s = hbm.controller(c).stats();
      t.row_hits += s.row_hits;
      t.row_misses += s.row_misses;
      t.row_conflicts += s.row_conflicts;
    }
    t.read_bytes = hbm.stats().read_bytes;
    t.write_bytes = hbm.stats().write_bytes;
    if (const hw::HbmCache* cache = bench.card().memory().hbm_cache()) {
      const hw::HbmCacheStats& c = cache->stats();
      t.cache_hits = c.read_hits + c.write_hits;
      t.cache_lines = t.cache_hits + c.read_misses + c.write_misses;
    }
    return t;
  });
}

}  // namespace

GemmCase parse_gemm_case(const std::string& text) {
  static const std::regex form(R"((?:(\d+)\*)?(\d+)x(\d+)x(\d+)((?::f32|:bf16|:rowmajor)*))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    throw std::invalid_argument("GEMM shape '" + text + "' is not [BATCH*]MxNxK[:f32][:rowmajor]");
  }
  GemmCase c;
  c.label = "custom";
  try {
    c.batch = m[1].matched ? static_cast<uint32_t>(std::stoul(m[1])) : 1;
    c.m = static_cast<uint32_t>(std::stoul(m[2]));
    c.n = static_cast<uint32_t>(std::stoul(m[3]));
    c.k = static_cast<uint32_t>(std::stoul(m[4]));
  } catch (const std::exception&) {
    throw std::invalid_argument("GEMM shape '" + text + "' has a dimension out of range");
  }
  const std::string flags = m[5];
  if (flags.find(":f32") != std::string::npos) c.dtype = "f32";
  if (flags.find(":rowmajor") != std::string::npos) c.transpose_a = false;
  if (c.m == 0 || c.n == 0 || c.k == 0 || c.batch == 0) throw std::invalid_argument("GEMM shape '" + text + "' has a zero dimension");
  return c;
}

std::vector<GemmCase> default_gemm_cases() {
  std::vector<GemmCase> cases;
  for (uint32_t s = 64; s <= 8192; s *= 2) cases.push_back({s, s, s, 1, "bf16", true, "square"});
  cases.push_back({16, 8192, 8192, 1, "bf16", true, "skinny"});
  cases.push_back({8192, 8192, 64, 1, "bf16", true, "skinny"});
  cases.push_back({8192, 64, 8192, 1, "bf16", true, "skinny"});
  cases.push_back({128, 128, 128, 64, "bf16", true, "batched"});
  cases.push_back({512, 512, 512, 16, "bf16", true, "batched"});
  cases.push_back({2048, 2048, 2048, 1, "f32", true, "f32"});
  cases.push_back({2048, 2048, 2048, 1, "bf16", false, "layout"});
  return cases;
}

std::vector<GemmCaseResult> run_gemm_bench(const GemmBenchOptions& options, std::ostream& out) {
  if (options.memory != "hbm" && options.memory != "sram") {
    throw std::invalid_argument("--memory must be hbm or sram, not '" + options.memory + "'");
  }
  if (!options.json_path.empty() && !std::ofstream(options.json_path, std::ios::app)) {
    throw std::runtime_error("cannot write output file '" + options.json_path + "'");
  }
  const preset::Card& preset = options.card;
  if (preset.mme().masters() == 0) throw std::invalid_argument("the preset has no MME (mme.masters is 0)");
  const bool sram = options.memory == "sram";
  BenchCard bench(preset);
  std::vector<unsigned> engines;
  for (unsigned m = 0; m < bench.card().mme_numbers(); ++m) {
    if (bench.card().mme_engine(m) != nullptr) engines.push_back(m);
  }
  const hw::MmeEngineParams params = bench.card().mme_engine(engines.front())->params();
  const double ghz = preset.clocks().mme_mhz() / 1000.0;
  const uint64_t pes = uint64_t{params.geometries.front().rows} * params.geometries.front().cols;
  const double peak_tflops = double(engines.size()) * double(pes) * 2 * ghz / 1000.0;
  const double mem_peak = bench.on_sim_thread([&] { return bench.card().memory().hbm().peak_bytes_per_second(); }) / 1e9;
  const uint64_t base = sram ? preset.memory_map().sram_base() + preset.memory_map().sram_reserved_bytes() : 0x40000000ull;
  const uint64_t capacity = sram ? preset::sram_scratchpad_bytes(preset) - preset.memory_map().sram_reserved_bytes() : (3ull << 30);
  for (unsigned e : engines) bench.open_stream(regs::mme_qman(e));
  print_header(out, preset, static_cast<unsigned>(engines.size()), params, peak_tflops, mem_peak, options.memory);

  const std::vector<GemmCase> cases = options.cases.empty() ? default_gemm_cases() : options.cases;
  std::vector<GemmCaseResult> results;
  for (const GemmCase& c : cases) {
    if (c.m == 0 || c.n == 0 || c.k == 0 || c.batch == 0) throw std::invalid_argument("a GEMM case has a zero dimension");
    if (std::max({c.m, c.n, c.k}) > options.max_size) continue;
    const mme::MmeType type = c.dtype == "f32" ? mme::MmeType::F32 : mme::MmeType::Bf16;
    if (c.dtype != "f32" && c.dtype != "bf16") throw std::invalid_argument("dtype must be bf16 or f32, not " + c.dtype);
    const uint32_t e = mme::type_bytes(type);
    const uint64_t a_elems = uint64_t{c.m} * c.k * c.batch, b_elems = uint64_t{c.k} * c.n * c.batch;
    const uint64_t o_elems = uint64_t{c.m} * c.n * c.batch;
    const auto align = [](uint64_t v) { return (v + (1u << 20) - 1) / (1u << 20) * (1u << 20); };
    const uint64_t a_addr = base, b_addr = a_addr + align(a_elems * e), o_addr = b_addr + align(b_elems * e);
    const uint32_t eo = e;   // the output has the input's type (bf16 in, bf16 out)
    if (o_addr + o_elems * eo - base > capacity) {
      out << "(skipping " << shape_text(c) << ": its operands do not fit " << options.memory << ")\n";
      continue;
    }
    bench.start_cold("gemm");
    write_operand(bench, a_addr, a_elems, 0, type, sram);
    write_operand(bench, b_addr, b_elems, 1, type, sram);

    // Split over the engines: batches when there are enough, else output columns.
    std::vector<mme::MmeJob> jobs;
    const unsigned parts = c.batch >= engines.size() ? static_cast<unsigned>(engines.size())
                                                     : static_cast<unsigned>(std::min<uint64_t>(engines.size(), c.n / 64));
    for (unsigned p = 0; p < std::max(parts, 1u); ++p) {
      mme::MmeJob j;
      j.in = type;
      j.out = type;
      j.transpose_a = c.transpose_a;
      j.m = c.m, j.k = c.k;
      j.lda = c.transpose_a ? c.m : c.k, j.ldb = c.n, j.ldo = c.n;
      j.batch_stride_a = uint64_t{c.m} * c.k, j.batch_stride_b = uint64_t{c.k} * c.n, j.batch_stride_o = uint64_t{c.m} * c.n;
      if (c.batch >= engines.size() && c.batch > 1) {
        const uint32_t first = c.batch * p / parts, last = c.batch * (p + 1) / parts;
        j.batch = last - first, j.n = c.n;
        j.a = a_addr + first * j.batch_stride_a * e, j.b = b_addr + first * j.batch_stride_b * e;
        j.o = o_addr + first * j.batch_stride_o * eo;
      } else {
        const uint32_t parts_n = std::max(parts, 1u);
        const uint32_t first = c.n / 64 * p / parts_n * 64, last = p + 1 == parts_n ? c.n : c.n / 64 * (p + 1) / parts_n * 64;
        j.batch = c.batch, j.n = last - first;
        j.a = a_addr, j.b = b_addr + uint64_t{first} * e, j.o = o_addr + uint64_t{first} * eo;
      }
      j.so_address = bench.sob_address(kFirstSob + p);
      j.so_message = qman::sob_write_value(1, true);
      jobs.push_back(j);
    }
    std::vector<size_t> before(jobs.size());
    std::vector<uint32_t> sob_before(jobs.size());
    for (size_t p = 0; p < jobs.size(); ++p) {
      before[p] = bench.on_sim_thread([&] { return bench.card().mme_engine(engines[p])->job_totals().jobs; });
      sob_before[p] = bench.sob_value(kFirstSob + static_cast<unsigned>(p));
    }
    const HbmTotals hbm_before = hbm_totals(bench);
    const auto start = std::chrono::steady_clock::now();
    for (size_t p = 0; p < jobs.size(); ++p) {
      bench.submit(regs::mme_qman(engines[p]),
                   mme::build_mme_command_buffer(jobs[p], static_cast<uint32_t>(params.geometries.size())));
    }
    bool done = false;
    auto last_report = start;
    while (!done) {
      bench.sim().charge_ns(2000);
      bench.sim().sync_device();
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report > std::chrono::seconds(10)) {
        // Long cases say how far they are (stderr, so the table stays clean).
        last_report = now;
        uint64_t done_chunks = 0, total_chunks = 0;
        bench.on_sim_thread([&] {
          for (size_t p = 0; p < jobs.size(); ++p) {
            const auto [d, t] = bench.card().mme_engine(engines[p])->job_progress();
            done_chunks += d;
            total_chunks += t;
          }
        });
        if (total_chunks > 0) {
          std::fprintf(stderr, "  %s: %.0f%% after %.0f s\n", shape_text(c).c_str(), 100.0 * double(done_chunks) / double(total_chunks),
                       std::chrono::duration<double>(now - start).count());
        }
      }
      done = bench.on_sim_thread([&] {
        for (size_t p = 0; p < jobs.size(); ++p) {
          if (bench.card().mme_engine(engines[p])->job_totals().jobs <= before[p]) return false;
        }
        return true;
      });
    }
    const HbmTotals hbm_after = hbm_totals(bench);
    GemmCaseResult r;
    r.shape = c;
    r.engines = static_cast<unsigned>(jobs.size());
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    hw::Picoseconds first = ~hw::Picoseconds{0}, last = 0;
    std::string fault;
    std::string supertile;
    bench.on_sim_thread([&] {
      for (size_t p = 0; p < jobs.size(); ++p) {
        const hw::MmeJobStats* job = bench.card().mme_engine(engines[p])->job(before[p] + 1);
        if (job == nullptr) throw std::runtime_error("bench gemm: the engine's job record is gone");
        const hw::MmeJobStats& s = *job;
        first = std::min(first, s.start_ps);
        last = std::max(last, s.end_ps);
        r.macs += s.macs;
        r.read_bytes += s.read_bytes;
        r.write_bytes += s.write_bytes;
        r.operand_stall_cycles = std::max(r.operand_stall_cycles, s.operand_stall_cycles);
        r.chunk_fetch_cycles = std::max(r.chunk_fetch_cycles, s.chunks ? s.chunk_fetch_cycles / s.chunks : 0);
        r.host_compute_seconds += s.host_compute_seconds;
        r.host_gather_seconds += s.host_gather_seconds;
        supertile = std::to_string(s.supertile_rows) + "x" + std::to_string(s.supertile_cols) + " kc " + std::to_string(s.kc);
        if (s.faulted && fault.empty()) fault = bench.card().mme_engine(engines[p])->last_fault().message;
      }
    });
    if (!fault.empty()) throw std::runtime_error(shape_text(c) + ": MME fault: " + fault);
    for (size_t p = 0; p < jobs.size(); ++p) {
      if (bench.sob_value(kFirstSob + static_cast<unsigned>(p)) != sob_before[p] + 1) {
        throw std::runtime_error(shape_text(c) + ": an engine sent no end-of-job message");
      }
    }
    // Sampled outputs against the reference order.
    for (unsigned s = 0; s < kSamples; ++s) {
      const uint64_t pick = mix(s + 0x51);
      const uint64_t b = pick % c.batch, i = (pick >> 16) % c.m, j = (pick >> 36) % c.n;
      float acc = 0.0f;
      for (uint64_t kk = 0; kk < c.k; ++kk) {
        const uint64_t ai = b * c.m * c.k + (c.transpose_a ? kk * c.m + i : i * c.k + kk);
        const float prod = operand_value(ai, 0, type) * operand_value(b * c.k * c.n + kk * c.n + j, 1, type);
        acc = acc + prod;
      }
      uint32_t got = 0;
      const uint64_t address = o_addr + (b * c.m * c.n + i * c.n + j) * eo;
      bench.on_sim_thread([&] {
        auto& store = sram ? bench.card().memory().sram().store() : bench.card().memory().hbm().store();
        store.read(address, &got, eo);
      });
      const uint32_t want = type == mme::MmeType::Bf16 ? mme::f32_to_bf16(acc) : mme::f32_bits(acc);
      if (got != want) {
        throw std::runtime_error(shape_text(c) + ": output (" + std::to_string(b) + ", " + std::to_string(i) + ", " +
                                 std::to_string(j) + ") has bits " + std::to_string(got) + ", the reference " + std::to_string(want));
      }
    }
    r.sim_time_ps = last - first;
    r.cycles = r.sim_time_ps / params.cycle_ps;
    const double seconds = double(r.sim_time_ps) * 1e-12;
    r.tflops = 2.0 * double(r.macs) / seconds / 1e12;
    // An f32 job's tile steps take mme.f32_array_cycles_per_k cycles per common-dim value.
    r.peak_tflops = type == mme::MmeType::F32 ? peak_tflops / params.f32_array_cycles_per_k : peak_tflops;
    r.pct_peak = 100.0 * r.tflops / r.peak_tflops;
    r.mem_peak_gbps = mem_peak;
    r.gbps = double(r.read_bytes + r.write_bytes) / seconds / 1e9;
    r.supertile = supertile;
    const uint64_t hbm_requests = (hbm_after.row_hits - hbm_before.row_hits) + (hbm_after.row_misses - hbm_before.row_misses) +
                                  (hbm_after.row_conflicts - hbm_before.row_conflicts);
    if (hbm_requests > 0) {
      r.hbm_row_hit_pct = 100.0 * double(hbm_after.row_hits - hbm_before.row_hits) / double(hbm_requests);
      r.hbm_row_conflict_pct = 100.0 * double(hbm_after.row_conflicts - hbm_before.row_conflicts) / double(hbm_requests);
    }
    r.hbm_read_bytes = hbm_after.read_bytes - hbm_before.read_bytes;
    r.hbm_write_bytes = hbm_after.write_bytes - hbm_before.write_bytes;
    if (hbm_after.cache_lines > hbm_before.cache_lines) {
      r.cache_hit_pct = 100.0 * double(hbm_after.cache_hits - hbm_before.cache_hits) /
                        double(hbm_after.cache_lines - hbm_before.cache_lines);
    }
    // With the SRAM's HBM cache the HBM moves only the misses and write-backs: those decide.
    const bool cached = hbm_after.cache_lines > hbm_before.cache_lines;
    const double moved = cached ? double(r.hbm_read_bytes + r.hbm_write_bytes) : double(r.read_bytes + r.write_bytes);
    r.bound = 2.0 * double(r.macs) >= r.peak_tflops * 1e3 / mem_peak * moved ? "compute" : "memory";
    r.sim_macs_per_s = double(r.macs) / r.wall_seconds;
    print_row(out, r);
    results.push_back(r);
  }
  char line[256];
  for (const GemmCaseResult& r : results) {
    if (r.shape.label == "square" && r.shape.m == std::min<uint32_t>(8192, options.max_size)) {
      std::snprintf(line, sizeof line,
                    "speed: %s bf16: %.2e simulated MACs per wall second (%.1f s; the arithmetic took %.1f s on worker "
                    "threads); ONNXim's reference figure is about 2e8 for 1024^3\n",
                    shape_text(r.shape).c_str(), r.sim_macs_per_s, r.wall_seconds, r.host_compute_seconds);
      out << line;
    }
  }
  if (!options.json_path.empty()) write_gemm_bench_json(results, preset.name(), options.json_path);
  return results;
}

void write_gemm_bench_json(const std::vector<GemmCaseResult>& results, const std::string& preset,
                           const std::string& path) {
  std::vector<report::JsonRecord> records;
  for (const GemmCaseResult& r : results) {
    report::JsonRecord record;
    record.add("preset", preset)
        .add("case", r.shape.label)
        .add("m", uint64_t{r.shape.m})
        .add("n", uint64_t{r.shape.n})
        .add("k", uint64_t{r.shape.k})
        .add("batch", uint64_t{r.shape.batch})
        .add("dtype", r.shape.dtype)
        .add("transpose_a", r.shape.transpose_a)
        .add("engines", uint64_t{r.engines})
        .add("cycles", r.cycles)
        .add("sim_time_ps", r.sim_time_ps)
        .add("macs", r.macs)
        .add("read_bytes", r.read_bytes)
        .add("write_bytes", r.write_bytes)
        .add("operand_stall_cycles", r.operand_stall_cycles)
        .add("mean_chunk_fetch_cycles", r.chunk_fetch_cycles)
        .add("hbm_row_hit_pct", r.hbm_row_hit_pct)
        .add("hbm_row_conflict_pct", r.hbm_row_conflict_pct)
        .add("hbm_read_bytes", r.hbm_read_bytes)
        .add("hbm_write_bytes", r.hbm_write_bytes)
        .add("cache_hit_pct", r.cache_hit_pct)
        .add("tflops", r.tflops)
        .add("peak_tflops", r.peak_tflops)
        .add("pct_peak", r.pct_peak)
        .add("gbps", r.gbps)
        .add("mem_peak_gbps", r.mem_peak_gbps)
        .add("bound", r.bound)
        .add("supertile", r.supertile)
        .add("wall_seconds", r.wall_seconds)
        .add("host_compute_seconds", r.host_compute_seconds)
        .add("host_gather_seconds", r.host_gather_seconds)
        .add("sim_macs_per_s", r.sim_macs_per_s);
    records.push_back(std::move(record));
  }
  report::write_json_records(records, path);
}

}  // namespace hpusim::bench
