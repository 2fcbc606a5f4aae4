#include "bridge/core/process_group_hccl.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "bridge/core/card.h"
#include "bridge/core/lazy.h"
#include "bridge/core/lowering.h"

namespace hpusim::bridge {

// Where a collective is in the card's stream: a Synapse event recorded right after it (when it is
// submitted, which a lazy collective is only at the next launch).
class HcclCompletion {
 public:
  HcclCompletion() : event_(Card::get().create_event(false)) {}
  ~HcclCompletion() {
    if (Card::acquired()) Card::get().destroy_event(event_);
  }
  HcclCompletion(const HcclCompletion&) = delete;
  HcclCompletion& operator=(const HcclCompletion&) = delete;
  void mark(synStreamHandle stream) {
    Card::get().record_event(event_, stream);
    submitted_ = true;
  }
  bool submitted() const { return submitted_; }
  synEventHandle event() const { return event_; }

 private:
  synEventHandle event_;
  std::atomic<bool> submitted_{false};
};

namespace {

std::mutex g_live_mutex;
std::set<hcclComm_t>& live_communicators() {
  static std::set<hcclComm_t> live;
  return live;
}

// A collective's Work: done when the card's stream has passed it. wait() lets the host go on
// (later work on the stream is ordered after the collective), except for a barrier, where the
// host waits for every rank.
class WorkHccl final : public c10d::Work {
 public:
  WorkHccl(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::shared_ptr<HcclCompletion> done,
           bool host_waits)
      : c10d::Work(rank, type), outputs_(std::move(outputs)), done_(std::move(done)), host_waits_(host_waits) {}
  bool isCompleted() override { return done_->submitted() && Card::get().event_done(done_->event()); }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds) override {
    if (!host_waits_) return true;
    if (!done_->submitted()) Lazy::get().flush("barrier wait");
    Card::get().synchronize_event(done_->event());
    return true;
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    if (!future_) {
      future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
      future_->markCompleted(c10::IValue(outputs_));
    }
    return future_;
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::shared_ptr<HcclCompletion> done_;
  bool host_waits_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

hcclDataType_t reduction_type(const at::Tensor& t, const char* op) {
  if (t.scalar_type() == at::kFloat) return hcclFloat32;
  if (t.scalar_type() == at::kBFloat16) return hcclBfloat16;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "hccl: ", op, " of ", t.scalar_type(),
                              " tensors is not supported (Float, BFloat16)");
}

hcclRedOp_t reduction_op(const c10d::ReduceOp& op, const char* name) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return hcclSum;
    case c10d::ReduceOp::MIN: return hcclMin;
    case c10d::ReduceOp::MAX: return hcclMax;
    default: break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "hccl: ", name, " with this ReduceOp is not supported (SUM, MIN, MAX)");
}

void check_single(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "hccl: ", op, " takes one tensor per rank (each rank drives one card), got ",
              tensors.size());
}

}  // namespace

// A tensor's bytes on the card for one collective: an HPU tensor's own storage, or, for a CPU
// tensor, a card buffer it is copied into (padded to 4 bytes, so that any size can travel as
// 32-bit words) and, for an output, copied back from once the collective has run.
class ProcessGroupHccl::Operand {
 public:
  Operand(const at::Tensor& t, const char* op, bool copy_in) : tensor_(t) {
    TORCH_CHECK(t.is_contiguous(), "hccl: ", op, " needs contiguous tensors");
    TORCH_CHECK(t.device().is_cpu() || t.device().type() == c10::DeviceType::HPU, "hccl: ", op,
                " takes hpu (or cpu) tensors, got one on ", t.device());
    if (t.device().is_cpu()) {
      bytes_ = static_cast<uint64_t>(t.numel()) * t.element_size();
      padded_ = (bytes_ + 3) / 4 * 4;
      staged_ = true;
      if (padded_ != 0) address_ = Card::get().allocate(padded_);
      if (copy_in && bytes_ != 0) {
        std::vector<uint8_t> words(padded_, 0);
        std::memcpy(words.data(), t.data_ptr(), bytes_);
        Card::get().to_device(words.data(), address_, padded_);
      }
    } else {
      bytes_ = static_cast<uint64_t>(t.numel()) * device_element_bytes(t.scalar_type());
      padded_ = bytes_;
      address_ = reinterpret_cast<uintptr_t>(t.storage().data()) +
                 static_cast<uint64_t>(t.storage_offset()) * device_element_bytes(t.scalar_type());
    }
  }
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;
  ~Operand() {
    if (staged_ && address_ != 0 && Card::acquired()) Card::get().release(address_);
  }

