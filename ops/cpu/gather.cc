// Gather, GatherElements and GatherND on bytes (any dtype), with int32 or int64
// indices. Indices are data, so they are bounds-checked on every run before anything
// is copied: an out-of-range index raises ember::Error naming the node.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/gather_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <cstring>

namespace ember {

namespace {

// Gather: out viewed as [outer, n_idx, inner] reads data [outer, axis_len, inner].
class GatherKernel final : public Kernel {
 public:
  GatherKernel(IndexReader idx, int64_t outer, int64_t axis_len, size_t inner_bytes)
      : idx_(std::move(idx)), outer_(outer), axis_len_(axis_len), inner_(inner_bytes) {}

  void run(const RunArgs& args) const override {
    const Tensor& indices = *args.inputs[1];
    const int64_t n = indices.numel();
    for (int64_t k = 0; k < n; ++k) idx_.checked(indices, k, axis_len_);
    const auto* in = static_cast<const uint8_t*>(args.inputs[0]->data());
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    parallel_for(outer_ * n, inner_ / 4 + 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = r / n, i = idx_.wrapped(indices, r % n, axis_len_);
        std::memcpy(out + r * inner_, in + (o * axis_len_ + i) * inner_, inner_);
      }
    });
  }

 private:
  IndexReader idx_;
  int64_t outer_, axis_len_;
  size_t inner_;
};

std::unique_ptr<Kernel> make_gather(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem || !IndexReader::supports(init.inputs[1].dtype)) {
    *why_not = "unsupported data or index dtype";
    return nullptr;
  }
  const Shape& data = init.inputs[0].shape;
  int64_t axis = init.node.attributes.get_int_or("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  int64_t outer = 1;
  size_t inner = elem;
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (d < axis) outer *= data[d];
    if (d > axis) inner *= data[d];
  }
  return std::make_unique<GatherKernel>(IndexReader(init, axis), outer, data[axis], inner);
}

// GatherElements: out[i] = data[i with i[axis] replaced by indices[i]].
class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(IndexReader idx, int64_t axis, Shape data, Shape out, size_t elem)
      : idx_(std::move(idx)), axis_(axis), data_strides_(contiguous_strides(data)),
        axis_len_(data[axis]), out_(std::move(out)), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const Tensor& indices = *args.inputs[1];
    const int64_t n = indices.numel();
    for (int64_t k = 0; k < n; ++k) idx_.checked(indices, k, axis_len_);
    const auto* in = static_cast<const uint8_t*>(args.inputs[0]->data());
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const int64_t rank = static_cast<int64_t>(out_.size());
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0;
      for (int64_t d = rank - 1, rest = k; d >= 0; --d) {
        const int64_t i = rest % out_[d];
        rest /= out_[d];
        off += (d == axis_ ? idx_.wrapped(indices, k, axis_len_) : i) * data_strides_[d];
      }
      std::memcpy(out + k * elem_, in + off * elem_, elem_);
    }
  }

 private:
  IndexReader idx_;
  int64_t axis_;
  std::vector<int64_t> data_strides_;
  int64_t axis_len_;
  Shape out_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_gather_elements(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem || !IndexReader::supports(init.inputs[1].dtype)) {
    *why_not = "unsupported data or index dtype";
    return nullptr;
  }
  const Shape& data = init.inputs[0].shape;
  int64_t axis = init.node.attributes.get_int_or("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  return std::make_unique<GatherElementsKernel>(IndexReader(init, axis), axis, data,
                                                init.outputs[0].shape, elem);
}

// GatherND: for each batch and each index tuple, copy the slice data[batch, tuple...].
class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(IndexReader idx, Shape data, int64_t batch_dims, int64_t k, int64_t batches,
                 int64_t tuples, size_t elem, size_t slice_bytes)
      : idx_(std::move(idx)), data_(std::move(data)), strides_(contiguous_strides(data_)),
        b_(batch_dims), k_(k), batches_(batches), tuples_(tuples), elem_(elem), slice_(slice_bytes) {}

  void run(const RunArgs& args) const override {
    const Tensor& indices = *args.inputs[1];
    for (int64_t t = 0; t < batches_ * tuples_; ++t)
      for (int64_t j = 0; j < k_; ++j) idx_.checked(indices, t * k_ + j, data_[b_ + j]);
    const auto* in = static_cast<const uint8_t*>(args.inputs[0]->data());
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const int64_t batch_stride = b_ ? strides_[b_ - 1] : 0;
    for (int64_t t = 0; t < batches_ * tuples_; ++t) {
      int64_t off = (t / tuples_) * batch_stride;
      for (int64_t j = 0; j < k_; ++j) off += idx_.wrapped(indices, t * k_ + j, data_[b_ + j]) * strides_[b_ + j];
      std::memcpy(out + t * slice_, in + off * elem_, slice_);
    }
  }

 private:
  IndexReader idx_;
  Shape data_;
  std::vector<int64_t> strides_;
  int64_t b_, k_, batches_, tuples_;
  size_t elem_, slice_;
};

std::unique_ptr<Kernel> make_gather_nd(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem || init.inputs[1].dtype != DType::Int64) {
    *why_not = "unsupported data or index dtype";
    return nullptr;
  }
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  const int64_t b = init.opset >= 12 ? init.node.attributes.get_int_or("batch_dims", 0) : 0;
  const int64_t k = indices.back();
  int64_t batches = 1, tuples = 1;
  size_t slice = elem;
  for (int64_t d = 0; d < b; ++d) batches *= indices[d];
  for (size_t d = b; d + 1 < indices.size(); ++d) tuples *= indices[d];
  for (size_t d = b + k; d < data.size(); ++d) slice *= data[d];
  return std::make_unique<GatherNDKernel>(IndexReader(init, -1), data, b, k, batches, tuples, elem, slice);
}

}  // namespace

EMBER_KERNEL("Gather", "", 1, kMaxOpset, DeviceKind::Cpu, make_gather);
EMBER_KERNEL("GatherElements", "", 11, kMaxOpset, DeviceKind::Cpu, make_gather_elements);
EMBER_KERNEL("GatherND", "", 11, kMaxOpset, DeviceKind::Cpu, make_gather_nd);

}  // namespace ember
