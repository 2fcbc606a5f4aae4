// The HCCL-style C API over the Synapse session: communicators on the session's devices, and each
// collective planned (schedule.h), written as command buffers (emit.h) and submitted on the
// stream's device as one command submission, through the runtime and the device file.
#include "hccl_api.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "sim/platform/host_services.h"
#include "synapse/api/session.h"
#include "synapse/hccl/emit.h"
#include "synapse/hccl/hierarchy.h"
#include "synapse/hccl/schedule.h"
#include "synapse/hccl/topology.h"

namespace api = hpusim::synapse::api;
namespace hccl = hpusim::synapse::hccl;
namespace rt = hpusim::synapse::runtime;
using hpusim::reduction::ReduceOp;
using hpusim::reduction::ReduceType;

struct hcclOpaqueComm {
  synDeviceId device = 0;
  unsigned rank = 0, ranks = 0;
  hccl::Topology topology;
  // Set instead of `topology` for ranks in boxes joined rail by rail (hierarchical algorithms).
  std::optional<hccl::Hierarchy> hierarchy;
  hccl::Config config;
  // The last collective submitted and its queue: the next one on another stream waits for it on
  // the device (a communicator's collectives share its scratch memory and its links' byte streams).
  uint64_t last_seq = 0;
  hpusim::regs::QueueId last_queue = hpusim::regs::QueueId::DMA_0_0;
  // Device memory a hierarchical collective stages data in (hierarchy.h staging_bytes()).
  uint64_t staging = 0, staging_bytes = 0;
};

namespace {

std::mutex registry_mutex;
std::set<hcclComm_t>& registry() {
  static std::set<hcclComm_t> live;
  return live;
}
bool live(hcclComm_t comm) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return registry().count(comm) != 0;
}

constexpr char kIdPrefix[] = "hpusim-hccl:";
constexpr char kCardsTag[] = ":cards=";

// An id: the prefix, this process and a counter (unique), and the ranks' cards if not 0 .. n-1.
bool make_id(hcclUniqueId* id, const std::string& cards) {
  static std::atomic<uint64_t> next{1};
  std::memset(id, 0, sizeof(*id));
  std::string text = kIdPrefix + std::to_string(::getpid()) + ":" + std::to_string(next++);
  if (!cards.empty()) text += kCardsTag + cards;
  if (text.size() > sizeof(id->internal)) return false;
  std::memcpy(id->internal, text.data(), text.size());
  id->length = text.size();
  return true;
}

bool ours(const hcclUniqueId& id) {
  return id.length >= sizeof(kIdPrefix) - 1 && id.length <= HCCL_UNIQUE_ID_BYTES &&
         std::memcmp(id.internal, kIdPrefix, sizeof(kIdPrefix) - 1) == 0;
}

// The cards one of our ids names (rank i on cards[i]), or 0 .. nranks-1; "" or why they do not fit.
std::string cards_of_id(const hcclUniqueId& id, unsigned nranks, std::vector<unsigned>* cards) {
  const std::string text(id.internal, id.length);
  cards->clear();
  const size_t tag = text.find(kCardsTag);
  if (tag == std::string::npos) {
    for (unsigned r = 0; r < nranks; ++r) cards->push_back(r);
    return "";
  }
  const std::string list = text.substr(tag + sizeof(kCardsTag) - 1);
  std::set<unsigned> seen;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string card = list.substr(at, comma - at);
    if (card.empty() || card.size() > 4 || card.find_first_not_of("0123456789") != std::string::npos ||
        !seen.insert(static_cast<unsigned>(std::stoul(card))).second) {
      return "commId's card list '" + list + "' is not one hcclGetUniqueIdOnCards made";
    }
    cards->push_back(static_cast<unsigned>(std::stoul(card)));
    at = comma + 1;
  }
  if (cards->size() != nranks) {
    return "commId names " + std::to_string(cards->size()) + " cards (hcclGetUniqueIdOnCards), nranks is " +
           std::to_string(nranks);
  }
  return "";
}

