// torch.distributed's collective ops (the c10d:: operators every ProcessGroup call dispatches) for
// HPU tensors: torch registers them for CPU, CUDA and PrivateUse1 only. Each hands its arguments to
// the group's backend for the HPU device (process_group_hccl.h for "hccl"), as torch's own do.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/library.h>

#include <chrono>
#include <tuple>
#include <vector>

namespace hpusim::bridge {
namespace {

using c10d::ProcessGroup;
using c10d::ReduceOp;
using c10d::Work;
using PG = c10::intrusive_ptr<ProcessGroup>;
using WorkPtr = c10::intrusive_ptr<Work>;
using TensorLists = std::vector<std::vector<at::Tensor>>;

constexpr auto kHpu = c10::DeviceType::HPU;

std::chrono::milliseconds ms(int64_t timeout) { return std::chrono::milliseconds(timeout); }

std::tuple<std::vector<at::Tensor>, WorkPtr> allreduce(at::TensorList tensors, const PG& pg,
                                                      const c10::intrusive_ptr<ReduceOp>& op,
                                                      const std::optional<at::Tensor>&, bool async_op,
                                                      int64_t timeout) {
  auto v = tensors.vec();
  auto work = pg->getBackend(kHpu)->allreduce(v, c10d::AllreduceOptions{*op, ms(timeout), async_op});
  return {std::move(v), work};
}

WorkPtr allreduce_coalesced(at::TensorList tensors, const PG& pg, const c10::intrusive_ptr<ReduceOp>& op,
                            bool async_op, int64_t timeout) {
  auto v = tensors.vec();
  c10d::AllreduceCoalescedOptions opts;
  opts.reduceOp = *op;
  opts.timeout = ms(timeout);
  opts.asyncOp = async_op;
  return pg->getBackend(kHpu)->allreduce_coalesced(v, opts);
}

std::tuple<std::vector<at::Tensor>, WorkPtr> broadcast(at::TensorList tensors, const PG& pg, int64_t root_rank,
                                                      int64_t root_tensor, bool async_op, int64_t timeout) {
  auto v = tensors.vec();
  auto work = pg->getBackend(kHpu)->broadcast(v, c10d::BroadcastOptions{root_rank, root_tensor, ms(timeout), async_op});
  return {std::move(v), work};
}

WorkPtr reduce(at::TensorList tensors, const PG& pg, const c10::intrusive_ptr<ReduceOp>& op, int64_t root_rank,
               int64_t root_tensor, bool async_op, int64_t timeout) {
  auto v = tensors.vec();
  return pg->getBackend(kHpu)->reduce(v, c10d::ReduceOptions{*op, root_rank, root_tensor, ms(timeout), async_op});
}

std::tuple<TensorLists, WorkPtr> allgather(const TensorLists& outputs, at::TensorList inputs, const PG& pg,
                                          bool async_op, int64_t timeout) {
  auto in = inputs.vec();
  auto out = outputs;
  auto work = pg->getBackend(kHpu)->allgather(out, in, c10d::AllgatherOptions{ms(timeout), async_op});
  return {std::move(out), work};
}

std::tuple<at::Tensor, WorkPtr> allgather_base(at::Tensor& output, at::Tensor& input, const PG& pg, bool async_op,
                                               int64_t timeout) {
  auto work = pg->getBackend(kHpu)->_allgather_base(output, input, c10d::AllgatherOptions{ms(timeout), async_op});
  return {output, work};
}

WorkPtr allgather_into_tensor_coalesced(at::TensorList outputs, at::TensorList inputs, const PG& pg, bool async_op) {
  auto out = outputs.vec();
  auto in = inputs.vec();
  c10d::AllgatherOptions opts;
  opts.asyncOp = async_op;
  return pg->getBackend(kHpu)->allgather_into_tensor_coalesced(out, in, opts);
}

std::tuple<std::vector<at::Tensor>, WorkPtr> reduce_scatter(const at::TensorList& outputs, const TensorLists& inputs,
                                                           const PG& pg, const c10::intrusive_ptr<ReduceOp>& op,
                                                           bool async_op, int64_t timeout) {
  auto out = outputs.vec();
  auto in = inputs;
  auto work = pg->getBackend(kHpu)->reduce_scatter(out, in, c10d::ReduceScatterOptions{*op, ms(timeout), async_op});
  return {std::move(out), work};
}

std::tuple<at::Tensor, WorkPtr> reduce_scatter_base(at::Tensor& output, at::Tensor& input, const PG& pg,
                                                    const c10::intrusive_ptr<ReduceOp>& op, bool async_op,
                                                    int64_t timeout) {
  auto work = pg->getBackend(kHpu)->_reduce_scatter_base(output, input,
                                                          c10d::ReduceScatterOptions{*op, ms(timeout), async_op});
  return {output, work};
}

WorkPtr reduce_scatter_tensor_coalesced(at::TensorList outputs, at::TensorList inputs, const PG& pg,
                                        const c10::intrusive_ptr<ReduceOp>& op, bool async_op, int64_t timeout) {
  auto out = outputs.vec();
  auto in = inputs.vec();
  return pg->getBackend(kHpu)->reduce_scatter_tensor_coalesced(out, in,
                                                                c10d::ReduceScatterOptions{*op, ms(timeout), async_op});
}

WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, const PG& pg, std::vector<int64_t> output_splits,
                      std::vector<int64_t> input_splits, bool async_op, int64_t timeout) {
  return pg->getBackend(kHpu)->alltoall_base(output, input, output_splits, input_splits,
                                              c10d::AllToAllOptions{ms(timeout), async_op});
}

std::tuple<std::vector<at::Tensor>, WorkPtr> alltoall(const at::TensorList& outputs, const at::TensorList& inputs, const PG& pg,
                                                     bool async_op, int64_t timeout) {
  auto out = outputs.vec();
  auto in = inputs.vec();
  auto work = pg->getBackend(kHpu)->alltoall(out, in, c10d::AllToAllOptions{ms(timeout), async_op});
  return {std::move(out), work};
}

WorkPtr send(at::TensorList tensors, const PG& pg, int64_t dst, int64_t tag) {
  auto v = tensors.vec();
  return pg->getBackend(kHpu)->send(v, static_cast<int>(dst), static_cast<int>(tag));
}

WorkPtr recv(at::TensorList tensors, const PG& pg, int64_t src, int64_t tag) {
  auto v = tensors.vec();
  return pg->getBackend(kHpu)->recv(v, static_cast<int>(src), static_cast<int>(tag));
}

WorkPtr barrier(at::Tensor, const PG& pg, const std::vector<int64_t>& device_ids, bool async_op, int64_t timeout) {
  c10d::BarrierOptions opts;
  opts.device_ids = device_ids;
  opts.timeout = ms(timeout);
  opts.asyncOp = async_op;
  return pg->getBackend(kHpu)->barrier(opts);
}

TORCH_LIBRARY_IMPL(c10d, HPU, m) {
  m.impl("allreduce_", allreduce);
  m.impl("allreduce_coalesced_", allreduce_coalesced);
  m.impl("broadcast_", broadcast);
  m.impl("reduce_", reduce);
  m.impl("allgather_", allgather);
  m.impl("_allgather_base_", allgather_base);
  m.impl("allgather_into_tensor_coalesced_", allgather_into_tensor_coalesced);
  m.impl("reduce_scatter_", reduce_scatter);
  m.impl("_reduce_scatter_base_", reduce_scatter_base);
  m.impl("reduce_scatter_tensor_coalesced_", reduce_scatter_tensor_coalesced);
  m.impl("alltoall_base_", alltoall_base);
  m.impl("alltoall_", alltoall);
  m.impl("send", send);
  m.impl("recv_", recv);
  m.impl("barrier", barrier);
}

}  // namespace
}  // namespace hpusim::bridge
