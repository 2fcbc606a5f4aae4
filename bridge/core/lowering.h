// Lowering torch ops to Synapse nodes. A lowered op is registered for the HPU key with one boxed
// kernel (lowering.cpp): it infers the outputs' shapes on Meta tensors, makes the HPU outputs,
// and calls the op's lowering function, which adds nodes to the pending graph through a
// Lowering context. A lowering that cannot handle a call (a dtype, a layout, an argument value)
// throws CannotLower; the nodes it added are dropped and the op takes the CPU fallback.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <map>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bridge/core/pending_graph.h"

namespace hpusim::bridge {

class CannotLower : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How device memory holds a torch dtype: int64 as int32 (the real stack's default without
// PT_ENABLE_INT64_SUPPORT), bool as u8. Throws CannotLower for dtypes the card does not take.
synDataType device_type(at::ScalarType dtype);
// Bytes per element in device memory (4 for int64).
uint64_t device_element_bytes(at::ScalarType dtype);
// "_f32" / "_bf16": the kernel library's GUID suffix; CannotLower for other dtypes.
std::string guid_suffix(at::ScalarType dtype);
// The suffix of the kernels that move elements as raw bits (strided_view / strided_insert):
// "_f32", "_bf16", "_i32" (int32, int64), "_u8" (bool, uint8).
std::string raw_suffix(at::ScalarType dtype);
// Also "_i32" for int32 and int64 (held as int32), for the kernels that have integer forms
// (add, sub, mul, max, min, fill).
std::string arithmetic_suffix(at::ScalarType dtype);
// A torch shape in Synapse order (dim 0 innermost).
std::vector<uint32_t> synapse_shape(at::IntArrayRef sizes);

class Lowering {
 public:
  // `t` read as a dense tensor of its own shape: directly when contiguous, through a permute
  // node when its layout is a permutation of a dense block, through a strided_view node of the
  // storage span it covers otherwise (a slice, a column).
  ValueId input(const at::Tensor& t);
  // Like input(), but dims `t` broadcasts along (stride 0) stay size 1, for kernels that broadcast.
  ValueId broadcast_input(const at::Tensor& t);
  // input() converted to `dtype` (casts between f32, bf16, int32 / int64 and bool).
  ValueId input_as(const at::Tensor& t, at::ScalarType dtype);
  // `t` written whole: directly when contiguous, through a permute node after the op's nodes
  // when its layout is a permutation of a dense block, through a strided_insert node into the
  // storage span it covers otherwise (in place: the span's other elements keep their values).
  ValueId output(const at::Tensor& t);
  // The same region as `t`, seen with another shape (same element count).
  ValueId output_as(const at::Tensor& t, at::IntArrayRef sizes);
  ValueId input_as_shape(const at::Tensor& t, at::IntArrayRef sizes);
  ValueId temp(at::ScalarType dtype, std::vector<uint32_t> shape);
  // A one-element tensor holding `value` (a fill node).
  ValueId constant(double value, at::ScalarType dtype);

  void node(const std::string& guid, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
            const std::vector<float>& scalars = {});
  void node_params(const std::string& guid, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                   const void* params, size_t bytes);
  const PendingValue& value(ValueId id) const;
  at::ScalarType dtype_of(ValueId id) const { return dtypes_.at(id); }
  // The lowering succeeded: the storages it reads and writes stay alive until the launch (a
  // lowering that gave up keeps none, so no host write launches the graph for it).
  void commit();

 private:
  ValueId dense_region(const at::Tensor& t, at::IntArrayRef sizes, bool write, int64_t extra_offset = 0,
                       bool partial = false);
  // A strided view that is no permutation of a dense block: the span of its storage from its
  // first element to its last, and its strides (Synapse order) for strided_view / strided_insert.
  struct Span {
    int64_t elements;
    std::vector<float> strides;
  };
  static Span span_of(const at::Tensor& t);
  ValueId remember(ValueId v, at::ScalarType dtype);
  // Nodes that end the op (a permuted output's permute), added by commit().
  struct Finishing {
    std::string guid;
    std::vector<ValueId> from;
    ValueId to;
    std::vector<float> scalars;
  };
  std::vector<Finishing> finishing_;
  std::map<ValueId, at::ScalarType> dtypes_;
  std::vector<c10::Storage> storages_;
};

// One call of a lowered op: its arguments (HPU tensors as the caller passed them) and its
// outputs (made from the Meta run).
struct LoweredCall {
  const c10::OperatorHandle& op;
  std::vector<c10::IValue> args;
  std::vector<at::Tensor> outputs;
  const at::Tensor& tensor(size_t i) const { return args.at(i).toTensor(); }
  bool has(size_t i) const { return !args.at(i).isNone(); }
};

using LoweringFn = std::function<void(Lowering&, const LoweredCall&)>;
// The outputs of a call (new HPU tensors, or arguments it returns), for ops whose Meta kernel
// does not give them (convolution_overrideable).
using OutputsFn = std::function<std::vector<at::Tensor>(const std::vector<c10::IValue>& args)>;

// What runs a call on the CPU when its lowering refuses it (the boxed CPU fallback by default).
using CpuFn = std::function<void(const c10::OperatorHandle&, torch::jit::Stack*)>;

// Registers `op` ("add.out") for the HPU key with `fn` as its lowering; the outputs come from a
// Meta run of the op, or from `outputs` when given.
void register_lowering(torch::Library& library, const char* op, LoweringFn fn, OutputsFn outputs = nullptr,
                       CpuFn cpu = nullptr);
// The same for an elementwise op: when the tensors it writes (out=, in-place) already have the
// broadcast shape of its inputs, they are its outputs without a Meta run (many Meta kernels are
// Python: ~100 us of host time per op); a functional one's output is a new tensor of that shape.
void register_elementwise_lowering(torch::Library& library, const char* op, LoweringFn fn);

// Records what `fn` adds as one op (eager mode: launches it); false, with nothing added, when it
// throws CannotLower.
bool record(const char* name, const std::function<void(Lowering&)>& fn);
// dst.copy_(src) between HPU tensors as an op of the pending graph; false when it cannot be.
bool record_copy(const at::Tensor& src, const at::Tensor& dst);

// Helpers the op lowerings share (lowered_ops.cpp).
// A Python number, or a CPU scalar tensor, as a double.
double scalar_of(const c10::IValue& v);
// An operand of an elementwise op in `dtype`: an HPU tensor (broadcasting), or a number or CPU
// scalar tensor as a one-element constant.
ValueId operand(Lowering& l, const c10::IValue& v, at::ScalarType dtype);
// x broadcast to `shape` (Synapse order).
ValueId expand_to(Lowering& l, ValueId x, const std::vector<uint32_t>& shape, at::ScalarType dtype);
// The inputs of an elementwise node writing `out`, the first broadcast to out's shape when the
// inputs together do not cover it.
std::vector<ValueId> covering(Lowering& l, std::vector<ValueId> inputs, const at::Tensor& out);
// The same when the node writes `dtype` (not out's) of out's shape: input `which` is broadcast.
std::vector<ValueId> covering(Lowering& l, std::vector<ValueId> inputs, const at::Tensor& out, at::ScalarType dtype,
                              size_t which);
// `t` in `dtype` with every element present: an expanded tensor (the gradient of a sum) is spread
// out, for the kernels that do not broadcast.
ValueId whole_input(Lowering& l, const at::Tensor& t, at::ScalarType dtype);
// A fresh one-element int32 device tensor holding the next kernel seed of `generator` (the
// default HPU generator when none), for the kernels that draw random numbers: the graph stays
// the same from draw to draw.
ValueId seed_input(Lowering& l, const std::optional<at::Generator>& generator);
// The same into a given one-element int32 HPU tensor (an op that returns its seed, for a backward
// that draws the same numbers again).
ValueId seed_input_into(Lowering& l, const at::Tensor& seed_tensor, const std::optional<at::Generator>& generator);
// value * x (x itself when value is 1).
ValueId scaled(Lowering& l, ValueId x, double value, at::ScalarType dtype);
// Class or row indices (int64 held as int32, or int32).
ValueId class_indices(Lowering& l, const at::Tensor& indices);

// Runs what is pending (lazy::flush), for the bridge's synchronisation points.
void flush_pending(const char* why);

}  // namespace hpusim::bridge
