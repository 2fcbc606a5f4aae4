// The HPU kernels torch needs before any op is lowered: tensor creation on device memory, the
// view ops (metadata only, no device work), resize, copies host<->device through the card's DMA,
// reading a scalar back, and the boxed CPU fallback every other op takes for now (counted per op).
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <string>

#include "bridge/core/card.h"
#include "bridge/core/fallback.h"
#include "bridge/core/hpu_device.h"

namespace hpusim::bridge {
namespace {

c10::DispatchKeySet hpu_keys() { return c10::DispatchKeySet(c10::DispatchKey::HPU); }

uint64_t storage_address(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().data()); }

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

at::Tensor reshape_alias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_storage(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> memory_format) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  const at::MemoryFormat format = memory_format.value_or(at::MemoryFormat::Contiguous);
  TORCH_CHECK(format != at::MemoryFormat::Preserve, "resize_: Preserve is not a memory format to resize to");
  impl->empty_tensor_restride(format);
  const uint64_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.itemsize(),
                                                           static_cast<size_t>(impl->storage_offset()));
  c10::Storage storage = impl->unsafe_storage();
  if (needed > storage.nbytes()) {
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
  const uint64_t nbytes = t.storage().nbytes();
  HostCopy copy;
  copy.bytes = at::empty({static_cast<int64_t>(nbytes)}, at::TensorOptions().dtype(at::kByte));
  Card::get().to_host(storage_address(t), copy.bytes.data_ptr(), nbytes);
  const auto elements = static_cast<int64_t>(nbytes / t.itemsize());
  at::Tensor whole = at::from_blob(copy.bytes.data_ptr(), {elements}, at::TensorOptions().dtype(t.scalar_type()));
  copy.view = whole.as_strided(t.sizes(), t.strides(), t.storage_offset());
  return copy;
}

// A copy into or out of device memory. The contiguous case is one DMA; any other layout goes
// through a host copy of the destination's storage.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy: undefined tensor");
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
  if (dst.numel() == 0) return dst;
  if (dst.is_contiguous()) {
    const at::Tensor packed = source.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
    Card::get().to_device(packed.data_ptr(), reinterpret_cast<uintptr_t>(dst.data_ptr()), dst.numel() * dst.itemsize());
    return dst;
  }
  HostCopy target = read_storage(dst);
  target.view.copy_(source);
  Card::get().to_device(target.bytes.data_ptr(), storage_address(dst), dst.storage().nbytes());
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  resize_storage(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return at::_local_scalar_dense(read_storage(self).view);
}

void cpu_fallback_counted(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  count_fallback(op.schema().operator_name());
  at::native::cpu_fallback(op, stack);
}

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("resize_", TORCH_FN(resize_storage));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

TORCH_LIBRARY_IMPL(_, HPU, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&hpusim::bridge::cpu_fallback_counted>());
}

namespace hpusim::bridge {
namespace {
std::mutex g_fallback_mutex;
std::map<std::string, uint64_t> g_fallbacks;
}  // namespace

void count_fallback(const c10::OperatorName& op) {
  std::string name = op.name;
  if (!op.overload_name.empty()) name += "." + op.overload_name;
  const std::lock_guard<std::mutex> lock(g_fallback_mutex);
  ++g_fallbacks[name];
}

std::map<std::string, uint64_t> fallback_counts() {
  const std::lock_guard<std::mutex> lock(g_fallback_mutex);
  return g_fallbacks;
}

}  // namespace hpusim::bridge
