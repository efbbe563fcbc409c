// CPU kernels for InstanceNormalization, GroupNormalization, MeanVarianceNormalization
// and LpNormalization.
#include "ops/cpu/parallel.h"
#include "graph/schemas/norm.h"
#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ember {

namespace {

constexpr int kLanes = 16;  // independent partial sums so the loops vectorize
constexpr int kMaxDims = 16;

std::string unsupported(DType dtype) { return std::string(dtype_name(dtype)) + " is not supported"; }

// Mean and 1/sqrt(variance + epsilon) of a contiguous run, in two passes (the
// deviation pass avoids the cancellation of E[x^2] - E[x]^2).
template <class T>
void run_stats(const T* x, int64_t n, T epsilon, T* mean, T* inv_std) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  T s = 0;
  for (int j = 0; j < kLanes; ++j) s += lanes[j], lanes[j] = 0;
  for (; i < n; ++i) s += x[i];
  const T m = s / T(n);
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += (x[i + j] - m) * (x[i + j] - m);
  T v = 0;
  for (int j = 0; j < kLanes; ++j) v += lanes[j];
  for (; i < n; ++i) v += (x[i] - m) * (x[i] - m);
  *mean = m;
  *inv_std = T(1) / std::sqrt(v / T(n) + epsilon);
}

// X viewed as [N, groups, C / groups, spatial]: statistics per (n, group), then
// y = (x - mean) * inv_std * scale + bias with scale/bias per channel or per group.
// InstanceNormalization is the case groups == C.
template <class T>
class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(int64_t batch, int64_t channels, int64_t groups, int64_t spatial, float epsilon,
                  bool per_channel)
      : batch_(batch), channels_(channels), groups_(groups), spatial_(spatial),
        epsilon_(epsilon), per_channel_(per_channel) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* scale = args.inputs[1]->data_as<T>();
    const T* bias = args.inputs[2]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const int64_t group_channels = channels_ / groups_;
    const int64_t run = group_channels * spatial_;
    parallel_for(batch_ * groups_, run * 8, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t g = item % groups_;
        const T* in = x + item * run;
        T* out = y + item * run;
        T mean, inv;
        run_stats(in, run, T(epsilon_), &mean, &inv);
        for (int64_t c = 0; c < group_channels; ++c) {
          const int64_t p = per_channel_ ? g * group_channels + c : g;
          const T a = inv * scale[p], b = bias[p] - mean * inv * scale[p];
          const T* xi = in + c * spatial_;
          T* yo = out + c * spatial_;
          for (int64_t s = 0; s < spatial_; ++s) yo[s] = xi[s] * a + b;
        }
      }
    });
  }

 private:
  int64_t batch_, channels_, groups_, spatial_;
  float epsilon_;
  bool per_channel_;
};

std::unique_ptr<Kernel> make_group_norm_kernel(const KernelInit& init, const GroupNormParams& p,
                                               std::string* why_not) {
  for (size_t i = 1; i < 3; ++i)
    if (init.inputs[i].dtype != init.inputs[0].dtype) init.fail("scale and bias must have the dtype of X");
  switch (init.inputs[0].dtype) {
    case DType::Float32:
      return std::make_unique<GroupNormKernel<float>>(p.batch, p.channels, p.groups, p.spatial, p.epsilon,
                                                      p.per_channel);
    case DType::Float64:
      return std::make_unique<GroupNormKernel<double>>(p.batch, p.channels, p.groups, p.spatial, p.epsilon,
                                                       p.per_channel);
    default: *why_not = unsupported(init.inputs[0].dtype); return nullptr;
  }
}

// InstanceNormalization and GroupNormalization alike: the schema's view tells them apart.
std::unique_ptr<Kernel> make_group_norm(KernelInit& init, std::string* why_not) {
  GroupNormParams p;
  if (!group_norm_params(infer_context(init), &p, why_not)) return nullptr;
  return make_group_norm_kernel(init, p, why_not);
}

struct Dims {
  int n = 0;
  std::array<int64_t, kMaxDims> size{}, stride{};
};