hcclResult_t result_of(synStatus status) {
  switch (status) {
    case synSuccess: return hcclSuccess;
    case synInvalidArgument: return hcclInvalidArgument;
    case synObjectNotInitialized: case synNoDeviceFound: case synDeviceAlreadyAcquired: return hcclInvalidUsage;
    case synOutOfHostMemory: return hcclSystemError;
    default: return hcclUnhandledSynapseError;
  }
}
hcclResult_t fail(hcclResult_t result, const std::string& message) {
  api::fail(result == hcclInvalidArgument ? synInvalidArgument : synFail, message);
  return result;
}

// HPUSIM_HCCL_SLICE_BYTES: the slice collectives are cut in (default HCCL's 512 KiB).
bool slice_from_environment(const char* function, uint64_t* bytes, std::string* error) {
  const char* value = std::getenv("HPUSIM_HCCL_SLICE_BYTES");
  if (value == nullptr || *value == '\0') return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || value[0] == '-' || n < 256 || n > (64ull << 20) || n % 256 != 0) {
    *error = std::string(function) + ": HPUSIM_HCCL_SLICE_BYTES='" + value +
             "': the bytes collectives are cut in, a multiple of 256 from 256 to 67108864";
    return false;
  }
  *bytes = n;
  return true;
}

// HPUSIM_HCCL_ALGORITHM: all_reduce's algorithm, direct (default) or ring.
bool algorithm_from_environment(const char* function, hccl::Algorithm* algorithm, std::string* error) {
  const char* value = std::getenv("HPUSIM_HCCL_ALGORITHM");
  if (value == nullptr || *value == '\0' || std::string(value) == "direct") return true;
  if (std::string(value) == "ring") {
    *algorithm = hccl::Algorithm::Ring;
    return true;
  }
  *error = std::string(function) + ": HPUSIM_HCCL_ALGORITHM='" + value +
           "': all_reduce's algorithm, direct (HCCL's direct exchange) or ring";
  return false;
}

bool supported_type(hcclDataType_t type, ReduceType* out) {
  if (type == hcclFloat32) *out = ReduceType::F32;
  else if (type == hcclBfloat16) *out = ReduceType::Bf16;
  else return false;
  return true;
}
bool supported_op(hcclRedOp_t op, ReduceOp* out) {
  if (op == hcclSum) *out = ReduceOp::Sum;
  else if (op == hcclMin) *out = ReduceOp::Min;
  else if (op == hcclMax) *out = ReduceOp::Max;
  else return false;
  return true;
}

const char* function_of(hccl::Collective c) {
  switch (c) {
    case hccl::Collective::AllReduce: return "hcclAllReduce";
    case hccl::Collective::ReduceScatter: return "hcclReduceScatter";
    case hccl::Collective::AllGather: return "hcclAllGather";
    case hccl::Collective::Broadcast: return "hcclBroadcast";
    case hccl::Collective::Reduce: return "hcclReduce";
    case hccl::Collective::AllToAll: return "hcclAlltoAll";
    case hccl::Collective::Barrier: return "hcclBarrier";
    case hccl::Collective::Send: return "hcclSend";
    case hccl::Collective::Recv: return "hcclRecv";
  }
  return "hccl";
}

