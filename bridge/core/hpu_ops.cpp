// The HPU kernels torch needs before any op is lowered: tensor creation on device memory, the
// view ops (metadata only, no device work), resize, copies host<->device through the card's DMA,
// reading a scalar back, and the boxed CPU fallback every other op takes for now (counted per op).
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bridge/core/card.h"
#include "bridge/core/fallback.h"
#include "bridge/core/hpu_device.h"
#include "bridge/core/lazy.h"
#include "bridge/core/lowering.h"
#include "bridge/core/metric_events.h"

namespace hpusim::bridge {
namespace {

c10::DispatchKeySet hpu_keys() { return c10::DispatchKeySet(c10::DispatchKey::HPU); }

uint64_t storage_address(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().data()); }

// What the device holds of an element (int64 as int32, the real stack's default) and the host
// type that widens it back.
at::ScalarType device_dtype(at::ScalarType dtype) { return dtype == at::kLong ? at::kInt : dtype; }

// A host write into `t`'s storage waits for the pending graph when the graph uses the storage.
void launch_if_pending(const at::Tensor& t) {
  if (Lazy::get().pending_uses(t.storage().unsafeGetStorageImpl())) Lazy::get().flush("host write");
}

void check_device(std::optional<c10::Device> device) {
  TORCH_CHECK(!device || !device->has_index() || device->index() == 0, "hpu:", static_cast<int>(device->index()),
              " does not exist: the bridge drives card 0 of the box");
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                               std::optional<c10::Device> device, std::optional<bool>,
                               std::optional<at::MemoryFormat> memory_format) {
  check_device(device);
  return at::detail::empty_generic(size, hpu_allocator(), hpu_keys(), c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout>, std::optional<c10::Device> device, std::optional<bool>) {
  check_device(device);
  return at::detail::empty_strided_generic(size, stride, hpu_allocator(), hpu_keys(), c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, at::IntArrayRef size) { return at::native::view(self, size); }

// set_: metadata only. self takes `source`'s storage (or a storage's) with the given geometry;
// the pending graph knows storages by identity, so nothing it recorded changes.
at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t offset, at::IntArrayRef size,
                        at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::HPU, "set_: the storage is on ", source.device(),
              ", not on the HPU");
  if (stride.empty() && !size.empty()) stride = at::IntArrayRef();   // no strides: contiguous
  at::native::checkSetStorage(self, source, offset, size, stride);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(offset);
  if (stride.data()) {
    impl->set_sizes_and_strides(size, stride);
  } else {
    impl->set_sizes_contiguous(size);
  }
  const uint64_t needed =
      at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.itemsize(), static_cast<size_t>(offset));
  TORCH_CHECK(needed <= source.nbytes(), "set_: ", needed, " bytes of geometry over a storage of ", source.nbytes());
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.itemsize());
  return set_storage(self, source, 0, {elements}, {1});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, hpu_allocator(), true);
  return set_storage(self, empty, 0, {0}, {1});
}

at::Tensor reshape_alias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_storage(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> memory_format) {
  // As on every device: the same sizes keep the tensor as it is (a strided view stays strided).
  if (self.sizes() == size && !memory_format) return self;
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  const at::MemoryFormat format = memory_format.value_or(at::MemoryFormat::Contiguous);
  TORCH_CHECK(format != at::MemoryFormat::Preserve, "resize_: Preserve is not a memory format to resize to");
  impl->empty_tensor_restride(format);
  const uint64_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.itemsize(),
                                                           static_cast<size_t>(impl->storage_offset()));
  c10::Storage storage = impl->unsafe_storage();
  if (needed > storage.nbytes()) {
    launch_if_pending(self);   // the pending graph holds the old buffer's address
    c10::DataPtr fresh = hpu_allocator()->allocate(needed);
    if (storage.nbytes() > 0 && storage.data() != nullptr) {
      Card::get().on_device(reinterpret_cast<uintptr_t>(storage.data()), reinterpret_cast<uintptr_t>(fresh.get()),
                            storage.nbytes());
    }
    storage.set_data_ptr_noswap(std::move(fresh));
    storage.set_nbytes(needed);
  }
  return self;
}

