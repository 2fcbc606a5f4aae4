// The lowered ops' boxed kernel (shapes from Meta, HPU outputs, the op's lowering into the pending
// graph, or the CPU fallback when it cannot) and the Lowering context's tensor mapping.
#include "bridge/core/lowering.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <optional>

#include "bridge/core/hpu_device.h"
#include "bridge/core/lazy.h"

namespace hpusim::bridge {

void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack);   // hpu_ops.cpp

synDataType device_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return syn_type_single;
    case at::kBFloat16:
      return syn_type_bf16;
    case at::kInt:
    case at::kLong:
      return syn_type_int32;
    case at::kBool:
    case at::kByte:
      return syn_type_uint8;
    case at::kChar:
      return syn_type_int8;
    case at::kShort:
      return syn_type_int16;
    default:
      throw CannotLower(std::string("dtype ") + c10::toString(dtype) + " is not a device type");
  }
}

uint64_t device_element_bytes(at::ScalarType dtype) {
  return dtype == at::kLong ? 4 : c10::elementSize(dtype);
}

std::string raw_suffix(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return "_f32";
    case at::kBFloat16: return "_bf16";
    case at::kInt:
    case at::kLong: return "_i32";
    case at::kBool:
    case at::kByte: return "_u8";
    default: throw CannotLower(std::string("no raw moves of ") + c10::toString(dtype));
  }
}

std::string guid_suffix(at::ScalarType dtype) {
  if (dtype == at::kFloat) return "_f32";
  if (dtype == at::kBFloat16) return "_bf16";
  throw CannotLower(std::string("no kernel for dtype ") + c10::toString(dtype));
}

std::string arithmetic_suffix(at::ScalarType dtype) {
  if (dtype == at::kInt || dtype == at::kLong) return "_i32";
  return guid_suffix(dtype);
}

std::vector<uint32_t> synapse_shape(at::IntArrayRef sizes) {
  if (sizes.size() > 5) throw CannotLower("more than 5 dims");
  std::vector<uint32_t> shape(sizes.rbegin(), sizes.rend());
  return shape;
}

namespace {

// A strided layout as a dense block read through a permutation: the block's dims (Synapse order,
// innermost first, as torch dims) and, per dim of the view (Synapse order), the block's dim it is.
struct DenseBlock {
  std::vector<int64_t> dims;        // torch dims, innermost first
  std::vector<float> permutation;   // permute's scalars
};

std::optional<DenseBlock> dense_block(at::IntArrayRef sizes, at::IntArrayRef strides) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> big;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] != 1) big.push_back(d);
  std::stable_sort(big.begin(), big.end(), [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (int64_t d : big) {
    if (strides[d] != expected) return std::nullopt;
    expected *= sizes[d];
  }
  DenseBlock block;
  block.dims = big;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 1) block.dims.push_back(d);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t torch_dim = rank - 1 - k;
    const auto at = std::find(block.dims.begin(), block.dims.end(), torch_dim) - block.dims.begin();
    block.permutation.push_back(static_cast<float>(at));
  }
  return block;
}

bool is_identity(const std::vector<float>& permutation) {
  for (size_t k = 0; k < permutation.size(); ++k)
    if (permutation[k] != static_cast<float>(k)) return false;
  return true;
}

void check_device_tensor(const at::Tensor& t) {
  if (!t.defined()) throw CannotLower("an undefined tensor");
  if (!t.is_hpu()) throw CannotLower("a CPU tensor among the operands");
  if (t.numel() == 0) throw CannotLower("an empty tensor");
}

}  // namespace

ValueId Lowering::remember(ValueId v, at::ScalarType dtype) {
  dtypes_[v] = dtype;
  return v;
}

const PendingValue& Lowering::value(ValueId id) const { return Lazy::get().graph().value(id); }

ValueId Lowering::dense_region(const at::Tensor& t, at::IntArrayRef sizes, bool write, int64_t extra_offset,
                               bool partial) {
  check_device_tensor(t);
  const c10::Storage& storage = t.storage();
  storages_.push_back(storage);
  Region r;
  r.storage = reinterpret_cast<uintptr_t>(storage.unsafeGetStorageImpl());
  r.base = reinterpret_cast<uintptr_t>(storage.data());
  r.offset = static_cast<uint64_t>(t.storage_offset() + extra_offset) * device_element_bytes(t.scalar_type());
  r.type = device_type(t.scalar_type());
  r.shape = synapse_shape(sizes);
  Lazy& lazy = Lazy::get();
  if (!write) {
    lazy.check_value(storage.unsafeGetStorageImpl());
  } else if (!partial && r.offset == 0 && c10::multiply_integers(sizes) == static_cast<int64_t>(storage.nbytes() / t.itemsize())) {
    lazy.written_whole(storage.unsafeGetStorageImpl());
  }
  if (partial) return remember(lazy.graph().write_partial(r), t.scalar_type());
  return remember(write ? lazy.graph().write(r) : lazy.graph().read(r), t.scalar_type());
}