// Bytes of the send and receive buffers of `q` on `rank`, and whether they may overlap as HCCL's
// in-place forms do.
struct Extent {
  uint64_t send = 0, recv = 0;
  bool in_place = false;
};
Extent extent_of(const hccl::Request& q, unsigned rank, unsigned ranks) {
  const uint64_t es = hpusim::reduction::element_bytes(q.type);
  const uint64_t b = es * q.count;
  Extent e;
  switch (q.collective) {
    case hccl::Collective::AllReduce: e = {b, b, q.send == q.recv}; break;
    case hccl::Collective::ReduceScatter: e = {b * ranks, b, q.recv == q.send + b * rank}; break;
    case hccl::Collective::AllGather: e = {b, b * ranks, q.send == q.recv + b * rank}; break;
    case hccl::Collective::Broadcast: e = {rank == q.root ? b : 0, b, q.send == q.recv}; break;
    case hccl::Collective::Reduce: e = {b, rank == q.root ? b : 0, q.send == q.recv}; break;
    case hccl::Collective::AllToAll: e = {b * ranks, b * ranks, false}; break;   // a chunk is received where one is still to be sent
    case hccl::Collective::Send: e = {b, 0, false}; break;
    case hccl::Collective::Recv: e = {0, b, false}; break;
    case hccl::Collective::Barrier: break;
  }
  return e;
}

// Submits `program` on the stream, after each communicator's previous call wherever it ran.
synStatus submit(api::Device& d, api::Stream& st, const std::vector<hcclComm_t>& comms, const hccl::Program& program,
                 const char* function) {
  if (std::getenv("HPUSIM_HCCL_DUMP") != nullptr) {
    std::fprintf(stderr, "%s on device %u:\n%s", function, d.id, hccl::to_text(program).c_str());
  }
  const uint64_t start_ps = d.runtime->host_now_ps();
  api::charge(hpusim::platform::HostWork::kLaunch);
  for (hcclComm_t comm : comms) {
    if (comm->last_seq != 0 && comm->last_queue != st.queue && !d.runtime->completed(comm->last_seq)) {
      rt::Runtime::Signal before;
      if (const auto r = d.runtime->signal(comm->last_queue, &before, nullptr); !r.ok()) return api::finish(r);
      if (const auto r = d.runtime->wait_on_device(st.queue, before); !r.ok()) return api::finish(r);
    }
  }
  const uint32_t monitor = rt::Runtime::kWaitMonitorBase + hpusim::regs::to_index(st.queue);
  uint64_t seq = 0;
  const auto submitted = d.runtime->submit_program(
      st.queue, program.sob_count, [&](uint32_t first_sob) { return hccl::emit(program, first_sob, st.queue, monitor); },
      &seq);
  if (!submitted.ok()) return api::fail(synFail, std::string(function) + ": " + submitted.message);
  st.last_seq = seq;
  st.waits.clear();   // the device orders the collective after them
  for (hcclComm_t comm : comms) {
    comm->last_seq = seq;
    comm->last_queue = st.queue;
  }
  api::host_span(d, function, start_ps, true, {{"bytes", std::to_string(program.nic_bytes)}});
  return api::succeed();
}

// Chained programs join on a queue no part and no recipe uses, on a QMAN whose other streams are
// idle during a collective (TPC 0's stream 3; recipes use stream 0): on a DMA engine's spare
// stream 2 the join shared its QMAN's arbitration with the reductions on stream 3 (hls2x2
// all_reduce 32 MiB: 185 GB/s busbw there, 190 here).
const hpusim::regs::QueueId kJoinQueue = hpusim::regs::make_queue(hpusim::regs::QueueKind::Tpc, 0, 3);

// hcclGroupStart / End: the calling thread's grouped calls, submitted together at the end.
struct Grouped {
  hcclComm_t comm;
  synStreamHandle stream;
  hccl::Program program;
  bool collective;   // not a send or receive: uses the communicator's scratch memory
};
thread_local int group_depth = 0;
thread_local std::vector<Grouped> grouped;

