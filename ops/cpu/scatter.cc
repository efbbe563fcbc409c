// ScatterND and ScatterElements (and the older Scatter): the output is a copy of data
// with updates written (or combined, opset 16+: add/mul, 18+: max/min) at the indexed
// places, in index order. Indices are bounds-checked before anything is written.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/gather_util.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstring>

namespace ember {

namespace {

// Combines `count` elements of src into dst (reduction "none" is a plain copy).
using CombineFn = void (*)(uint8_t* dst, const uint8_t* src, int64_t count, size_t elem);

void combine_none(uint8_t* dst, const uint8_t* src, int64_t count, size_t elem) {
  std::memcpy(dst, src, count * elem);
}

template <class T, class Op>
void combine(uint8_t* dst, const uint8_t* src, int64_t count, size_t) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (int64_t i = 0; i < count; ++i) d[i] = Op{}(d[i], s[i]);
}

struct Add { template <class T> T operator()(T a, T b) const { return a + b; } };
struct Mul { template <class T> T operator()(T a, T b) const { return a * b; } };
struct Max { template <class T> T operator()(T a, T b) const { return std::max(a, b); } };
struct Min { template <class T> T operator()(T a, T b) const { return std::min(a, b); } };

template <class Op>
CombineFn combine_for(DType dtype) {
  switch (dtype) {
    case DType::Float32: return combine<float, Op>;
    case DType::Float64: return combine<double, Op>;
    case DType::Int32: return combine<int32_t, Op>;
    case DType::Int64: return combine<int64_t, Op>;
    default: return nullptr;
  }
}

CombineFn pick_combine(const KernelInit& init, std::string* why_not) {
  const std::string r = init.opset >= 16 ? init.node.attributes.get_string_or("reduction", "none") : "none";
  CombineFn fn = nullptr;
  if (r == "none") fn = combine_none;
  else if (r == "add") fn = combine_for<Add>(init.inputs[0].dtype);
  else if (r == "mul") fn = combine_for<Mul>(init.inputs[0].dtype);
  else if (r == "max" && init.opset >= 18) fn = combine_for<Max>(init.inputs[0].dtype);
  else if (r == "min" && init.opset >= 18) fn = combine_for<Min>(init.inputs[0].dtype);
  else init.fail("unsupported reduction '" + r + "'");
  if (!fn) *why_not = std::string("reduction '") + r + "' on " + dtype_name(init.inputs[0].dtype);
  return fn;
}

void copy_data(const RunArgs& args) {
  if (args.outputs[0]->data() != args.inputs[0]->data() && args.inputs[0]->nbytes())
    std::memcpy(args.outputs[0]->data(), args.inputs[0]->data(), args.inputs[0]->nbytes());
}

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(IndexReader idx, CombineFn fn, Shape data, int64_t k, int64_t tuples, int64_t slice, size_t elem)
      : idx_(std::move(idx)), fn_(fn), data_(std::move(data)), strides_(contiguous_strides(data_)),
        k_(k), tuples_(tuples), slice_(slice), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const Tensor& indices = *args.inputs[1];
    for (int64_t t = 0; t < tuples_; ++t)
      for (int64_t j = 0; j < k_; ++j) idx_.checked(indices, t * k_ + j, data_[j]);
    copy_data(args);
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const auto* updates = static_cast<const uint8_t*>(args.inputs[2]->data());
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k_; ++j) off += idx_.wrapped(indices, t * k_ + j, data_[j]) * strides_[j];
      fn_(out + off * elem_, updates + t * slice_ * elem_, slice_, elem_);
    }
  }

 private:
  IndexReader idx_;
  CombineFn fn_;
  Shape data_;
  std::vector<int64_t> strides_;
  int64_t k_, tuples_, slice_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_scatter_nd(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem || init.inputs[1].dtype != DType::Int64) {
    *why_not = "unsupported data or index dtype";
    return nullptr;
  }
  const CombineFn fn = pick_combine(init, why_not);
  if (!fn) return nullptr;
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  const int64_t k = indices.back();
  const int64_t tuples = shape_numel(indices) / k;
  int64_t slice = 1;
  for (size_t d = k; d < data.size(); ++d) slice *= data[d];
  return std::make_unique<ScatterNDKernel>(IndexReader(init, -1), fn, data, k, tuples, slice, elem);
}

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(IndexReader idx, CombineFn fn, int64_t axis, const Shape& data, Shape indices, size_t elem)
      : idx_(std::move(idx)), fn_(fn), axis_(axis), strides_(contiguous_strides(data)),
        axis_len_(data[axis]), indices_(std::move(indices)), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const Tensor& indices = *args.inputs[1];
    const int64_t n = indices.numel();
    for (int64_t k = 0; k < n; ++k) idx_.checked(indices, k, axis_len_);
    copy_data(args);
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const auto* updates = static_cast<const uint8_t*>(args.inputs[2]->data());
    const int64_t rank = static_cast<int64_t>(indices_.size());
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (int64_t d = rank - 1, rest = k; d >= 0; --d) {
        const int64_t i = rest % indices_[d];
        rest /= indices_[d];
        off += (d == axis_ ? idx_.wrapped(indices, k, axis_len_) : i) * strides_[d];
      }
      fn_(out + off * elem_, updates + k * elem_, 1, elem_);
    }
  }

 private:
  IndexReader idx_;
  CombineFn fn_;
  int64_t axis_;
  std::vector<int64_t> strides_;
  int64_t axis_len_;
  Shape indices_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_scatter_elements(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem || !IndexReader::supports(init.inputs[1].dtype)) {
    *why_not = "unsupported data or index dtype";
    return nullptr;
  }
  const CombineFn fn = pick_combine(init, why_not);
  if (!fn) return nullptr;
  const Shape& data = init.inputs[0].shape;
  int64_t axis = init.node.attributes.get_int_or("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  return std::make_unique<ScatterElementsKernel>(IndexReader(init, axis), fn, axis, data,
                                                 init.inputs[1].shape, elem);
}

}  // namespace

EMBER_KERNEL("ScatterND", "", 11, kMaxOpset, DeviceKind::Cpu, make_scatter_nd);
EMBER_KERNEL("ScatterElements", "", 11, kMaxOpset, DeviceKind::Cpu, make_scatter_elements);
EMBER_KERNEL("Scatter", "", 9, 10, DeviceKind::Cpu, make_scatter_elements);

}  // namespace ember