// The whole storage of HPU tensor `t` read back to the host, and a CPU tensor over it with t's
// geometry (any strides and offset).
struct HostCopy {
  at::Tensor bytes;   // the storage's bytes
  at::Tensor view;    // t's elements in them
};

HostCopy read_storage(const at::Tensor& t) {
  flush_pending("copy to host");
  Lazy::get().check_value(t.storage().unsafeGetStorageImpl());
  const at::ScalarType held = device_dtype(t.scalar_type());
  const auto elements = static_cast<int64_t>(t.storage().nbytes() / t.itemsize());
  HostCopy copy;
  at::Tensor raw = at::empty({elements}, at::TensorOptions().dtype(held));
  Card::get().to_host(storage_address(t), raw.data_ptr(), static_cast<uint64_t>(elements) * raw.itemsize());
  copy.bytes = raw.to(t.scalar_type());
  copy.view = copy.bytes.as_strided(t.sizes(), t.strides(), t.storage_offset());
  return copy;
}

// Writes the host tensor `whole` (t's storage's elements, t's dtype) into t's storage.
void write_storage(const at::Tensor& t, const at::Tensor& whole) {
  launch_if_pending(t);
  const at::Tensor held = whole.to(device_dtype(t.scalar_type())).contiguous();
  Card::get().to_device(held.data_ptr(), storage_address(t), held.numel() * held.itemsize());
  Lazy::get().written_whole(t.storage().unsafeGetStorageImpl());
}

// A copy into or out of device memory. The contiguous case is one DMA; any other layout goes
// through a host copy of the destination's storage.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy: undefined tensor");
  if (dst.numel() == 0) return dst;
  if (self.is_hpu() && dst.is_hpu() && record_copy(self, dst)) return dst;
  HostCopy source_copy;
  at::Tensor source = self;
  if (self.is_hpu()) {
    source_copy = read_storage(self);
    source = source_copy.view;
  }
  if (!dst.is_hpu()) {
    dst.copy_(source);
    return dst;
  }
  if (dst.is_contiguous()) {
    launch_if_pending(dst);
    const at::Tensor packed =
        source.to(device_dtype(dst.scalar_type())).expand(dst.sizes()).contiguous();
    const uint64_t element = device_element_bytes(dst.scalar_type());
    Card::get().to_device(packed.data_ptr(), storage_address(dst) + dst.storage_offset() * element,
                          dst.numel() * element);
    if (dst.storage_offset() == 0 && dst.numel() == static_cast<int64_t>(dst.storage().nbytes() / dst.itemsize()))
      Lazy::get().written_whole(dst.storage().unsafeGetStorageImpl());
    return dst;
  }
  HostCopy target = read_storage(dst);
  target.view.copy_(source);
  write_storage(dst, target.bytes);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  resize_storage(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  flush_pending("item");
  Lazy::get().check_value(self.storage().unsafeGetStorageImpl());
  at::Tensor element = at::empty({}, at::TensorOptions().dtype(device_dtype(self.scalar_type())));
  const uint64_t bytes = element.itemsize();
  Card::get().to_host(storage_address(self) + self.storage_offset() * bytes, element.data_ptr(), bytes);
  return at::_local_scalar_dense(element.to(self.scalar_type()));
}

// "self=HPUBFloat16Type, other=CPUFloatType": the tensor arguments of a call (not its out=
// arguments), as the fallback log names them.
std::string describe_arguments(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& arguments = op.schema().arguments();
  const size_t first = stack.size() - arguments.size();
  std::string text;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = stack[first + i];
    if (arguments[i].is_out() || !value.isTensor() || !value.toTensor().defined()) continue;
    const at::Tensor& t = value.toTensor();
    if (!text.empty()) text += ", ";
    text += arguments[i].name() + "=" + (t.is_hpu() ? "HPU" : "CPU") + c10::toString(t.scalar_type()) + "Type";
  }
  return text;
}

}  // namespace

