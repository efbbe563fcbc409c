// ember::Tensor — a typed, shaped block of memory on a device, owning or borrowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

// Element types, numbered as ONNX's TensorProto.DataType so files map one to one.
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

// Size of one element in bits (4 or 2 for the packed types, 0 for String/Undefined).
int dtype_bits(DType dtype);
// "float32", "int64", ... as numpy names them.
const char* dtype_name(DType dtype);
// Bytes that `count` elements take, rounding packed types up to whole bytes.
size_t dtype_bytes(DType dtype, int64_t count);

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[1, 3, 224, 224]"

enum class DeviceKind : int8_t { Cpu = 0, Cuda = 1, Test = 2 };

struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string to_string() const;  // "cpu", "cuda:0"
};

// A tensor either owns its memory (shared between copies of the Tensor object) or
// borrows memory someone else keeps alive (Tensor::view). Copying a Tensor never
// copies the elements; use clone() for that.
class Tensor {
 public:
  Tensor() = default;
  // Owning host tensor, zero-filled.
  Tensor(DType dtype, Shape shape);
  // Borrowed memory; the caller keeps `data` alive as long as the view is used.
  static Tensor view(DType dtype, Shape shape, void* data, Device device = {});
  // Memory owned elsewhere whose lifetime `memory` manages (e.g. a device buffer whose
  // deleter frees it); copies of the tensor share it.
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<void> memory, Device device);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return dtype_bytes(dtype_, numel()); }
  Device device() const { return device_; }
  bool empty() const { return dtype_ == DType::Undefined; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T> T* data_as() { return static_cast<T*>(data_); }
  template <class T> const T* data_as() const { return static_cast<const T*>(data_); }

  // Deep copy into a new owning host tensor (the source must be on the host).
  Tensor clone() const;

  // For the executor: re-point a view at other memory / another shape without
  // reallocating the shape vector when the rank is unchanged.
  void reset_view(void* data) { data_ = data; }
  void set_shape(const Shape& shape) { shape_.assign(shape.begin(), shape.end()); }

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> storage_;
  Device device_;
};

}  // namespace ember
