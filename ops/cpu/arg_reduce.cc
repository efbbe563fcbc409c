// CPU kernels for ArgMax and ArgMin: the index (int64) of the extreme value along
// `axis`; the first one among equals, or the last with select_last_index (opset 12+).
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember {

namespace {

constexpr int64_t kChunk = 64;  // columns tracked together when the axis is not innermost

// `better(a, b)`: a replaces the current best b. Strict for the first index among
// equals, non-strict for the last.
template <bool kMax, bool kLast, class T>
bool better(T a, T b) {
  if constexpr (kMax) return kLast ? a >= b : a > b;
  else return kLast ? a <= b : a < b;
}

template <class T, bool kMax, bool kLast>
class ArgReduceKernel final : public Kernel {
 public:
  ArgReduceKernel(int64_t outer, int64_t n, int64_t inner) : outer_(outer), n_(n), inner_(inner) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    int64_t* y = args.outputs[0]->data_as<int64_t>();
    const int64_t chunks = (inner_ + kChunk - 1) / kChunk;
    parallel_for(outer_ * chunks, n_ * std::min(inner_, kChunk), [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / chunks, c0 = item % chunks * kChunk;
        const int64_t w = std::min(kChunk, inner_ - c0);
        scan(x + o * n_ * inner_ + c0, y + o * inner_ + c0, w);
      }
    });
  }

 private:
  // Finds the best of n_ rows at stride inner_ for w adjacent columns.
  void scan(const T* x, int64_t* y, int64_t w) const {
    T best[kChunk];
    for (int64_t j = 0; j < w; ++j) best[j] = x[j], y[j] = 0;
    for (int64_t a = 1; a < n_; ++a) {
      const T* row = x + a * inner_;
      for (int64_t j = 0; j < w; ++j)
        if (better<kMax, kLast>(row[j], best[j])) best[j] = row[j], y[j] = a;
    }
  }

  int64_t outer_, n_, inner_;
};

template <class T, bool kMax>
std::unique_ptr<Kernel> make_typed(int64_t outer, int64_t n, int64_t inner, bool last) {
  if (last) return std::make_unique<ArgReduceKernel<T, kMax, true>>(outer, n, inner);
  return std::make_unique<ArgReduceKernel<T, kMax, false>>(outer, n, inner);
}

template <bool kMax>
std::unique_ptr<Kernel> make_arg_reduce(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.node.attributes.get_int_or("axis", 0);
  if (axis < -rank || axis >= rank) init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x[d];
  const int64_t n = x[axis];
  if (n == 0 && outer * inner > 0) init.fail("cannot take the arg-extreme of an empty axis");
  const bool last = init.node.attributes.get_int_or("select_last_index", 0) != 0;
  switch (init.inputs[0].dtype) {
    case DType::Float32: return make_typed<float, kMax>(outer, n, inner, last);
    case DType::Float64: return make_typed<double, kMax>(outer, n, inner, last);
    case DType::Int32: return make_typed<int32_t, kMax>(outer, n, inner, last);
    case DType::Int64: return make_typed<int64_t, kMax>(outer, n, inner, last);
    case DType::Int8: return make_typed<int8_t, kMax>(outer, n, inner, last);
    case DType::UInt8: return make_typed<uint8_t, kMax>(outer, n, inner, last);
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
      return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("ArgMax", "", 1, kMaxOpset, DeviceKind::Cpu, make_arg_reduce<true>);
EMBER_KERNEL("ArgMin", "", 1, kMaxOpset, DeviceKind::Cpu, make_arg_reduce<false>);

}  // namespace ember