ValueId Lowering::input(const at::Tensor& t) {
  check_device_tensor(t);
  if (t.is_contiguous()) return dense_region(t, t.sizes(), false);
  const std::optional<DenseBlock> block = dense_block(t.sizes(), t.strides());
  if (!block) {
    const Span span = span_of(t);
    const ValueId whole = dense_region(t, {span.elements}, false);
    const ValueId y = temp(t.scalar_type(), synapse_shape(t.sizes()));
    node("strided_view" + raw_suffix(t.scalar_type()), {whole}, {y}, span.strides);
    return y;
  }
  std::vector<int64_t> block_sizes;   // torch order (outermost first)
  for (auto it = block->dims.rbegin(); it != block->dims.rend(); ++it) block_sizes.push_back(t.size(*it));
  const ValueId x = dense_region(t, block_sizes, false);
  if (is_identity(block->permutation)) return x;
  const ValueId y = temp(t.scalar_type(), synapse_shape(t.sizes()));
  node("permute" + guid_suffix(t.scalar_type()), {x}, {y}, block->permutation);
  return y;
}

Lowering::Span Lowering::span_of(const at::Tensor& t) {
  Span span{1, {}};
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    span.elements += (t.size(d) - 1) * t.stride(d);
    span.strides.push_back(t.size(d) == 1 ? 0.0f : static_cast<float>(t.stride(d)));
  }
  if (span.elements > (int64_t{1} << 24)) throw CannotLower("a strided view spanning more than 2^24 elements");
  return span;
}

ValueId Lowering::broadcast_input(const at::Tensor& t) {
  check_device_tensor(t);
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  bool expanded = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (t.stride(static_cast<int64_t>(d)) == 0 && sizes[d] != 1) {
      sizes[d] = 1;
      expanded = true;
    }
  }
  if (!expanded) return input(t);
  return input(t.as_strided(sizes, t.strides(), t.storage_offset()));
}

ValueId Lowering::input_as(const at::Tensor& t, at::ScalarType dtype) {
  const ValueId v = broadcast_input(t);
  const auto integer = [](at::ScalarType d) { return d == at::kInt || d == at::kLong; };
  if (t.scalar_type() == dtype || (integer(t.scalar_type()) && integer(dtype))) return v;   // ints: both int32
  const ValueId y = temp(dtype, value(v).region.shape);
  if (t.scalar_type() == at::kFloat && dtype == at::kBFloat16) {
    node("cast_f32_to_bf16", {v}, {y});
  } else if (t.scalar_type() == at::kBFloat16 && dtype == at::kFloat) {
    node("cast_bf16_to_f32", {v}, {y});
  } else if (t.scalar_type() == at::kFloat && integer(dtype)) {
    node("cast_f32_to_i32", {v}, {y});
  } else if (integer(t.scalar_type()) && dtype == at::kFloat) {
    node("cast_i32_to_f32", {v}, {y});
  } else if (t.scalar_type() == at::kBool && (dtype == at::kFloat || dtype == at::kBFloat16)) {
    if (dtype == at::kFloat) {
      node("cast_u8_to_f32", {v}, {y});
    } else {
      const ValueId wide = temp(at::kFloat, value(v).region.shape);
      node("cast_u8_to_f32", {v}, {wide});
      node("cast_f32_to_bf16", {wide}, {y});
    }
  } else if (t.scalar_type() == at::kBool && integer(dtype)) {
    node("cast_u8_to_i32", {v}, {y});
  } else if (dtype == at::kBool && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16 ||
                                    integer(t.scalar_type()))) {
    // x != 0 (NaN is true), as PyTorch's conversion to bool.
    const at::ScalarType compute = integer(t.scalar_type()) ? at::kInt : at::kFloat;
    const ValueId x = compute == t.scalar_type() || integer(t.scalar_type()) ? v : temp(at::kFloat, value(v).region.shape);
    if (t.scalar_type() == at::kBFloat16) node("cast_bf16_to_f32", {v}, {x});
    const ValueId truth = temp(compute, value(v).region.shape);
    const std::string sfx = compute == at::kInt ? "_i32" : "_f32";
    node("not_equal_fwd" + sfx, {x, constant(0.0, compute)}, {truth});
    node(compute == at::kInt ? "cast_i32_to_u8" : "cast_f32_to_u8", {truth}, {y});
  } else {
    throw CannotLower(std::string("no cast from ") + c10::toString(t.scalar_type()) + " to " + c10::toString(dtype));
  }
  return y;
}