// The communicator's staging memory, at least `bytes` of it: grown (after the communicator's calls
// in flight) when a call needs more; freed with the communicator.
synStatus ensure_staging(api::Device& d, hcclComm_t comm, uint64_t bytes, const char* function) {
  if (bytes <= comm->staging_bytes) return synSuccess;
  if (const auto r = d.wait(comm->last_seq); !r.ok()) return api::finish(r);
  if (comm->staging != 0) {
    if (const auto r = d.runtime->device_free(comm->staging); !r.ok()) return api::finish(r);
    comm->staging = comm->staging_bytes = 0;
  }
  if (const auto r = d.runtime->device_malloc(bytes, &comm->staging); !r.ok()) {
    return api::fail(synFail, std::string(function) + ": " + std::to_string(bytes) + " bytes of staging memory: " + r.message);
  }
  comm->staging_bytes = bytes;
  return synSuccess;
}

// A communicator over boxes joined rail by rail: HCCL's hierarchical algorithms (hierarchy.h), the
// stages chained in one submission.
synStatus run_hierarchical(api::Device& d, api::Stream& st, hcclComm_t comm, const hccl::Request& q, const char* function) {
  const hccl::Hierarchy& h = *comm->hierarchy;
  if (group_depth > 0) {
    return api::fail(synInvalidArgument, std::string(function) + ": the communicator's ranks are in boxes joined rail by "
                                                                 "rail: its calls cannot be grouped yet");
  }
  hccl::Config config = comm->config;
  config.algorithm = hccl::Algorithm::Direct;
  if (const synStatus s = ensure_staging(d, comm, hccl::staging_bytes(h, comm->ranks, q, config), function); s != synSuccess) {
    return s;
  }
  hccl::Stages stages;
  if (const std::string why = hccl::plan_stages(h, comm->ranks, q, config, comm->staging, &stages); !why.empty()) {
    return api::fail(synInvalidArgument, std::string(function) + ": " + why);
  }
  return submit(d, st, {comm}, hccl::chain(stages.parts, stages.after, kJoinQueue), function);
}