  void* pointer() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(address_)); }
  uint64_t bytes() const { return bytes_; }
  uint64_t padded() const { return padded_; }
  bool staged() const { return staged_; }
  // A staged output: the card's bytes back into the CPU tensor (`chunks` pieces of the tensor,
  // each `padded() / chunks` bytes apart on the card).
  void copy_out(uint64_t chunks = 1) {
    if (!staged_ || bytes_ == 0) return;
    std::vector<uint8_t> words(padded_);
    Card::get().to_host(address_, words.data(), padded_);
    const uint64_t piece = bytes_ / chunks, card_piece = padded_ / chunks;
    auto* out = static_cast<uint8_t*>(tensor_.data_ptr());
    for (uint64_t i = 0; i < chunks; ++i) std::memcpy(out + i * piece, words.data() + i * card_piece, piece);
  }

 private:
  at::Tensor tensor_;
  uint64_t address_ = 0, bytes_ = 0, padded_ = 0;
  bool staged_ = false;
};

namespace {

// Copies travel as 32-bit words, or 16-bit ones when the size needs them.
std::pair<hcclDataType_t, size_t> copy_words(uint64_t bytes, const char* op) {
  if (bytes % 4 == 0) return {hcclFloat32, bytes / 4};
  TORCH_CHECK(bytes % 2 == 0, "hccl: ", op, " of ", bytes,
              " bytes per rank on hpu: the size must be a multiple of 2 bytes");
  return {hcclBfloat16, bytes / 2};
}

void check_same_placement(const at::Tensor& a, const at::Tensor& b, const char* op) {
  TORCH_CHECK(a.device().type() == b.device().type(), "hccl: ", op,
              "'s tensors must all be on hpu or all on cpu, got ", a.device(), " and ", b.device());
}

}  // namespace

void check(hcclResult_t result, const char* call) {
  if (result == hcclSuccess) return;
  TORCH_CHECK(false, "hccl: ", call, " failed: ", hcclGetErrorString(result), ": ", hcclGetLastErrorMessage());
}

// `calls` between hcclGroupStart and hcclGroupEnd: one submission; the group closed if one throws.
void in_hccl_group(const std::function<void()>& calls) {
  check(hcclGroupStart(), "hcclGroupStart");
  try {
    calls();
  } catch (...) {
    hcclGroupEnd();
    throw;
  }
  check(hcclGroupEnd(), "hcclGroupEnd");
}

ProcessGroupHccl::ProcessGroupHccl(const hcclUniqueId& id, int rank, int size, bool lazy_collectives)
    : c10d::Backend(rank, size), lazy_collectives_(lazy_collectives) {
  Card::get();
  check(hcclCommInitRank(&comm_, size, id, rank), "hcclCommInitRank");
  const std::lock_guard<std::mutex> lock(g_live_mutex);
  live_communicators().insert(comm_);
}

ProcessGroupHccl::~ProcessGroupHccl() {
  {
    const std::lock_guard<std::mutex> lock(g_live_mutex);
    if (live_communicators().erase(comm_) == 0) return;   // released with the card already
  }
  if (!Card::acquired()) return;
  try {
    Lazy::get().flush("process group destroyed");   // its lazy collectives run before it goes
  } catch (const std::exception&) {
  }
  hcclCommDestroy(comm_);
}

void release_hccl_communicators() {
  const std::lock_guard<std::mutex> lock(g_live_mutex);
  for (hcclComm_t comm : live_communicators()) hcclCommDestroy(comm);
  live_communicators().clear();
}

