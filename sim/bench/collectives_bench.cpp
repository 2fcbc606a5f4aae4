#include "sim/bench/collectives_bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <mpi.h>

#include "hccl_api.h"
#include "hw/card/card.h"
#include "hw/nic/nic_port.h"
#include "sim/distributed/conservative_sync.h"
#include "sim/platform/platform.h"
#include "synapse_api.h"

namespace hpusim::bench {
namespace {

void check(synStatus s, const char* what) {
  if (s != synSuccess) throw std::runtime_error(std::string("bench collectives: ") + what + " failed (" + std::to_string(s) + ")");
}
void check(hcclResult_t r, const char* what) {
  if (r != hcclSuccess) {
    throw std::runtime_error(std::string("bench collectives: ") + what + ": " + hcclGetLastErrorMessage());
  }
}

// nccl-tests' bus-bandwidth factors.
double bus_factor(const std::string& c, unsigned n) {
  if (c == "all_reduce") return 2.0 * (n - 1) / n;
  if (c == "all_gather" || c == "reduce_scatter" || c == "all_to_all") return double(n - 1) / n;
  return 1.0;
}

// Published hccl_demo figures (reference: collectives-and-scale-out, 1.6).
struct Published {
  double busbw;
  const char* source;
};
const Published* published(const std::string& box, unsigned cards, const std::string& c, uint64_t bytes) {
  static const Published ar32{258.26, "HabanaAI vllm-fork DeepSeek-on-Gaudi guide, hccl_demo 8 x Gaudi 2"};
  static const Published ar1g{258.20, "third-party hccl_demo note, 8 x Gaudi 2"};
  static const Published ar32x2{205.90, "HabanaAI vllm-fork DeepSeek-on-Gaudi guide, hccl_demo 16 x Gaudi 2 (2 boxes)"};
  if (box == "hls2x2" && cards == 16 && c == "all_reduce" && bytes == (32ull << 20)) return &ar32x2;
  if (box != "hls2" || cards != 8 || c != "all_reduce") return nullptr;
  if (bytes == (32ull << 20)) return &ar32;
  if (bytes == (1ull << 30)) return &ar1g;
  return nullptr;
}

struct Case {
  std::string collective;
  uint64_t bytes;
};

// Everything one card's thread needs.
struct Rank {
  synDeviceId device = 0;
  synStreamHandle stream = nullptr;
  synEventHandle start = nullptr, end = nullptr;
  hcclComm_t comm = nullptr;
  uint64_t send = 0, recv = 0;
};

// One call of `c` with `bytes` (nccl-tests' size) on `r`.
hcclResult_t call(const std::string& c, uint64_t bytes, unsigned n, unsigned es, hcclDataType_t type, hcclRedOp_t op,
                  bool in_place, unsigned rank, const Rank& r) {
  void* const recv = reinterpret_cast<void*>(r.recv);
  if (c == "all_reduce") return hcclAllReduce(in_place ? recv : reinterpret_cast<void*>(r.send), recv, bytes / es, type, op, r.comm, r.stream);
  if (c == "broadcast") return hcclBroadcast(in_place ? recv : reinterpret_cast<void*>(r.send), recv, bytes / es, type, 0, r.comm, r.stream);
  if (c == "reduce") return hcclReduce(in_place ? recv : reinterpret_cast<void*>(r.send), recv, bytes / es, type, op, 0, r.comm, r.stream);
  const uint64_t per_rank = bytes / n;
  if (c == "all_gather") {
    void* send = in_place ? reinterpret_cast<void*>(r.recv + rank * per_rank) : reinterpret_cast<void*>(r.send);
    return hcclAllGather(send, recv, per_rank / es, type, r.comm, r.stream);
  }
  if (c == "reduce_scatter") {
    // In place: the input is the receive buffer, the result lands in this rank's part of it.
    void* send = in_place ? recv : reinterpret_cast<void*>(r.send);
    void* out = in_place ? reinterpret_cast<void*>(r.recv + rank * per_rank) : recv;
    return hcclReduceScatter(send, out, per_rank / es, type, op, r.comm, r.stream);
  }
  return hcclAlltoAll(reinterpret_cast<void*>(r.send), recv, per_rank / es, type, r.comm, r.stream);
}

std::string size_text(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  unsigned u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + " " + units[u];
}

}  // namespace

std::vector<CollectivesBenchRow> run_collectives_bench(const CollectivesBenchOptions& o, std::ostream& out) {
  static const std::vector<std::string> known = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all"};
  for (const std::string& c : o.collectives)
    if (std::find(known.begin(), known.end(), c) == known.end())
      throw std::invalid_argument("unknown collective '" + c + "' (all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all)");
  if (o.dtype != "f32" && o.dtype != "bf16") throw std::invalid_argument("--dtype '" + o.dtype + "': f32 or bf16");
  if (o.op != "sum" && o.op != "min" && o.op != "max") throw std::invalid_argument("--op '" + o.op + "': sum, min or max");
  if (o.iterations == 0) throw std::invalid_argument("--iterations must be at least 1");
  if (o.algorithm != "direct" && o.algorithm != "ring") throw std::invalid_argument("--algorithm '" + o.algorithm + "': direct or ring");
  if (o.factor < 2 && o.sizes.empty()) throw std::invalid_argument("--factor must be at least 2");
  if (o.min_bytes == 0 || o.min_bytes > o.max_bytes) throw std::invalid_argument("--min-bytes must be from 1 to --max-bytes");
  const unsigned es = o.dtype == "f32" ? 4 : 2;
  const hcclDataType_t type = o.dtype == "f32" ? hcclFloat32 : hcclBfloat16;
  const hcclRedOp_t op = o.op == "sum" ? hcclSum : o.op == "min" ? hcclMin : hcclMax;

  platform::PlatformOptions po;
  po.box = o.box;
  po.cards = o.cards == 0 ? 1 : o.cards;   // 1: the box's count
  po.overrides = o.overrides;
  po.distributed = o.distributed;
  po.driver.heartbeat_period_us = 0;
  po.trace_path = o.trace_path;
  platform::Platform box(po);
  const unsigned n = box.box_cards();               // ranks, one per card of the box
  const unsigned first = box.first_card(), local = box.cards();   // this process's
  distributed::ConservativeSync* const sync = box.sync();
  const bool lead = sync == nullptr || sync->rank() == 0;   // prints and writes the results
  if (n < 2) throw std::invalid_argument("a collective bench needs at least 2 cards");

  // The sizes: each a multiple of the ranks and the element (nccl-tests rounds the same way).
  std::vector<uint64_t> sizes = o.sizes;
  if (sizes.empty())
    for (uint64_t b = o.min_bytes; b <= o.max_bytes; b = b > o.max_bytes / o.factor ? o.max_bytes + 1 : b * o.factor) sizes.push_back(b);
  for (uint64_t& b : sizes) b = std::max<uint64_t>(uint64_t{n} * es, b / (uint64_t{n} * es) * (uint64_t{n} * es));
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<Case> cases;
  for (const std::string& c : o.collectives)
    for (const uint64_t bytes : sizes) cases.push_back({c, bytes});

  // The communicator's id, made by rank 0 and handed to the others before any card is used (a
  // split box's processes meet only at their simulation windows from then on).
  hcclUniqueId id{};
  if (lead) check(hcclGetUniqueId(&id), "hcclGetUniqueId");
  if (sync != nullptr) MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);

