// ember::Tensor — a typed, shaped block of memory on a device, owning or borrowed.
#pragma once

#include <ember/core/dtype.h>
#include <ember/core/shape.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ember {

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
//
// A DType::String tensor holds std::string objects (data_as<std::string>()), one per
// element, on the host: the owning constructor constructs them (empty) and its storage
// destroys them, clone() copies them one by one. Its nbytes() is 0, so code that moves
// raw bytes moves none of them: a string tensor never lives in an arena or on a
// device (the planner sends every node that reads or makes one to the eager tail, on
// the host), and a view of one must point at another string tensor's elements.
class Tensor {
 public:
  Tensor() = default;
  // Owning host tensor, zero-filled (empty strings for DType::String).
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