hcclResult_t run(hccl::Collective collective, const void* sendbuff, void* recvbuff, size_t count,
                 hcclDataType_t datatype, hcclRedOp_t reduce_op, int root, hcclComm_t comm, synStreamHandle stream) {
  const char* function = function_of(collective);
  if (!live(comm)) return fail(hcclInvalidArgument, std::string(function) + (comm ? ": not a live communicator" : ": comm is NULL"));
  hccl::Request q;
  q.collective = collective;
  q.count = collective == hccl::Collective::Barrier ? 0 : count;
  q.send = reinterpret_cast<uintptr_t>(sendbuff);
  q.recv = reinterpret_cast<uintptr_t>(recvbuff);
  if (collective != hccl::Collective::Barrier && !supported_type(datatype, &q.type)) {
    return fail(hcclInvalidArgument, std::string(function) + ": data type " + std::to_string(datatype) +
                                         " is not supported (hcclFloat32, hcclBfloat16)");
  }
  const bool reduces = collective == hccl::Collective::AllReduce || collective == hccl::Collective::ReduceScatter ||
                       collective == hccl::Collective::Reduce;
  if (reduces && !supported_op(reduce_op, &q.op)) {
    return fail(hcclInvalidArgument, std::string(function) + ": reduction " + std::to_string(reduce_op) +
                                         " is not supported (hcclSum, hcclMin, hcclMax)");
  }
  const bool point_to_point = collective == hccl::Collective::Send || collective == hccl::Collective::Recv;
  const std::string role = point_to_point ? ": peer " : ": root ";
  if (root < 0 || static_cast<unsigned>(root) >= comm->ranks) {
    return fail(hcclInvalidArgument, std::string(function) + role + std::to_string(root) + " of a communicator of " +
                                         std::to_string(comm->ranks) + " ranks");
  }
  if (point_to_point && static_cast<unsigned>(root) == comm->rank) {
    return fail(hcclInvalidArgument, std::string(function) + role + std::to_string(root) + " is this rank");
  }
  q.root = static_cast<unsigned>(root);
  if (collective != hccl::Collective::Barrier && count == 0) return hcclSuccess;
  const Extent extent = extent_of(q, comm->rank, comm->ranks);
  const synStatus status = api::on_stream(function, stream, [&](api::Device& d, api::Stream& st) {
    if (d.id != comm->device) {
      return api::fail(synInvalidArgument, std::string(function) + ": the stream is on device " + std::to_string(d.id) +
                                               ", the communicator's rank " + std::to_string(comm->rank) + " on device " +
                                               std::to_string(comm->device));
    }
    const auto inside = [&](uint64_t address, uint64_t bytes, const char* what) -> synStatus {
      if (bytes == 0 || d.runtime->allocator().owner(address, bytes)) return synSuccess;
      return api::fail(synInvalidArgument, std::string(function) + ": " + what + " (" + std::to_string(bytes) +
                                               " bytes) is not inside a device allocation");
    };
    if (const synStatus s = inside(q.send, extent.send, "sendbuff"); s != synSuccess) return s;
    if (const synStatus s = inside(q.recv, extent.recv, "recvbuff"); s != synSuccess) return s;
    if (extent.send > 0 && extent.recv > 0 && !extent.in_place && q.send < q.recv + extent.recv &&
        q.recv < q.send + extent.send) {
      return api::fail(synInvalidArgument, std::string(function) +
                                               ": sendbuff and recvbuff overlap other than in HCCL's in-place form");
    }
    if (comm->hierarchy) return run_hierarchical(d, st, comm, q, function);
    hccl::Config config = comm->config;
    if (collective == hccl::Collective::Reduce && group_depth > 0) {
      // Its staging memory could be grown while a grouped call waits to use it.
      return api::fail(synInvalidArgument, std::string(function) + ": a reduce cannot be grouped yet");
    }
    if (collective == hccl::Collective::Reduce && comm->rank != q.root) {
      const uint64_t bytes = hccl::Config::reduce_staging_bytes(q.count, comm->ranks, hpusim::reduction::element_bytes(q.type));
      if (const synStatus s = ensure_staging(d, comm, bytes, function); s != synSuccess) return s;
      config.staging = comm->staging;
    }
    hccl::Program program;
    if (const std::string why = hccl::plan(comm->topology, comm->rank, q, config, &program); !why.empty()) {
      return api::fail(synInvalidArgument, std::string(function) + ": " + why);
    }
    if (std::getenv("HPUSIM_HCCL_DUMP") != nullptr) {
      std::fprintf(stderr, "%s rank %u:\n%s", function, comm->rank, hccl::to_text(program).c_str());
    }
    if (group_depth > 0) {
      grouped.push_back({comm, stream, std::move(program), !point_to_point});
      return api::succeed();
    }
    return submit(d, st, {comm}, program, function);
  });
  return result_of(status);
}

}  // namespace