void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::OperatorName& name = op.schema().operator_name();
  const FallbackPolicy& policy = fallback_policy();
  const std::string short_name = name.name.substr(name.name.find("::") == std::string::npos ? 0 : name.name.find("::") + 2);
  TORCH_CHECK_NOT_IMPLEMENTED(policy.allows(name.name), short_name, " is not yet supported on HPU.");
  Lazy::get().refuse_in_capture("cpu fallback", name.name);
  count_fallback(name);
  Card::get().host_work(HPUSIM_HOST_CPU_FALLBACK_OP, 1, ("cpu fallback " + short_name).c_str());
  if (policy.log_calls) log_fallback("CPU fallback " + short_name + " : " + describe_arguments(op, *stack));
  const Card::FallbackScope copies_are_the_fallbacks;
  at::native::cpu_fallback(op, stack);
}

}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("resize_", TORCH_FN(resize_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

TORCH_LIBRARY_IMPL(_, HPU, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&hpusim::bridge::run_on_cpu>());
}

namespace hpusim::bridge {
namespace {
std::mutex g_fallback_mutex;
std::map<std::string, uint64_t> g_fallbacks;
}  // namespace

void count_fallback(const c10::OperatorName& op) {
  // A functional op reaches the card as its out= form (the functional one is composite there): it
  // is reported under the name the program called, as the real stack does.
  std::string name = op.name;
  if (!op.overload_name.empty() && op.overload_name != "out") name += "." + op.overload_name;
  metric_event("cpu_fallback", name, 1);
  const std::lock_guard<std::mutex> lock(g_fallback_mutex);
  ++g_fallbacks[name];
}

std::map<std::string, uint64_t> fallback_counts() {
  const std::lock_guard<std::mutex> lock(g_fallback_mutex);
  return g_fallbacks;
}

FallbackPolicy FallbackPolicy::from_environment() {
  FallbackPolicy policy;
  if (const char* level = std::getenv("LOG_LEVEL_PT_FALLBACK"); level != nullptr && *level != '\0') {
    const std::string text = level;
    TORCH_CHECK(text.size() == 1 && text[0] >= '0' && text[0] <= '6', "LOG_LEVEL_PT_FALLBACK='", text,
                "': a log level, 0 (trace) .. 6 (off); 0 or 1 logs every CPU fallback");
    policy.log_calls = text[0] <= '1';
  }
  if (const char* place = std::getenv("PT_HPU_PLACE_ON_CPU"); place != nullptr && *place != '\0') {
    policy.restricted = true;
    const std::string list = place;
    if (list != "none") {
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        std::string op = list.substr(start, comma - start);
        if (!op.empty()) policy.allowed.insert(op.find("::") == std::string::npos ? "aten::" + op : op);
        start = comma + 1;
      }
    }
  }
  return policy;
}

const FallbackPolicy& fallback_policy() {
  static const FallbackPolicy policy = FallbackPolicy::from_environment();
  return policy;
}

void log_fallback(const std::string& line) {
  const std::lock_guard<std::mutex> lock(g_fallback_mutex);
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::string fallback_summary() {
  std::vector<std::pair<std::string, uint64_t>> ops;
  {
    const std::lock_guard<std::mutex> lock(g_fallback_mutex);
    ops.assign(g_fallbacks.begin(), g_fallbacks.end());
  }
  if (ops.empty()) return "";
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text = "Frequency of op and op name that were executed on CPU:\n";
  for (const auto& [op, count] : ops) text += std::to_string(count) + "\t" + op + "\n";
  return text;
}

}  // namespace hpusim::bridge
