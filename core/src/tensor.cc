#include <ember/core/error.h>
#include <ember/core/tensor.h>

#include "core/src/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

namespace ember {

std::string Device::to_string() const {
  switch (kind) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Cuda: return "cuda:" + std::to_string(index);
    case DeviceKind::Test: return "test:" + std::to_string(index);
  }
  return "?";
}

namespace {

// Host allocations are 64-byte aligned so vector kernels and oneDNN get aligned rows.
std::shared_ptr<void> allocate_host(size_t bytes) {
  void* p = allocate_host_block(bytes);
  if (!p)
    throw Error("out of host memory: a tensor of " + std::to_string(bytes) + " bytes, with " +
                std::to_string(host_memory_available()) + " bytes available");
  return std::shared_ptr<void>(p, [bytes](void* q) { release_host_block(q, bytes); });
}

void check_shape(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("tensor shape " + shape_to_string(shape) + " has a negative dimension");
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error("tensor shape " + shape_to_string(shape) + " has too many elements");
    n *= d;
  }
}

// numel empty std::strings, destroyed with their storage.
std::shared_ptr<void> allocate_strings(int64_t numel) {
  const auto n = static_cast<size_t>(numel);
  if (n > std::numeric_limits<size_t>::max() / sizeof(std::string))
    throw Error("string tensor of " + std::to_string(numel) + " elements is too large");
  std::shared_ptr<void> block = allocate_host(n * sizeof(std::string));
  auto* strings = static_cast<std::string*>(block.get());
  std::uninitialized_default_construct_n(strings, n);
  return std::shared_ptr<void>(strings, [block, n](void* p) { std::destroy_n(static_cast<std::string*>(p), n); });
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_shape(shape_);
  storage_ = dtype == DType::String ? allocate_strings(numel()) : allocate_host(nbytes());
  data_ = storage_.get();
}

Tensor Tensor::view(DType dtype, Shape shape, void* data, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.device_ = device;
  return t;
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<void> memory, Device device) {
  Tensor t = view(dtype, std::move(shape), memory.get(), device);
  t.storage_ = std::move(memory);
  return t;
}

Tensor Tensor::clone() const {
  Tensor copy(dtype_, shape_);
  if (dtype_ == DType::String) std::copy_n(data_as<std::string>(), numel(), copy.data_as<std::string>());
  else if (nbytes()) std::memcpy(copy.data_, data_, nbytes());
  return copy;
}

}  // namespace ember