ValueId Lowering::output(const at::Tensor& t) {
  check_device_tensor(t);
  if (t.is_contiguous()) return dense_region(t, t.sizes(), true);
  // A permutation of a dense block: the op writes a temporary of t's shape, and commit() permutes
  // it into the block once the op's own nodes are in.
  const std::optional<DenseBlock> block = dense_block(t.sizes(), t.strides());
  if (!block) {
    const Span span = span_of(t);
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.stride(d) == 0 && t.size(d) > 1) throw CannotLower("a write into an expanded view");
    const ValueId before = dense_region(t, {span.elements}, false);
    const ValueId after = dense_region(t, {span.elements}, true, 0, true);
    const ValueId y = temp(t.scalar_type(), synapse_shape(t.sizes()));
    finishing_.push_back({"strided_insert" + raw_suffix(t.scalar_type()), {before, y}, after, span.strides});
    return y;
  }
  std::vector<int64_t> block_sizes;
  for (auto it = block->dims.rbegin(); it != block->dims.rend(); ++it) block_sizes.push_back(t.size(*it));
  const ValueId x = dense_region(t, block_sizes, true);
  if (is_identity(block->permutation)) return x;
  const ValueId y = temp(t.scalar_type(), synapse_shape(t.sizes()));
  std::vector<float> inverse(block->permutation.size());
  for (size_t k = 0; k < inverse.size(); ++k) inverse[static_cast<size_t>(block->permutation[k])] = static_cast<float>(k);
  finishing_.push_back({"permute" + guid_suffix(t.scalar_type()), {y}, x, inverse});
  return y;
}

ValueId Lowering::output_as(const at::Tensor& t, at::IntArrayRef sizes) {
  check_device_tensor(t);
  if (!t.is_contiguous()) throw CannotLower("a strided output");
  TORCH_INTERNAL_ASSERT(c10::multiply_integers(sizes) == t.numel());
  return dense_region(t, sizes, true);
}

ValueId Lowering::input_as_shape(const at::Tensor& t, at::IntArrayRef sizes) {
  check_device_tensor(t);
  if (!t.is_contiguous()) throw CannotLower("a strided input to reshape");
  TORCH_INTERNAL_ASSERT(c10::multiply_integers(sizes) == t.numel());
  return dense_region(t, sizes, false);
}

ValueId Lowering::temp(at::ScalarType dtype, std::vector<uint32_t> shape) {
  return remember(Lazy::get().graph().temp(device_type(dtype), std::move(shape)), dtype);
}

ValueId Lowering::constant(double value, at::ScalarType dtype) {
  const ValueId v = temp(dtype, {});
  if ((dtype == at::kInt || dtype == at::kLong) && !(value == std::floor(value) && std::fabs(value) <= 16777216.0))
    throw CannotLower("an integer constant beyond 2^24");
  node("fill" + arithmetic_suffix(dtype), {}, {v}, {static_cast<float>(value)});
  return v;
}

void Lowering::commit() {
  for (const Finishing& f : finishing_) node(f.guid, f.from, {f.to}, f.scalars);
  finishing_.clear();
  for (const c10::Storage& s : storages_) Lazy::get().keep(s);
  storages_.clear();
}

void Lowering::node(const std::string& guid, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                    const std::vector<float>& scalars) {
  node_params(guid, std::move(inputs), std::move(outputs), scalars.empty() ? nullptr : scalars.data(),
              scalars.size() * sizeof(float));
}

void Lowering::node_params(const std::string& guid, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                           const void* params, size_t bytes) {
  PendingNode n;
  n.guid = guid;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  const auto* p = static_cast<const uint8_t*>(params);
  n.params.assign(p, p + bytes);
  Lazy::get().graph().add_node(std::move(n));
}