extern "C" {

hcclResult_t hcclGetVersion(int* version) {
  if (!version) return fail(hcclInvalidArgument, "hcclGetVersion: version is NULL");
  *version = HCCL_VERSION_CODE;
  return hcclSuccess;
}

const char* hcclGetErrorString(hcclResult_t result) {
  switch (result) {
    case hcclSuccess: return "success";
    case hcclUnhandledSynapseError: return "unhandled Synapse error";
    case hcclSystemError: return "system error";
    case hcclInternalError: return "internal error";
    case hcclInvalidArgument: return "invalid argument";
    case hcclInvalidUsage: return "invalid usage";
    default: return "unknown result";
  }
}

const char* hcclGetLastErrorMessage(void) { return api::last_error().c_str(); }

hcclResult_t hcclGetUniqueId(hcclUniqueId* uniqueId) {
  if (!uniqueId) return fail(hcclInvalidArgument, "hcclGetUniqueId: uniqueId is NULL");
  make_id(uniqueId, "");
  return hcclSuccess;
}

hcclResult_t hcclGetUniqueIdOnCards(hcclUniqueId* uniqueId, int nranks, const int* cards) {
  const char* function = "hcclGetUniqueIdOnCards";
  if (!uniqueId || !cards) return fail(hcclInvalidArgument, std::string(function) + ": uniqueId or cards is NULL");
  if (nranks < 1 || nranks > 4096) {
    return fail(hcclInvalidArgument, std::string(function) + ": nranks " + std::to_string(nranks) + " (1 .. 4096)");
  }
  std::string list;
  std::set<int> seen;
  for (int i = 0; i < nranks; ++i) {
    if (cards[i] < 0 || !seen.insert(cards[i]).second) {
      return fail(hcclInvalidArgument, std::string(function) + ": rank " + std::to_string(i) + "'s card " +
                                           std::to_string(cards[i]) + (cards[i] < 0 ? " is negative" : " is another rank's too"));
    }
    list += (i ? "," : "") + std::to_string(cards[i]);
  }
  if (!make_id(uniqueId, list)) {
    return fail(hcclInvalidArgument, std::string(function) + ": " + std::to_string(nranks) + " cards do not fit an id");
  }
  return hcclSuccess;
}

hcclResult_t hcclCommInitRank(hcclComm_t* comm, int nranks, hcclUniqueId commId, int rank) {
  const char* function = "hcclCommInitRank";
  if (!comm) return fail(hcclInvalidArgument, std::string(function) + ": comm is NULL");
  if (!ours(commId)) return fail(hcclInvalidArgument, std::string(function) + ": commId is not one hcclGetUniqueId made");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return fail(hcclInvalidArgument, std::string(function) + ": rank " + std::to_string(rank) + " of " +
                                         std::to_string(nranks) + " ranks (rank 0 .. nranks-1)");
  }
  std::vector<unsigned> cards;
  if (const std::string why = cards_of_id(commId, static_cast<unsigned>(nranks), &cards); !why.empty()) {
    return fail(hcclInvalidArgument, std::string(function) + ": " + why);
  }
  hpusim::platform::HostServices* host = hpusim::platform::host_services();
  // A process of a split box has cards first .. first+local-1 as its devices 0 ...
  const unsigned first = host ? host->first_card() : 0, local = host ? host->cards() : 1;
  const unsigned card = cards[static_cast<size_t>(rank)];
  if (card < first || card >= first + local) {
    return fail(hcclInvalidUsage, std::string(function) + ": rank " + std::to_string(rank) + " runs on card " +
                                      std::to_string(card) + " of the box; this process simulates cards " +
                                      std::to_string(first) + " .. " + std::to_string(first + local - 1));
  }
  auto created = std::make_unique<hcclOpaqueComm>();
  created->rank = static_cast<unsigned>(rank);
  created->ranks = static_cast<unsigned>(nranks);
  created->device = static_cast<synDeviceId>(card - first);
  std::string error;
  if (!slice_from_environment(function, &created->config.slice_bytes, &error) ||
      !algorithm_from_environment(function, &created->config.algorithm, &error)) {
    return fail(hcclInvalidArgument, error);
  }
  const std::string box = host ? host->box_text() : "";
  if (const std::string why = hccl::topology_of_cards(box, cards, &created->topology); !why.empty()) {
    hccl::Hierarchy hierarchy;
    if (created->ranks < 4 || !hccl::hierarchy_of_cards(box, cards, created->rank, &hierarchy).empty()) {
      return fail(hcclInvalidUsage, std::string(function) + ": " + why);
    }
    created->hierarchy = std::move(hierarchy);
  }
  const synStatus status = api::on_device(function, created->device, [&](api::Device& d) {
    for (const hpusim::regs::QueueId q : d.runtime->target().dma_queues) {
      created->config.engines.push_back(hpusim::regs::make_queue(hpusim::regs::QueueKind::Dma, hpusim::regs::queue_engine(q), 3));
    }
    return api::finish(d.runtime->device_malloc(created->config.scratch_bytes(created->ranks), &created->config.scratch));
  });
  if (status != synSuccess) {
    const std::string why = api::last_error();
    return fail(result_of(status), std::string(function) + ": rank " + std::to_string(rank) + " runs on device " +
                                       std::to_string(created->device) + ": " + why);
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  *comm = created.release();
  registry().insert(*comm);
  return hcclSuccess;
}

hcclResult_t hcclCommInitAll(hcclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return fail(hcclInvalidArgument, "hcclCommInitAll: comms is NULL");
  if (ndev < 1) return fail(hcclInvalidArgument, "hcclCommInitAll: ndev " + std::to_string(ndev) + " (1 or more)");
  // Device d of this process is card first + d of the box.
  hpusim::platform::HostServices* host = hpusim::platform::host_services();
  const int first = host ? static_cast<int>(host->first_card()) : 0;
  std::vector<int> cards(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    if (devlist && devlist[i] < 0) {
      return fail(hcclInvalidArgument, "hcclCommInitAll: rank " + std::to_string(i) + "'s device " + std::to_string(devlist[i]));
    }
    cards[static_cast<size_t>(i)] = first + (devlist ? devlist[i] : i);
  }
  hcclUniqueId id;
  if (const hcclResult_t r = hcclGetUniqueIdOnCards(&id, ndev, cards.data()); r != hcclSuccess) {
    const std::string why = api::last_error();
    return fail(r, "hcclCommInitAll: devlist: " + why.substr(why.find(": ") + 2));
  }
  for (int i = 0; i < ndev; ++i) {
    if (const hcclResult_t r = hcclCommInitRank(&comms[i], ndev, id, i); r != hcclSuccess) {
      for (int k = 0; k < i; ++k) hcclCommDestroy(comms[k]);
      return r;
    }
  }
  return hcclSuccess;
}

hcclResult_t hcclCommDestroy(hcclComm_t comm) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (registry().erase(comm) == 0) return fail(hcclInvalidArgument, comm ? "hcclCommDestroy: not a live communicator" : "hcclCommDestroy: comm is NULL");
  }
  std::unique_ptr<hcclOpaqueComm> owned(comm);
  const synStatus status = api::on_device("hcclCommDestroy", owned->device, [&](api::Device& d) {
    if (const auto r = d.wait(owned->last_seq); !r.ok()) return api::finish(r);
    if (owned->staging != 0) {
      if (const auto r = d.runtime->device_free(owned->staging); !r.ok()) return api::finish(r);
    }
    return api::finish(d.runtime->device_free(owned->config.scratch));
  });
  return status == synSuccess || status == synNoDeviceFound ? hcclSuccess : result_of(status);
}