  const hw::NicPortConfig& port = box.card(0).nic_port(0)->config();
  const double goodput = port.gbps / 8.0 * port.mtu_bytes / (port.mtu_bytes + port.packet_overhead_bytes);   // GB/s
  const auto links_between = [&](unsigned a, unsigned b) {
    unsigned links = 0;
    for (const auto& l : box.box()->link())
      if ((l.a().card() == a && l.b().card() == b) || (l.a().card() == b && l.b().card() == a)) ++links;
    return links;
  };
  const unsigned links_per_peer = links_between(0, 1);
  const double egress = goodput * links_per_peer * (n - 1);
  // Boxes joined rail by rail (hls2x2): the cards linked to both card 0 and card 1 are the rest of
  // their box. HCCL's all_reduce then goes box, rail, box.
  unsigned group = 2;
  for (unsigned c = 2; c < n; ++c) group += links_between(0, c) > 0 && links_between(1, c) > 0 ? 1 : 0;
  const bool rails = group < n && n % group == 0 && links_between(0, group) > 0;
  const unsigned rail_links = rails ? links_between(0, group) : 0;

  check(synInitialize(), "synInitialize");
  setenv("HPUSIM_HCCL_ALGORITHM", o.algorithm.c_str(), 1);   // how the library takes it
  std::vector<Rank> ranks(local);
  const bool needs_send = !o.in_place || std::find(o.collectives.begin(), o.collectives.end(), "all_to_all") != o.collectives.end();
  // A card's set-up, on its own thread (below): the device (acquired in track order, so thread r
  // gets device r), its collective stream, two timing events, the buffers and its communicator.
  const auto set_up = [&](unsigned r) {
    Rank& me = ranks[r];
    check(synDeviceAcquire(&me.device, nullptr), "synDeviceAcquire");
    if (me.device != r) throw std::logic_error("bench collectives: thread " + std::to_string(r) + " got device " + std::to_string(me.device));
    check(synStreamCreate(&me.stream, me.device, STREAM_TYPE_NETWORK_COLLECTIVE, 0), "synStreamCreate");
    check(synEventCreate(&me.start, me.device, EVENT_COLLECT_TIME), "synEventCreate");
    check(synEventCreate(&me.end, me.device, EVENT_COLLECT_TIME), "synEventCreate");
    check(synDeviceMalloc(me.device, largest, 0, 0, &me.recv), "synDeviceMalloc");
    if (needs_send) check(synDeviceMalloc(me.device, largest, 0, 0, &me.send), "synDeviceMalloc");
    check(hcclCommInitRank(&me.comm, static_cast<int>(n), id, static_cast<int>(first + r)), "hcclCommInitRank");
  };