namespace {

struct LoweredOp {
  LoweringFn lower;
  OutputsFn outputs;
  CpuFn cpu;
  bool elementwise = false;
};

// The outputs of an elementwise call without a Meta run: the written arguments when they have the
// broadcast shape of the inputs (nullopt otherwise: the Meta run decides, resizing included).
std::optional<std::vector<at::Tensor>> elementwise_outputs(const c10::FunctionSchema& schema,
                                                           const std::vector<c10::IValue>& args) {
  std::vector<at::Tensor> written;
  c10::DimVector shape;
  const at::Tensor* first_input = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isTensor()) continue;
    const at::Tensor& t = args[i].toTensor();
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      written.push_back(t);
      continue;
    }
    if (!t.defined()) continue;
    if (first_input == nullptr) {
      first_input = &t;
      shape = c10::DimVector(t.sizes());
    } else {
      shape = at::infer_size_dimvector(shape, t.sizes());
    }
  }
  if (written.size() != schema.returns().size()) {
    // A functional op: one new contiguous output of the inputs' shape and the first input's dtype.
    if (!written.empty() || schema.returns().size() != 1 || first_input == nullptr) return std::nullopt;
    return std::vector<at::Tensor>{at::detail::empty_generic(shape, hpu_allocator(), c10::DispatchKeySet(c10::DispatchKey::HPU),
                                                             first_input->scalar_type(), std::nullopt)};
  }
  for (const at::Tensor& out : written) {
    if (!out.defined() || (first_input != nullptr && out.sizes() != c10::IntArrayRef(shape))) return std::nullopt;
  }
  return written;
}

std::unordered_map<c10::OperatorName, LoweredOp>& lowering_table() {
  static std::unordered_map<c10::OperatorName, LoweredOp> table;
  return table;
}

// The call's shapes on Meta tensors (one Meta storage per HPU storage, so aliasing shows), and
// its outputs as HPU tensors: an argument the op returns (out=, in-place), a view of an
// argument's storage, or a new tensor.
class MetaRun {
 public:
  c10::IValue to_meta(const c10::IValue& v) {
    if (v.isTensor()) return to_meta(v.toTensor());
    if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList()) list.push_back(to_meta(t));
      return list;
    }
    if (v.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> list;
      for (const std::optional<at::Tensor>& t : v.toOptionalTensorList())
        list.push_back(t ? std::optional<at::Tensor>(to_meta(*t)) : std::nullopt);
      return list;
    }
    return v;
  }

  at::Tensor back(const at::Tensor& m) {
    if (!m.defined()) return m;
    if (auto it = hpu_of_impl_.find(m.unsafeGetTensorImpl()); it != hpu_of_impl_.end()) {
      at::Tensor hpu = it->second;
      if (hpu.sizes() != m.sizes() || hpu.strides() != m.strides() || hpu.storage_offset() != m.storage_offset()) {
        resize_to(hpu, m);
      }
      return hpu;
    }
    const c10::DispatchKeySet keys(c10::DispatchKey::HPU);
    if (auto it = hpu_of_storage_.find(m.storage().unsafeGetStorageImpl()); it != hpu_of_storage_.end()) {
      at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(it->second), keys, m.dtype());
      view.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes(), m.strides(), m.storage_offset());
      return view;
    }
    return at::detail::empty_strided_generic(m.sizes(), m.strides(), hpu_allocator(), keys, m.scalar_type());
  }

 private:
  at::Tensor to_meta(const at::Tensor& t) {
    if (!t.defined() || !t.is_hpu()) return t;
    c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
    auto [it, fresh] = meta_storage_.try_emplace(impl);
    if (fresh) {
      it->second = c10::Storage(c10::Storage::use_byte_size_t(), t.storage().nbytes(), c10::GetAllocator(c10::kMeta),
                                /*resizable=*/true);
      hpu_of_storage_[it->second.unsafeGetStorageImpl()] = t.storage();
    }
    at::Tensor m = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(it->second),
                                                            c10::DispatchKeySet(c10::DispatchKey::Meta), t.dtype());
    m.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    hpu_of_impl_[m.unsafeGetTensorImpl()] = t;
    return m;
  }

  // An out= tensor the op resized: the same on the device.
  static void resize_to(const at::Tensor& hpu, const at::Tensor& m) {
    const uint64_t needed = at::detail::computeStorageNbytes(m.sizes(), m.strides(), m.itemsize(),
                                                             static_cast<size_t>(m.storage_offset()));
    c10::Storage storage = hpu.storage();
    if (needed > storage.nbytes()) {
      // The pending graph holds the old buffer's address: it runs before the buffer goes.
      if (Lazy::get().pending_uses(storage.unsafeGetStorageImpl())) Lazy::get().flush("resize");
      c10::DataPtr fresh = hpu_allocator()->allocate(needed);
      storage.set_data_ptr_noswap(std::move(fresh));
      storage.set_nbytes(needed);
    }
    hpu.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes(), m.strides(), m.storage_offset());
  }

  std::map<c10::StorageImpl*, c10::Storage> meta_storage_;
  std::map<c10::StorageImpl*, c10::Storage> hpu_of_storage_;   // meta storage -> HPU storage
  std::map<c10::TensorImpl*, at::Tensor> hpu_of_impl_;         // meta tensor -> HPU argument
};