hcclResult_t hcclCommCount(hcclComm_t comm, int* count) {
  if (!live(comm) || !count) return fail(hcclInvalidArgument, "hcclCommCount: not a live communicator, or count is NULL");
  *count = static_cast<int>(comm->ranks);
  return hcclSuccess;
}

hcclResult_t hcclCommUserRank(hcclComm_t comm, int* rank) {
  if (!live(comm) || !rank) return fail(hcclInvalidArgument, "hcclCommUserRank: not a live communicator, or rank is NULL");
  *rank = static_cast<int>(comm->rank);
  return hcclSuccess;
}

hcclResult_t hcclCommSynDevice(hcclComm_t comm, int* device) {
  if (!live(comm) || !device) return fail(hcclInvalidArgument, "hcclCommSynDevice: not a live communicator, or device is NULL");
  *device = static_cast<int>(comm->device);
  return hcclSuccess;
}

hcclResult_t hcclAllReduce(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                           hcclRedOp_t reduceOp, hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::AllReduce, sendbuff, recvbuff, count, datatype, reduceOp, 0, comm, stream);
}
hcclResult_t hcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, hcclDataType_t datatype,
                               hcclRedOp_t reduceOp, hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, reduceOp, 0, comm, stream);
}
hcclResult_t hcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, hcclDataType_t datatype,
                           hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, hcclSum, 0, comm, stream);
}
hcclResult_t hcclBroadcast(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype, int root,
                           hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::Broadcast, sendbuff, recvbuff, count, datatype, hcclSum, root, comm, stream);
}
hcclResult_t hcclReduce(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                        hcclRedOp_t reduceOp, int root, hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::Reduce, sendbuff, recvbuff, count, datatype, reduceOp, root, comm, stream);
}
hcclResult_t hcclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, hcclDataType_t datatype,
                          hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::AllToAll, sendbuff, recvbuff, count, datatype, hcclSum, 0, comm, stream);
}
hcclResult_t hcclGroupStart(void) {
  ++group_depth;
  return hcclSuccess;
}