  if (lead) {
    out << "hpusim bench collectives: box " << o.box << ", " << n << " x " << box.preset().name();
    if (sync != nullptr) out << " in " << sync->ranks() << " processes";
    if (rails) {
      out << ", boxes of " << group << " joined rail by rail (" << rail_links << (rail_links == 1 ? " link" : " links")
          << " a rail pair)";
    }
    out << ", " << links_per_peer << (links_per_peer == 1 ? " link" : " links") << " per pair of cards at " << port.gbps
        << " Gb/s (" << std::fixed << std::setprecision(2) << goodput << " GB/s goodput each), " << o.dtype << " " << o.op
        << ", " << (o.algorithm == "ring" ? "ring all_reduce, " : "") << (o.in_place ? "in place" : "out of place")
        << ", " << o.warmup << " warm-up + " << o.iterations << " timed calls\n";
  }
  const auto header = [&] {
    out << std::left << std::setw(16) << "collective" << std::right << std::setw(12) << "size" << std::setw(12) << "count"
        << std::setw(12) << "time_us" << std::setw(12) << "algbw" << std::setw(12) << "busbw" << std::setw(12) << "bound"
        << std::setw(12) << "published" << std::setw(12) << "sim_MB/s" << std::setw(10) << "wall_s" << "\n";
  };
  const auto nic_tx_bytes = [&] {
    return box.cosim().on_sim_thread([&] {
      uint64_t sum = 0;
      for (unsigned k = 0; k < local; ++k)
        for (unsigned p = 0; p < box.card(k).nic_ports(); ++p) sum += box.card(k).nic_port(p)->stats().tx_bytes;
      return sum;
    });
  };