void lowered_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  Lazy& lazy = Lazy::get();
  std::unique_lock<std::recursive_mutex> lock(lazy.mutex());
  const auto it = lowering_table().find(op.schema().operator_name());
  TORCH_INTERNAL_ASSERT(it != lowering_table().end());
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());

  std::vector<at::Tensor> outputs;
  std::optional<std::vector<at::Tensor>> known;
  if (it->second.elementwise) {
    try {
      known = elementwise_outputs(op.schema(), args);
    } catch (const std::exception&) {
      known.reset();   // shapes that do not broadcast: the Meta run reports it as torch does
    }
  }
  if (it->second.outputs) {
    outputs = it->second.outputs(args);
  } else if (known) {
    outputs = std::move(*known);
  } else {
    try {
      MetaRun meta;
      torch::jit::Stack meta_stack;
      for (const c10::IValue& v : args) meta_stack.push_back(meta.to_meta(v));
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
      for (const c10::IValue& r : meta_stack) {
        if (!r.isTensor()) throw CannotLower("a non-tensor result");
        outputs.push_back(meta.back(r.toTensor()));
      }
    } catch (const std::exception&) {
      lock.unlock();
      run_on_cpu(op, stack);   // no Meta kernel for these arguments: the CPU decides (and reports errors)
      return;
    }
  }

  PendingGraph& graph = lazy.graph();
  const PendingGraph::Mark mark = graph.mark();
  try {
    Lowering lowering;
    const LoweredCall call{op, args, outputs};
    // Nothing to compute when every result is empty (an empty result next to others, such as
    // batch_norm's saved statistics in eval mode, is the lowering's to leave alone).
    bool work = op.schema().returns().empty();   // an in-place op returning nothing (hpu::fused_sgd_)
    for (const at::Tensor& out : outputs) work = work || (out.defined() && out.numel() != 0);
    if (work) it->second.lower(lowering, call);
    lowering.commit();
  } catch (const CannotLower&) {
    graph.rollback(mark);
    lock.unlock();
    if (it->second.cpu) {
      it->second.cpu(op, stack);
    } else {
      run_on_cpu(op, stack);
    }
    return;
  }
  torch::jit::drop(*stack, n);
  for (at::Tensor& out : outputs) stack->push_back(std::move(out));
  lazy.op_recorded(op.schema().name().c_str());
}

}  // namespace

namespace {
// "add.out" -> aten::add, overload out; "hpu::fused_sgd_" keeps its namespace.
c10::OperatorName operator_name(const char* op) {
  const std::string text = op;
  const size_t dot = text.find('.');
  const std::string base = text.substr(0, dot);
  return {base.find("::") == std::string::npos ? "aten::" + base : base, dot == std::string::npos ? "" : text.substr(dot + 1)};
}
}  // namespace

void register_lowering(torch::Library& library, const char* op, LoweringFn fn, OutputsFn outputs, CpuFn cpu) {
  lowering_table()[operator_name(op)] = LoweredOp{std::move(fn), std::move(outputs), std::move(cpu)};
  const char* ns = std::strstr(op, "::");
  library.impl(ns == nullptr ? op : ns + 2, torch::CppFunction::makeFromBoxedFunction<&lowered_kernel>());
}

bool record(const char* name, const std::function<void(Lowering&)>& fn) {
  Lazy& lazy = Lazy::get();
  std::unique_lock<std::recursive_mutex> lock(lazy.mutex());
  const PendingGraph::Mark mark = lazy.graph().mark();
  try {
    Lowering lowering;
    fn(lowering);
    lowering.commit();
  } catch (const CannotLower&) {
    lazy.graph().rollback(mark);
    return false;
  }
  lazy.op_recorded(name);
  return true;
}

void register_elementwise_lowering(torch::Library& library, const char* op, LoweringFn fn) {
  register_lowering(library, op, std::move(fn));
  lowering_table()[operator_name(op)].elementwise = true;
}

void flush_pending(const char* why) { Lazy::get().flush(why); }

}  // namespace hpusim::bridge