hcclResult_t hcclGroupEnd(void) {
  if (group_depth == 0) return fail(hcclInvalidUsage, "hcclGroupEnd: no hcclGroupStart before it");
  if (--group_depth > 0) return hcclSuccess;
  const std::vector<Grouped> calls = std::move(grouped);
  grouped.clear();
  // One submission per stream, streams in the order of their first call.
  std::vector<synStreamHandle> streams;
  for (const Grouped& g : calls)
    if (std::find(streams.begin(), streams.end(), g.stream) == streams.end()) streams.push_back(g.stream);
  hcclResult_t result = hcclSuccess;
  for (const synStreamHandle stream : streams) {
    // The collectives first, in the order of the calls (every rank calls them in the same order),
    // each after its communicator's previous one (they share its scratch memory); then the sends
    // and receives, which pair up in the order both ranks issue them. Every link's messages then
    // come in the same order at both ends, whatever the order of collectives and sends in a group.
    std::vector<hccl::Program> parts;
    std::vector<std::vector<size_t>> after;
    std::vector<hcclComm_t> comms;
    std::map<hcclComm_t, size_t> last_collective;
    std::vector<const Grouped*> ordered;
    for (const bool collectives : {true, false})
      for (const Grouped& g : calls)
        if (g.collective == collectives) ordered.push_back(&g);
    for (const Grouped* call : ordered) {
      const Grouped& g = *call;
      if (g.stream != stream) continue;
      if (!live(g.comm)) return fail(hcclInvalidUsage, "hcclGroupEnd: a grouped call's communicator was destroyed");
      after.emplace_back();
      if (g.collective) {
        if (const auto it = last_collective.find(g.comm); it != last_collective.end()) after.back().push_back(it->second);
        last_collective[g.comm] = parts.size();
      }
      parts.push_back(g.program);
      if (std::find(comms.begin(), comms.end(), g.comm) == comms.end()) comms.push_back(g.comm);
    }
    const hccl::Program merged = hccl::chain(parts, after, kJoinQueue);
    const synStatus status = api::on_stream("hcclGroupEnd", stream, [&](api::Device& d, api::Stream& st) {
      return submit(d, st, comms, merged, "hcclGroupEnd");
    });
    if (status != synSuccess && result == hcclSuccess) result = result_of(status);
  }
  return result;
}

hcclResult_t hcclSend(const void* sendbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm,
                      synStreamHandle stream) {
  return run(hccl::Collective::Send, sendbuff, nullptr, count, datatype, hcclSum, peer, comm, stream);
}
hcclResult_t hcclRecv(void* recvbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm,
                      synStreamHandle stream) {
  return run(hccl::Collective::Recv, nullptr, recvbuff, count, datatype, hcclSum, peer, comm, stream);
}
hcclResult_t hcclBarrier(hcclComm_t comm, synStreamHandle stream) {
  return run(hccl::Collective::Barrier, nullptr, nullptr, 0, hcclFloat32, hcclSum, 0, comm, stream);
}

}  // extern "C"