  // Per case: each card's device time for the timed calls (in box order), the wall time and the
  // NIC bytes this process simulated.
  std::vector<uint64_t> elapsed_ns(cases.size() * n, 0);
  std::vector<double> wall_s(cases.size(), 0);
  std::vector<uint64_t> nic_bytes(cases.size(), 0);
  std::vector<CollectivesBenchRow> rows(cases.size());
  const auto fill_row = [&](size_t i) {
    const std::string& c = cases[i].collective;
    const uint64_t bytes = cases[i].bytes;
    CollectivesBenchRow& row = rows[i];
    row.collective = c;
    row.bytes = bytes;
    row.ranks = n;
    row.count = (c == "all_reduce" || c == "broadcast" || c == "reduce") ? bytes / es : bytes / n / es;
    row.rank_time_ns.assign(elapsed_ns.begin() + static_cast<long>(i * n), elapsed_ns.begin() + static_cast<long>((i + 1) * n));
    row.time_us = double(*std::max_element(row.rank_time_ns.begin(), row.rank_time_ns.end())) / o.iterations / 1e3;
    row.algbw = row.time_us > 0 ? double(bytes) / row.time_us / 1e3 : 0;
    row.busbw = row.algbw * bus_factor(c, n);
    row.hccl_algbw = c == "all_gather" ? row.algbw / n : row.algbw;
    // What the algorithm's busiest ports allow: a rank's links to all peers, but for broadcast
    // (the root sends each peer its chunk and the root's: n / 2(n-1) of them), reduce (the root
    // receives every peer's part of its chunk, then each peer's reduced chunk: the same) and the
    // ring (to its successor only).
    const bool ring = c == "all_reduce" && o.algorithm == "ring";
    row.bound_busbw = (c == "broadcast" || c == "reduce") ? egress * n / (2.0 * (n - 1)) : ring ? egress / (n - 1) : egress;
    if (rails) {
      // HCCL's hierarchical algorithms (synapse/hccl/hierarchy.h): per byte of the size, a card's
      // box links and rail links each carry their stage's share; pipelined stages overlap (the
      // busier bounds), all_to_all's run one after the other (they add).
      const double boxes = double(n) / group, in_box = links_per_peer * goodput, on_rail = rail_links * goodput;
      double seconds_per_byte = 0;
      if (c == "all_reduce") {
        seconds_per_byte = std::max(2.0 / (group * in_box), 2.0 / (boxes * group * on_rail));
      } else if (c == "reduce_scatter" || c == "all_gather") {
        seconds_per_byte = std::max(1.0 / (group * in_box), 1.0 / (n * on_rail));
      } else if (c == "broadcast" || c == "reduce") {
        seconds_per_byte = std::max(2.0 / (group * in_box), 2.0 / (boxes * on_rail));
      } else if (c == "all_to_all") {
        seconds_per_byte = 1.0 / (group * in_box) + 1.0 / (boxes * on_rail);
      }
      row.bound_busbw = seconds_per_byte > 0 ? bus_factor(c, n) / seconds_per_byte : 0;
    }
    if (const Published* p = published(o.box, n, c, bytes)) {
      row.published_busbw = p->busbw;
      row.published_source = p->source;
    }
    row.wall_s = wall_s[i];
    row.simulated_mb_per_wall_s = row.wall_s > 0 ? double(nic_bytes[i]) / 1e6 / row.wall_s : 0;
  };
  const auto print_row = [&](const CollectivesBenchRow& row) {
    out << std::left << std::setw(16) << row.collective << std::right << std::setw(12) << size_text(row.bytes) << std::setw(12)
        << row.count << std::setw(12) << std::fixed << std::setprecision(1) << row.time_us << std::setw(12)
        << std::setprecision(2) << row.algbw << std::setw(12) << row.busbw << std::setw(12) << row.bound_busbw
        << std::setw(12)
        << (row.published_busbw > 0 ? std::to_string(row.published_busbw).substr(0, 6) : std::string("-")) << std::setw(12)
        << std::setprecision(1) << row.simulated_mb_per_wall_s << std::setw(10) << std::setprecision(1) << row.wall_s
        << std::endl;
  };
  if (sync == nullptr) header();