// Calls fn(offset) for every coordinate of `dims`.
template <class Fn>
void for_each_offset(const Dims& dims, const Fn& fn) {
  std::array<int64_t, kMaxDims> index{};
  int64_t offset = 0;
  while (true) {
    fn(offset);
    int d = dims.n - 1;
    for (; d >= 0; --d) {
      offset += dims.stride[d];
      if (++index[d] < dims.size[d]) break;
      offset -= dims.stride[d] * dims.size[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// MeanVarianceNormalization, as ONNX defines it by a function:
// (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9), moments over `axes`.
template <class T>
class MvnKernel final : public Kernel {
 public:
  MvnKernel(Dims kept, Dims reduced, int64_t groups, int64_t count)
      : kept_(kept), reduced_(reduced), groups_(groups), count_(count) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    if (count_ == 0) return;
    parallel_for(groups_, count_ * 4, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t base = offset_of(g);
        double s = 0, ss = 0;
        for_each_offset(reduced_, [&](int64_t off) {
          const double v = x[base + off];
          s += v;
          ss += v * v;
        });
        const double mean = s / double(count_);
        const double std_dev = std::sqrt(std::max(ss / double(count_) - mean * mean, 0.0));
        const T scale = T(1 / (std_dev + 1e-9)), m = T(mean);
        for_each_offset(reduced_, [&](int64_t off) { y[base + off] = (x[base + off] - m) * scale; });
      }
    });
  }

 private:
  int64_t offset_of(int64_t g) const {
    int64_t off = 0;
    for (int d = kept_.n - 1; d >= 0; --d) {
      off += g % kept_.size[d] * kept_.stride[d];
      g /= kept_.size[d];
    }
    return off;
  }

  Dims kept_, reduced_;
  int64_t groups_, count_;
};

std::unique_ptr<Kernel> make_mvn(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank > kMaxDims) {
    *why_not = "rank above 16";
    return nullptr;
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : init.node.attributes.get_ints_or("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank) init.fail("axis " + std::to_string(a) + " is out of range");
    reduced[a < 0 ? a + rank : a] = true;
  }
  Dims kept, red;
  int64_t stride = 1, groups = 1, count = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Dims& dims = reduced[d] ? red : kept;
    (reduced[d] ? count : groups) *= x[d];
    dims.size[dims.n] = x[d];
    dims.stride[dims.n] = stride;
    ++dims.n;
    stride *= x[d];
  }
  // Collected inner-to-outer; the loops want outer-to-inner.
  std::reverse(kept.size.begin(), kept.size.begin() + kept.n);
  std::reverse(kept.stride.begin(), kept.stride.begin() + kept.n);
  std::reverse(red.size.begin(), red.size.begin() + red.n);
  std::reverse(red.stride.begin(), red.stride.begin() + red.n);
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<MvnKernel<float>>(kept, red, groups, count);
    case DType::Float64: return std::make_unique<MvnKernel<double>>(kept, red, groups, count);
    default: *why_not = unsupported(init.inputs[0].dtype); return nullptr;
  }
}

// LpNormalization: x / ||x||_p along `axis` (p = 1 or 2); a zero norm gives 0.
template <class T>
class LpNormKernel final : public Kernel {
 public:
  LpNormKernel(int64_t outer, int64_t n, int64_t inner, int64_t p)
      : outer_(outer), n_(n), inner_(inner), p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    parallel_for(outer_ * inner_, n_ * 4, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t offset = item / inner_ * n_ * inner_ + item % inner_;
        const T* in = x + offset;
        T* out = y + offset;
        T norm = 0;
        for (int64_t a = 0; a < n_; ++a) {
          const T v = in[a * inner_];
          norm += p_ == 1 ? std::abs(v) : v * v;
        }
        if (p_ == 2) norm = std::sqrt(norm);
        const T scale = norm == T(0) ? T(0) : T(1) / norm;
        for (int64_t a = 0; a < n_; ++a) out[a * inner_] = in[a * inner_] * scale;
      }
    });
  }

 private:
  int64_t outer_, n_, inner_, p_;
};

std::unique_ptr<Kernel> make_lp_norm(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.node.attributes.get_int_or("axis", -1);
  if (axis < -rank || axis >= rank) init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  const int64_t p = init.node.attributes.get_int_or("p", 2);
  if (p != 1 && p != 2) init.fail("p must be 1 or 2, got " + std::to_string(p));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x[d];
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<LpNormKernel<float>>(outer, x[axis], inner, p);
    case DType::Float64: return std::make_unique<LpNormKernel<double>>(outer, x[axis], inner, p);
    default: *why_not = unsupported(init.inputs[0].dtype); return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("InstanceNormalization", "", 1, kMaxOpset, DeviceKind::Cpu, make_group_norm);
EMBER_KERNEL("GroupNormalization", "", 18, kMaxOpset, DeviceKind::Cpu, make_group_norm);
EMBER_KERNEL("MeanVarianceNormalization", "", 9, kMaxOpset, DeviceKind::Cpu, make_mvn);
EMBER_KERNEL("LpNormalization", "", 1, kMaxOpset, DeviceKind::Cpu, make_lp_norm);

}  // namespace ember
