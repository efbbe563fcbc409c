#include <ember/error.h>
#include <ember/tensor.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace ember {

int dtype_bits(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0: return 8;
    case DType::UInt16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 16;
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32: return 32;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
    case DType::Complex64: return 64;
    case DType::Complex128: return 128;
    case DType::UInt4:
    case DType::Int4:
    case DType::Float4E2M1: return 4;
    case DType::UInt2:
    case DType::Int2: return 2;
    case DType::String:
    case DType::Undefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Undefined: return "undefined";
    case DType::Float32: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
    case DType::Float8E4M3FN: return "float8e4m3fn";
    case DType::Float8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::Float8E5M2: return "float8e5m2";
    case DType::Float8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::UInt4: return "uint4";
    case DType::Int4: return "int4";
    case DType::Float4E2M1: return "float4e2m1";
    case DType::Float8E8M0: return "float8e8m0";
    case DType::UInt2: return "uint2";
    case DType::Int2: return "int2";
  }
  return "unknown";
}

size_t dtype_bytes(DType dtype, int64_t count) {
  return static_cast<size_t>((count * dtype_bits(dtype) + 7) / 8);
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

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
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, std::free);
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

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_shape(shape_);
  storage_ = allocate_host(nbytes());
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
  if (nbytes()) std::memcpy(copy.data_, data_, nbytes());
  return copy;
}

}  // namespace ember