  // Every card on its own host thread for the whole run, set-up included, as one process per card
  // would be: the cases follow each other on the device (a barrier each), so what a card does
  // depends only on its own host and its links, the same whether the box runs in one process or
  // several.
  std::vector<unsigned> tracks;
  const uint64_t start_ps = box.host_now_ps();
  for (unsigned r = 0; r < local; ++r) tracks.push_back(box.reserve_host_track("rank " + std::to_string(first + r), start_ps));
  std::vector<std::string> errors(local);
  std::vector<unsigned> finished(cases.size(), 0);
  std::mutex progress;   // held only to count and print, never across a simulator call
  std::vector<std::thread> threads;
  for (unsigned r = 0; r < local; ++r) {
    threads.emplace_back([&, r] {
      platform::HostThread on(box, tracks[r]);
      try {
        set_up(r);
        const Rank& me = ranks[r];
        const unsigned rank = first + r;
        for (size_t i = 0; i < cases.size(); ++i) {
          const std::string& c = cases[i].collective;
          const uint64_t bytes = cases[i].bytes;
          const auto wall_start = std::chrono::steady_clock::now();
          const uint64_t nic_before = r == 0 ? nic_tx_bytes() : 0;
          check(hcclBarrier(me.comm, me.stream), "hcclBarrier");
          for (unsigned k = 0; k < o.warmup; ++k) check(call(c, bytes, n, es, type, op, o.in_place, rank, me), c.c_str());
          check(synEventRecord(me.start, me.stream), "synEventRecord");
          for (unsigned k = 0; k < o.iterations; ++k) check(call(c, bytes, n, es, type, op, o.in_place, rank, me), c.c_str());
          check(synEventRecord(me.end, me.stream), "synEventRecord");
          check(synStreamSynchronize(me.stream), "synStreamSynchronize");
          check(synEventElapsedTime(&elapsed_ns[i * n + rank], me.start, me.end), "synEventElapsedTime");
          if (r == 0) {
            nic_bytes[i] = nic_tx_bytes() - nic_before;
            wall_s[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
          }
          std::lock_guard<std::mutex> lock(progress);
          if (++finished[i] == local) {
            if (sync == nullptr) {
              fill_row(i);
              print_row(rows[i]);
            } else if (lead) {
              std::cerr << "bench collectives: " << c << " " << size_text(bytes) << " done on cards " << first << " .. "
                        << first + local - 1 << std::endl;
            }
          }
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  if (!o.trace_path.empty()) box.write_trace();
  for (const Rank& r : ranks)
    if (r.comm != nullptr) hcclCommDestroy(r.comm);
  for (const Rank& r : ranks)
    if (r.stream != nullptr) synDeviceRelease(r.device);
  synDestroy();

  if (sync != nullptr) {
    // Every process done with its cards: the results meet on rank 0.
    box.leave();
    std::vector<uint64_t> all(elapsed_ns.size());
    MPI_Allreduce(elapsed_ns.data(), all.data(), static_cast<int>(all.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    elapsed_ns = all;
    std::vector<uint64_t> bytes_all(nic_bytes.size());
    MPI_Allreduce(nic_bytes.data(), bytes_all.data(), static_cast<int>(nic_bytes.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    nic_bytes = bytes_all;
    std::vector<double> wall_all(wall_s.size());
    MPI_Allreduce(wall_s.data(), wall_all.data(), static_cast<int>(wall_s.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    wall_s = wall_all;
    for (size_t i = 0; i < cases.size(); ++i) fill_row(i);
    const distributed::SyncStats& st = sync->stats();
    if (lead) {
      header();
      for (const CollectivesBenchRow& row : rows) print_row(row);
    }
    std::ostringstream line;
    line << "process " << sync->rank() << " (cards " << first << " .. " << first + local - 1 << "): " << st.windows
         << " windows (lookahead " << sync->lookahead() / 1000 << " ns, longest " << st.longest_window_ps / 1000
         << " ns), " << st.windows_with_data << " with data, " << st.messages_sent << " messages ("
         << std::setprecision(1) << std::fixed << st.bytes_sent / 1e6 << " MB) sent, " << st.wait_s << " s waiting for the others\n";
    std::string text = line.str();
    // Rank 0 prints every process's line, in rank order.
    if (lead) {
      out << text;
      for (int r = 1; r < sync->ranks(); ++r) {
        MPI_Status status;
        int length = 0;
        MPI_Probe(r, 0, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_CHAR, &length);
        std::string other(static_cast<size_t>(length), '\0');
        MPI_Recv(other.data(), length, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        out << other;
      }
    } else {
      MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  if (lead) {
    out << "algbw = size / time, busbw = algbw x factor (nccl-tests; hccl_demo's NW BW), GB = 1e9 B; time: device time per "
           "call of the slowest rank; bound: the ports' goodput a rank sends at"
        << " (broadcast: as its scatter + all_gather uses them; reduce: as its reduce_scatter + gather to the root does)\n";
  }

  if (lead && !o.json_path.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const CollectivesBenchRow& r : rows) {
      j.push_back({{"collective", r.collective}, {"bytes", r.bytes}, {"count", r.count}, {"ranks", r.ranks},
                   {"processes", sync != nullptr ? sync->ranks() : 1},
                   {"box", o.box}, {"dtype", o.dtype}, {"op", o.op}, {"algorithm", r.collective == "all_reduce" ? o.algorithm : "direct"}, {"time_us", r.time_us}, {"algbw_gbps", r.algbw},
                   {"busbw_gbps", r.busbw}, {"hccl_demo_algbw_gbps", r.hccl_algbw}, {"bound_busbw_gbps", r.bound_busbw},
                   {"published_busbw_gbps", r.published_busbw}, {"published_source", r.published_source},
                   {"rank_time_ns", r.rank_time_ns},
                   {"simulated_mb_per_wall_s", r.simulated_mb_per_wall_s}, {"wall_s", r.wall_s}});
    }
    std::ofstream f(o.json_path);
    f << j.dump(2) << "\n";
    if (!f) throw std::runtime_error("bench collectives: cannot write '" + o.json_path + "'");
  }
  return rows;
}

}  // namespace hpusim::bench