hcclUniqueId hccl_unique_id(const std::vector<int>& cards) {
  Card::get();
  hcclUniqueId id{};
  if (cards.empty()) {
    check(hcclGetUniqueId(&id), "hcclGetUniqueId");
  } else {
    check(hcclGetUniqueIdOnCards(&id, static_cast<int>(cards.size()), cards.data()), "hcclGetUniqueIdOnCards");
  }
  return id;
}

void ProcessGroupHccl::run(const char* name, const std::vector<at::Tensor>& operands, bool staged,
                           std::function<void(synStreamHandle)> enqueue) {
  if (coalesced_) {
    TORCH_CHECK_NOT_IMPLEMENTED(!staged, "hccl: ", name, " of cpu tensors cannot be coalesced");
    const std::lock_guard<std::recursive_mutex> lock(Lazy::get().mutex());
    ++collectives_;
    coalesced_->calls.push_back(std::move(enqueue));
    coalesced_->operands.insert(coalesced_->operands.end(), operands.begin(), operands.end());
    last_ = coalesced_->done;
    return;
  }
  submit(name, operands, staged, std::move(enqueue), std::make_shared<HcclCompletion>());
}

void ProcessGroupHccl::submit(const char* name, const std::vector<at::Tensor>& operands, bool staged,
                              std::function<void(synStreamHandle)> enqueue, std::shared_ptr<HcclCompletion> done) {
  Lazy::DeviceStep step = [done, span = std::string(name), enqueue = std::move(enqueue)](synStreamHandle stream) {
    Card& card = Card::get();
    const uint64_t start = card.host_now_ns();
    enqueue(stream);
    done->mark(stream);
    card.trace_span(span.c_str(), start);
  };
  Lazy& lazy = Lazy::get();
  const std::lock_guard<std::recursive_mutex> lock(lazy.mutex());
  ++collectives_;
  last_ = done;
  if (lazy_collectives_ && !lazy.eager() && !staged) {
    std::vector<c10::Storage> storages;
    for (const at::Tensor& t : operands) storages.push_back(t.storage());
    lazy.record_step(std::move(step), std::move(storages));
    return;
  }
  lazy.refuse_in_capture("collective nonSFG");
  lazy.flush(name);
  step(Card::get().stream());
}

