// torch.distributed's "hccl" backend: a c10d::Backend whose collectives run on the card's NIC ports
// through hpusim's HCCL (synapse/hccl/include/hccl_api.h), one communicator per process group,
// each rank on its process's card. A collective goes on the calling thread's current stream of the
// card after the ops recorded before it, so the device orders it with the ops before and after it
// (a Work's wait() does not block the host, as with NCCL on CUDA; barrier's does). Without lazy
// collectives the pending lazy graph is launched first and the collective submitted at once (and
// refused during an HPU graph capture); with them (PT_HPU_ENABLE_LAZY_COLLECTIVES) it is recorded
// after the pending ops (Lazy::record_step): both run at the next launch, and an HPU graph
// captures it. CPU tensors go through the card (copied there and back, at once), so barrier and
// the object collectives work too.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hccl_api.h"

namespace hpusim::bridge {

class HcclCompletion;   // where a collective is in the card's stream

class ProcessGroupHccl final : public c10d::Backend {
 public:
  // Rank `rank` of `size` of the communicator `id` (hccl_unique_id() of the group's cards, which
  // every rank makes alike).
  ProcessGroupHccl(const hcclUniqueId& id, int rank, int size, bool lazy_collectives);
  ~ProcessGroupHccl() override;

  const std::string getBackendName() const override { return "hccl"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // torch's coalescing (batch_isend_irecv, _coalescing_manager): the calls between start and end
  // go to the card as one HCCL group, so a cycle of sends and receives does not wait on itself.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // Collectives enqueued so far (for the tests and the trace).
  uint64_t collectives() const { return collectives_; }

 private:
  class Operand;
  // One collective `name` (a slice on the timeline's framework track): `enqueue(stream)` after the
  // ops recorded before it, now or, for a lazy collective, at the next launch. `operands` stay
  // allocated until then; `staged` (cpu tensors) runs at once.
  // Between startCoalescing and endCoalescing it is kept for the group instead.
  void run(const char* name, const std::vector<at::Tensor>& operands, bool staged,
           std::function<void(synStreamHandle)> enqueue);
  void submit(const char* name, const std::vector<at::Tensor>& operands, bool staged,
              std::function<void(synStreamHandle)> enqueue, std::shared_ptr<HcclCompletion> done);
  // The Work of the last collective run.
  c10::intrusive_ptr<c10d::Work> work(c10d::OpType type, std::vector<at::Tensor> outputs, bool host_waits = false);

  hcclComm_t comm_ = nullptr;
  bool lazy_collectives_;
  uint64_t collectives_ = 0;
  std::shared_ptr<HcclCompletion> last_;
  struct Coalesced {
    std::vector<std::function<void(synStreamHandle)>> calls;
    std::vector<at::Tensor> operands;
    std::shared_ptr<HcclCompletion> done;
  };
  std::optional<Coalesced> coalesced_;
};

// A new communicator's id (the card is acquired first: in a box split between processes, every
// rank must have joined before any waits for the id); rank i on the box's card cards[i], or on
// card i if `cards` is empty.
hcclUniqueId hccl_unique_id(const std::vector<int>& cards);

// Destroys the communicators still alive (their scratch memory is the card's): before the card
// is released at exit.
void release_hccl_communicators();

}  // namespace hpusim::bridge