void ProcessGroupHccl::startCoalescing() {
  TORCH_CHECK(!coalesced_, "hccl: startCoalescing inside a coalescing block");
  coalesced_ = Coalesced{{}, {}, std::make_shared<HcclCompletion>()};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::endCoalescing() {
  TORCH_CHECK(coalesced_, "hccl: endCoalescing without startCoalescing");
  Coalesced block = std::move(*coalesced_);
  coalesced_.reset();
  if (!block.calls.empty()) {
    --collectives_;   // counted per call already
    submit("hccl coalesced", block.operands, false,
           [calls = std::move(block.calls)](synStreamHandle stream) {
             in_hccl_group([&] {
               for (const auto& call : calls) call(stream);
             });
           },
           block.done);
  } else {
    block.done->mark(Card::get().stream());
  }
  last_ = block.done;
  return work(c10d::OpType::COALESCED, block.operands);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::work(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                      bool host_waits) {
  return c10::make_intrusive<WorkHccl>(rank_, type, std::move(outputs), last_, host_waits);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  check_single(tensors, "allreduce");
  const hcclDataType_t type = reduction_type(tensors[0], "allreduce");
  const hcclRedOp_t op = reduction_op(opts.reduceOp, "allreduce");
  Operand data(tensors[0], "allreduce", true);
  void* p = data.pointer();
  const size_t count = tensors[0].numel();
  run("hccl allreduce", tensors, data.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclAllReduce(p, p, count, type, op, comm, stream), "hcclAllReduce");
  });
  data.copy_out();
  return work(c10d::OpType::ALLREDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  for (auto& t : tensors) {
    std::vector<at::Tensor> one{t};
    allreduce(one, opts);
  }
  return work(c10d::OpType::ALLREDUCE_COALESCED, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  check_single(tensors, "broadcast");
  Operand data(tensors[0], "broadcast", true);
  const auto [type, count] = copy_words(data.padded(), "broadcast");
  void* p = data.pointer();
  const int root = static_cast<int>(opts.rootRank);
  run("hccl broadcast", tensors, data.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclBroadcast(p, p, count, type, root, comm, stream), "hcclBroadcast");
  });
  data.copy_out();
  return work(c10d::OpType::BROADCAST, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  check_single(tensors, "reduce");
  const hcclDataType_t type = reduction_type(tensors[0], "reduce");
  const hcclRedOp_t op = reduction_op(opts.reduceOp, "reduce");
  Operand data(tensors[0], "reduce", true);
  void* p = data.pointer();
  const size_t count = tensors[0].numel();
  const int root = static_cast<int>(opts.rootRank);
  run("hccl reduce", tensors, data.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclReduce(p, p, count, type, op, root, comm, stream), "hcclReduce");
  });
  data.copy_out();
  return work(c10d::OpType::REDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  check_same_placement(output, input, "allgather");
  TORCH_CHECK(output.numel() == input.numel() * size_, "hccl: allgather's output has ", output.numel(),
              " elements, not ", size_, " x ", input.numel());
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "hccl: allgather's output is ", output.scalar_type(),
              ", its input ", input.scalar_type());
  Operand in(input, "allgather", true);
  if (in.staged()) {
    // Each rank's piece travels padded as this rank's input was.
    at::Tensor padded = at::empty({static_cast<int64_t>(in.padded()) * size_}, at::kByte);
    Operand card_out(padded, "allgather", false);
    const auto [type, count] = copy_words(in.padded(), "allgather");
    void *src = in.pointer(), *dst = card_out.pointer();
    run("hccl allgather", {input, output}, true, [=, comm = comm_](synStreamHandle stream) {
      check(hcclAllGather(src, dst, count, type, comm, stream), "hcclAllGather");
    });
    card_out.copy_out();
    const uint64_t piece = in.bytes();
    auto* out = static_cast<uint8_t*>(output.data_ptr());
    for (int r = 0; r < size_; ++r) std::memcpy(out + r * piece, padded.data_ptr<uint8_t>() + r * in.padded(), piece);
  } else {
    Operand out(output, "allgather", false);
    const auto [type, count] = copy_words(in.bytes(), "allgather");
    void *src = in.pointer(), *dst = out.pointer();
    run("hccl allgather", {input, output}, false, [=, comm = comm_](synStreamHandle stream) {
      check(hcclAllGather(src, dst, count, type, comm, stream), "hcclAllGather");
    });
  }
  return work(c10d::OpType::_ALLGATHER_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  check_single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_), "hccl: allgather takes ",
              size_, " output tensors for its one input");
  at::Tensor input = inputs[0].contiguous();
  at::Tensor flat = at::empty({input.numel() * size_}, input.options());
  _allgather_base(flat, input, opts);
  for (int r = 0; r < size_; ++r)
    outputs[0][r].copy_(flat.narrow(0, r * input.numel(), input.numel()).view(outputs[0][r].sizes()));
  return work(c10d::OpType::ALLGATHER, outputs[0]);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "hccl: allgather_into_tensor_coalesced takes as many outputs as inputs");
  for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
  return work(c10d::OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  check_same_placement(output, input, "reduce_scatter");
  TORCH_CHECK(input.numel() == output.numel() * size_, "hccl: reduce_scatter's input has ", input.numel(),
              " elements, not ", size_, " x ", output.numel());
  const hcclDataType_t type = reduction_type(input, "reduce_scatter");
  const hcclRedOp_t op = reduction_op(opts.reduceOp, "reduce_scatter");
  Operand in(input, "reduce_scatter", true);
  Operand out(output, "reduce_scatter", false);
  void *src = in.pointer(), *dst = out.pointer();
  const size_t count = output.numel();
  run("hccl reduce_scatter", {input, output}, in.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclReduceScatter(src, dst, count, type, op, comm, stream), "hcclReduceScatter");
  });
  out.copy_out();
  return work(c10d::OpType::_REDUCE_SCATTER_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  check_single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), "hccl: reduce_scatter takes ",
              size_, " input tensors for its one output");
  at::Tensor flat = at::cat(inputs[0]);
  at::Tensor out = outputs[0].is_contiguous() ? outputs[0] : at::empty_like(outputs[0]);
  _reduce_scatter_base(out, flat, opts);
  if (!out.is_same(outputs[0])) outputs[0].copy_(out);
  return work(c10d::OpType::REDUCE_SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_split_sizes,
                                                               std::vector<int64_t>& input_split_sizes,
                                                               const c10d::AllToAllOptions&) {
  check_same_placement(output, input, "all_to_all");
  TORCH_CHECK_NOT_IMPLEMENTED(!input.device().is_cpu(), "hccl: all_to_all of cpu tensors is not supported");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "hccl: all_to_all's output is ", output.scalar_type(),
              ", its input ", input.scalar_type());
  const auto even = [&](const std::vector<int64_t>& splits, const at::Tensor& t) {
    return splits.empty() || std::all_of(splits.begin(), splits.end(),
                                         [&](int64_t s) { return s * size_ == (t.numel() ? t.size(0) : 0); });
  };
  Operand in(input, "all_to_all", true);
  Operand out(output, "all_to_all", false);
  if (even(output_split_sizes, output) && even(input_split_sizes, input)) {
    TORCH_CHECK(output.numel() == input.numel() && input.numel() % size_ == 0, "hccl: all_to_all takes ",
                "input and output of the same size, a multiple of the world size ", size_);
    const auto [type, count] = copy_words(in.bytes() / size_, "all_to_all");
    void *src = in.pointer(), *dst = out.pointer();
    run("hccl all_to_all", {input, output}, false, [=, comm = comm_](synStreamHandle stream) {
      check(hcclAlltoAll(src, dst, count, type, comm, stream), "hcclAlltoAll");
    });
    return work(c10d::OpType::ALLTOALL_BASE, {output});
  }
  // Uneven splits (as NCCL runs them): this rank's own rows copied on the card, a send to and a
  // receive from every other rank, all in one group.
  const auto bytes_per_peer = [&](const std::vector<int64_t>& splits, const at::Tensor& t, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const uint64_t row_bytes = rows == 0 ? 0 : static_cast<uint64_t>(t.numel() / rows) * device_element_bytes(t.scalar_type());
    std::vector<uint64_t> bytes(static_cast<size_t>(size_), 0);
    if (splits.empty()) {
      TORCH_CHECK(rows % size_ == 0, "hccl: all_to_all's ", what, " has ", rows, " rows, not a multiple of ", size_);
      std::fill(bytes.begin(), bytes.end(), static_cast<uint64_t>(rows / size_) * row_bytes);
      return bytes;
    }
    TORCH_CHECK(splits.size() == static_cast<size_t>(size_), "hccl: all_to_all's ", what, " split sizes name ",
                splits.size(), " ranks, not ", size_);
    int64_t total = 0;
    for (size_t p = 0; p < splits.size(); ++p) {
      TORCH_CHECK(splits[p] >= 0, "hccl: all_to_all's ", what, " split size ", splits[p], " is negative");
      total += splits[p];
      bytes[p] = static_cast<uint64_t>(splits[p]) * row_bytes;
    }
    TORCH_CHECK(total == rows, "hccl: all_to_all's ", what, " split sizes add up to ", total, ", its rows are ", rows);
    return bytes;
  };
  const std::vector<uint64_t> send_bytes = bytes_per_peer(input_split_sizes, input, "input");
  const std::vector<uint64_t> recv_bytes = bytes_per_peer(output_split_sizes, output, "output");
  for (int p = 0; p < size_; ++p) {
    copy_words(send_bytes[static_cast<size_t>(p)], "all_to_all");
    copy_words(recv_bytes[static_cast<size_t>(p)], "all_to_all");
  }
  TORCH_CHECK(send_bytes[static_cast<size_t>(rank_)] == recv_bytes[static_cast<size_t>(rank_)], "hccl: all_to_all: rank ",
              rank_, " sends itself ", send_bytes[static_cast<size_t>(rank_)], " bytes and receives ",
              recv_bytes[static_cast<size_t>(rank_)]);
  const uint64_t src = reinterpret_cast<uintptr_t>(in.pointer()), dst = reinterpret_cast<uintptr_t>(out.pointer());
  run("hccl all_to_all", {input, output}, false, [=, comm = comm_, me = rank_, n = size_](synStreamHandle stream) {
    uint64_t sent = 0, received = 0;
    std::vector<uint64_t> send_at, recv_at;
    for (int p = 0; p < n; ++p) {
      send_at.push_back(sent);
      recv_at.push_back(received);
      sent += send_bytes[static_cast<size_t>(p)];
      received += recv_bytes[static_cast<size_t>(p)];
    }
    const size_t self = static_cast<size_t>(me);
    Card::get().enqueue_on_device(stream, src + send_at[self], dst + recv_at[self], send_bytes[self]);
    in_hccl_group([&] {
      for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        const size_t i = static_cast<size_t>(p);
        const auto [send_type, send_count] = copy_words(send_bytes[i], "all_to_all");
        const auto [recv_type, recv_count] = copy_words(recv_bytes[i], "all_to_all");
        check(hcclSend(reinterpret_cast<void*>(src + send_at[i]), send_count, send_type, p, comm, stream), "hcclSend");
        check(hcclRecv(reinterpret_cast<void*>(dst + recv_at[i]), recv_count, recv_type, p, comm, stream), "hcclRecv");
      }
    });
  });
  return work(c10d::OpType::ALLTOALL_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(outputs.size() == static_cast<size_t>(size_) && inputs.size() == static_cast<size_t>(size_),
              "hccl: all_to_all takes ", size_, " input and ", size_, " output tensors");
  // As one flat all_to_all, each tensor's elements one split.
  std::vector<at::Tensor> flat_inputs;
  std::vector<int64_t> input_splits, output_splits;
  for (const at::Tensor& t : inputs) {
    flat_inputs.push_back(t.reshape({-1}));
    input_splits.push_back(t.numel());
  }
  int64_t received = 0;
  for (const at::Tensor& t : outputs) {
    output_splits.push_back(t.numel());
    received += t.numel();
  }
  at::Tensor in = at::cat(flat_inputs);
  at::Tensor out = at::empty({received}, in.options());
  alltoall_base(out, in, output_splits, input_splits, opts);
  int64_t at = 0;
  for (int r = 0; r < size_; ++r) {
    outputs[r].copy_(out.narrow(0, at, output_splits[r]).view(outputs[r].sizes()));
    at += output_splits[r];
  }
  return work(c10d::OpType::ALLTOALL, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::send(std::vector<at::Tensor>& tensors, int dst_rank, int) {
  check_single(tensors, "send");
  Operand data(tensors[0], "send", true);
  const auto [type, count] = copy_words(data.padded(), "send");
  void* p = data.pointer();
  run("hccl send", tensors, data.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclSend(p, count, type, dst_rank, comm, stream), "hcclSend");
  });
  if (data.staged()) Card::get().synchronize_stream(Card::get().stream());   // before the buffer goes
  return work(c10d::OpType::SEND, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::recv(std::vector<at::Tensor>& tensors, int src_rank, int) {
  check_single(tensors, "recv");
  Operand data(tensors[0], "recv", false);
  const auto [type, count] = copy_words(data.padded(), "recv");
  void* p = data.pointer();
  run("hccl recv", tensors, data.staged(), [=, comm = comm_](synStreamHandle stream) {
    check(hcclRecv(p, count, type, src_rank, comm, stream), "hcclRecv");
  });
  data.copy_out();
  return work(c10d::OpType::RECV, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHccl::barrier(const c10d::BarrierOptions&) {
  run("hccl barrier", {}, false, [comm = comm_](synStreamHandle stream) { check(hcclBarrier(comm, stream), "hcclBarrier"); });
  return work(c10d::OpType::BARRIER, {}, true);
}

}  // namespace hpusim::bridge
