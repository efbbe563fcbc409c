// MaxPool, AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool, and the
// channels-last and blocked com.ember Nhwc* and Blocked* forms of all but LpPool.
// oneDNN runs the common cases; a direct loop covers what it lacks in NCHW (MaxPool's
// Indices, LpPool, and count_include_pad averages whose ceil_mode windows run past the
// explicit padding, which ONNX does not count), and a blocked or channels-last 2-D MaxPool
// is ember's own loop (max_pool_channels_inner.h: faster than oneDNN's). A channels-last
// or blocked pool oneDNN cannot run is declined: the planner runs its decomposition
// (conversions around the NCHW pool).
#include "graph/schemas/window.h"
#include "ops/cpu/max_pool_channels_inner.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember {

namespace {

enum class PoolKind { Max, Average, Lp };

// Window geometry padded to 3 spatial dims (leading dims of size 1) for the loop.
struct Window3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

Window3 to_window3(const WindowGeometry& g, const Shape& x) {
  const size_t sd = g.kernel.size(), lead = 3 - sd;
  Window3 w;
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i >= lead;
    const size_t j = real ? i - lead : 0;
    w.in[i] = real ? x[2 + j] : 1;
    w.out[i] = real ? g.out[j] : 1;
    w.k[i] = real ? g.kernel[j] : 1;
    w.s[i] = real ? g.strides[j] : 1;
    w.d[i] = real ? g.dilations[j] : 1;
    w.pb[i] = real ? g.pads_begin[j] : 0;
    w.pe[i] = real ? g.pads_end[j] : 0;
  }
  return w;
}

// The direct loop: one (n, c) plane at a time. T is float, or an 8-bit integer for
// MaxPool (which oneDNN does not run on plain integers).
template <class T>
class LoopPoolKernel final : public Kernel {
 public:
  LoopPoolKernel(PoolKind kind, const WindowGeometry& g, const Shape& x, bool count_pad, float p, bool col_major)
      : kind_(kind), w_(to_window3(g, x)), planes_(x[0] * x[1]), count_pad_(count_pad), p_(p), col_major_(col_major) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    int64_t* idx = args.outputs.size() > 1 && args.outputs[1] ? args.outputs[1]->data_as<int64_t>() : nullptr;
    const int64_t in_plane = w_.in[0] * w_.in[1] * w_.in[2], out_plane = w_.out[0] * w_.out[1] * w_.out[2];
    parallel_for(planes_, out_plane * w_.k[0] * w_.k[1] * w_.k[2], [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        pool_plane(x + pl * in_plane, y + pl * out_plane, idx ? idx + pl * out_plane : nullptr, pl * in_plane);
    });
  }

 private:
  void pool_plane(const T* x, T* y, int64_t* idx, int64_t base) const {
    const Window3& w = w_;
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          const int64_t o[3] = {o0, o1, o2};
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          float sum = 0;
          int64_t best_at = -1, counted = 0;
          for (int64_t k0 = 0; k0 < w.k[0]; ++k0)
            for (int64_t k1 = 0; k1 < w.k[1]; ++k1)
              for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                const int64_t kk[3] = {k0, k1, k2};
                int64_t i[3];
                bool inside = true, in_padding = true;
                for (int a = 0; a < 3; ++a) {
                  i[a] = o[a] * w.s[a] - w.pb[a] + kk[a] * w.d[a];
                  inside &= i[a] >= 0 && i[a] < w.in[a];
                  in_padding &= i[a] < w.in[a] + w.pe[a];  // the explicit padding, not ceil's extra
                }
                counted += inside || (count_pad_ && in_padding);
                if (!inside) continue;
                const T v = x[(i[0] * w.in[1] + i[1]) * w.in[2] + i[2]];
                if (kind_ == PoolKind::Max && (v > best || (best_at < 0 && v == best))) {
                  best = v;
                  best_at = col_major_ ? (i[2] * w.in[1] + i[1]) * w.in[0] + i[0] : (i[0] * w.in[1] + i[1]) * w.in[2] + i[2];
                }
                sum += kind_ == PoolKind::Lp ? std::pow(std::fabs(float(v)), p_) : float(v);
              }
          const int64_t at = (o0 * w.out[1] + o1) * w.out[2] + o2;
          if (kind_ == PoolKind::Max) y[at] = best;
          else if (kind_ == PoolKind::Average) y[at] = T(counted ? sum / counted : 0.f);
          else y[at] = T(std::pow(sum, 1.f / p_));
          if (idx) idx[at] = base + best_at;
        }
  }

  PoolKind kind_;
  Window3 w_;
  int64_t planes_;
  bool count_pad_;
  float p_;
  bool col_major_;
};

class DnnlPoolKernel final : public Kernel {
 public:
  DnnlPoolKernel(KernelInit& init, dnnl::algorithm alg, const WindowGeometry& g, const Shape& pads_end, Layout layout) {
    src_md_ = f32_desc_in(init.inputs[0].shape, layout);
    dst_md_ = f32_desc_in(init.outputs[0].shape, layout);
    dnnl::memory::dims dilations;
    for (int64_t d : g.dilations) dilations.push_back(d - 1);
    const double ops = static_cast<double>(shape_numel(init.outputs[0].shape)) * static_cast<double>(shape_numel(g.kernel));
    DnnlThreadScope threads(dnnl_threads_for(init.num_threads, ops));
    const dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src_md_, dst_md_,
                                              to_dnnl_dims(g.strides), to_dnnl_dims(g.kernel), dilations,
                                              to_dnnl_dims(g.pads_begin), to_dnnl_dims(pads_end));
    const dnnl::pooling_v2_forward::primitive_desc pd(desc, make_dnnl_attr(), dnnl_engine());
    prim_ = dnnl::pooling_v2_forward(pd);
    scratch_md_ = pd.scratchpad_desc();
    init.workspace_bytes = scratchpad_bytes(pd);
  }

  void run(const RunArgs& args) const override {
    dnnl_execute(prim_, handles_, {{DNNL_ARG_SRC, &src_md_, args.inputs[0]->data()},
                         {DNNL_ARG_DST, &dst_md_, args.outputs[0]->data()},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, args.workspace}});
  }

 private:
  dnnl::pooling_v2_forward prim_;
  mutable DnnlHandles handles_;
  dnnl::memory::desc src_md_, dst_md_, scratch_md_;
};

// The end padding oneDNN needs for ONNX's output size (larger under ceil_mode), and
// whether it exceeds the explicit padding somewhere.
Shape dnnl_pads_end(const WindowGeometry& g, const Shape& spatial, bool* extended) {
  Shape pe = g.pads_end;
  *extended = false;
  for (size_t i = 0; i < pe.size(); ++i) {
    const int64_t dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t needed = (g.out[i] - 1) * g.strides[i] + dk - spatial[i] - g.pads_begin[i];
    if (needed > pe[i]) {
      pe[i] = needed;
      *extended = true;
    }
  }
  return pe;
}

std::unique_ptr<Kernel> make_pool(KernelInit& init, std::string* why_not, PoolKind kind,
                                  Layout layout = Layout::ChannelsFirst) {
  const DType dtype = init.inputs[0].dtype;
  const bool int8 = kind == PoolKind::Max && (dtype == DType::Int8 || dtype == DType::UInt8);
  if (!int8 && !(*why_not = float32_only(init, 0)).empty()) return nullptr;
  const Shape& x = init.inputs[0].shape;
  if (spatial_dims(x, layout).size() > 3) {
    *why_not = "pooling supports at most 3 spatial dims";
    return nullptr;
  }
  const auto& at = init.node.attributes;
  const WindowGeometry g = forward_window(init.node, spatial_dims(x, layout), at.get_ints("kernel_shape"),
                                          at.get_int_or("ceil_mode", 0) != 0);
  const bool count_pad = at.get_int_or("count_include_pad", 0) != 0;
  const bool col_major = at.get_int_or("storage_order", 0) != 0;
  float p = 2.f;
  if (const Attribute* pa = at.find("p")) p = pa->kind == Attribute::Kind::Float ? pa->f : static_cast<float>(pa->i);
  if (kind == PoolKind::Lp && !(p > 0)) init.fail("p must be positive");
  const bool want_indices = init.node.outputs.size() > 1 && !init.node.outputs[1].empty();

  bool extended = false;
  const Shape pads_end = dnnl_pads_end(g, spatial_dims(x, layout), &extended);
  const bool loop = kind == PoolKind::Lp || want_indices || (kind == PoolKind::Average && count_pad && extended);
  if (layout != Layout::ChannelsFirst && (loop || int8)) {
    *why_not = "oneDNN cannot run this channels-last or blocked pool (indices, int8, or count_include_pad past the padding)";
    return nullptr;
  }
  if (dtype == DType::Int8) return std::make_unique<LoopPoolKernel<int8_t>>(kind, g, x, count_pad, p, col_major);
  if (dtype == DType::UInt8) return std::make_unique<LoopPoolKernel<uint8_t>>(kind, g, x, count_pad, p, col_major);
  if (loop) return std::make_unique<LoopPoolKernel<float>>(kind, g, x, count_pad, p, col_major);
  if (kind == PoolKind::Max && layout != Layout::ChannelsFirst)
    if (auto own = make_max_pool_channels_inner(g, x, layout == Layout::ChannelsLast)) return own;
  const dnnl::algorithm alg = kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                              : count_pad           ? dnnl::algorithm::pooling_avg_include_padding
                                                    : dnnl::algorithm::pooling_avg_exclude_padding;
  return std::make_unique<DnnlPoolKernel>(init, alg, g, pads_end, layout);
}

std::unique_ptr<Kernel> make_max_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Max);
}
std::unique_ptr<Kernel> make_average_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Average);
}
std::unique_ptr<Kernel> make_lp_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Lp);
}
std::unique_ptr<Kernel> make_nhwc_max_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Max, Layout::ChannelsLast);
}
std::unique_ptr<Kernel> make_nhwc_average_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Average, Layout::ChannelsLast);
}
std::unique_ptr<Kernel> make_blocked_max_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Max, Layout::ChannelsBlocked);
}
std::unique_ptr<Kernel> make_blocked_average_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, PoolKind::Average, Layout::ChannelsBlocked);
}

// Global pooling: one reduction per (n, c) plane, memory-bound, so a plain loop.
template <bool Max>
void global_pool(const RunArgs& args) {
  const Tensor& x = *args.inputs[0];
  const int64_t planes = x.shape()[0] * x.shape()[1], size = x.numel() / std::max<int64_t>(planes, 1);
  const float* xp = x.data_as<float>();
  float* y = args.outputs[0]->data_as<float>();
  parallel_for(planes, size, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* v = xp + pl * size;
      float acc = Max ? -std::numeric_limits<float>::infinity() : 0.f;
      for (int64_t i = 0; i < size; ++i) acc = Max ? std::max(acc, v[i]) : acc + v[i];
      y[pl] = Max ? acc : acc / static_cast<float>(size);
    }
  });
}

// Channels last, [N, positions, C]: items of (n, part of the positions, slice of the
// channels) each reduce their rows of contiguous channels (vectorizable) into a partial
// of their own in the workspace, and a last pass combines each (n, channel)'s partials.
// With the positions split too, both threads work on a batch-1 tensor of few channels:
// split by channels alone, EfficientNet-B0's first squeeze-excite (112 x 112 x 32) ran
// on one thread, 0.057 ms against ONNX Runtime's 0.024, and 144 channels in slices of
// 64, 64 and 16 left one thread a third of the other's work.
template <bool Max>
class NhwcGlobalPool final : public Kernel {
 public:
  explicit NhwcGlobalPool(KernelInit& init) {
    const Shape& s = init.outputs[0].shape;  // [N, 1, ..., 1, C]
    n_ = s[0];
    c_ = s.back();
    positions_ = shape_numel(init.inputs[0].shape) / std::max<int64_t>(n_ * c_, 1);
    // Slices of equal width, at most kMaxSlice; counted again from the width, so that
    // no slice is empty (past 4,096 channels the rounded-up width could leave one).
    const int64_t slices = std::max<int64_t>(1, (c_ + kMaxSlice - 1) / kMaxSlice);
    slice_ = (c_ + slices - 1) / slices;
    slices_ = (c_ + slice_ - 1) / std::max<int64_t>(slice_, 1);
    // Parts enough for two items a thread, none shorter than kMinPart positions.
    const int64_t wanted = (2 * init.num_threads + n_ * slices_ - 1) / std::max<int64_t>(n_ * slices_, 1);
    parts_ = std::clamp<int64_t>(std::min(wanted, positions_ / kMinPart), 1, std::max<int64_t>(positions_, 1));
    if (parts_ > 1) init.workspace_bytes = static_cast<size_t>(n_ * parts_ * c_) * sizeof(float);
  }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    float* y = args.outputs[0]->data_as<float>();
    if (n_ * c_ == 0) return;
    float* partials = parts_ > 1 ? static_cast<float*>(args.workspace) : y;
    const int64_t items = n_ * parts_ * slices_;
    parallel_for(items, positions_ / parts_ * slice_, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) reduce_item(x, partials, item);
    });
    if (parts_ > 1) combine(partials, y);
    else if (!Max) scale(y);
  }

 private:
  static constexpr int64_t kMaxSlice = 64, kMinPart = 64;
  static constexpr float kStart = Max ? -std::numeric_limits<float>::infinity() : 0.f;

  // Item = (batch * parts + part) * slices + slice: its positions' channels into
  // partials[batch * parts + part][slice's channels].
  void reduce_item(const float* x, float* partials, int64_t item) const {
    const int64_t slice = item % slices_, row = item / slices_, part = row % parts_, batch = row / parts_;
    const int64_t c0 = slice * slice_, width = std::min(slice_, c_ - c0);
    const int64_t p0 = positions_ * part / parts_, p1 = positions_ * (part + 1) / parts_;
    float acc[kMaxSlice];
    std::fill(acc, acc + width, kStart);
    const float* v = x + (batch * positions_ + p0) * c_ + c0;
    for (int64_t i = p0; i < p1; ++i, v += c_)
      for (int64_t k = 0; k < width; ++k) acc[k] = Max ? std::max(acc[k], v[k]) : acc[k] + v[k];
    std::copy(acc, acc + width, partials + row * c_ + c0);
  }

  void combine(const float* partials, float* y) const {
    for (int64_t batch = 0; batch < n_; ++batch) {
      float* out = y + batch * c_;
      std::fill(out, out + c_, kStart);
      for (int64_t part = 0; part < parts_; ++part) {
        const float* from = partials + (batch * parts_ + part) * c_;
        for (int64_t k = 0; k < c_; ++k) out[k] = Max ? std::max(out[k], from[k]) : out[k] + from[k];
      }
    }
    if (!Max) scale(y);
  }

  void scale(float* y) const {
    const float inverse = 1.f / static_cast<float>(positions_);
    for (int64_t i = 0; i < n_ * c_; ++i) y[i] *= inverse;
  }

  int64_t n_ = 0, c_ = 0, positions_ = 0, slice_ = 1, slices_ = 1, parts_ = 1;
};

template <bool Max>
std::unique_ptr<Kernel> make_global_pool(KernelInit& init, std::string* why_not) {
  if (!(*why_not = float32_only(init, 0)).empty()) return nullptr;
  return std::make_unique<FunctionKernel>(&global_pool<Max>);
}

template <bool Max>
std::unique_ptr<Kernel> make_nhwc_global_pool(KernelInit& init, std::string* why_not) {
  if (!(*why_not = float32_only(init, 0)).empty()) return nullptr;
  return std::make_unique<NhwcGlobalPool<Max>>(init);
}

// Blocked, N x C/b x D.. x b: each block of b channels sums its planes a row of b
// (one vector) at a time.
template <bool Max, int B>
void blocked_global_pool(const RunArgs& args) {
  const Tensor& x = *args.inputs[0];
  const int64_t groups = x.shape()[0] * x.shape()[1], size = x.numel() / std::max<int64_t>(groups * B, 1);
  const float* xp = x.data_as<float>();
  float* y = args.outputs[0]->data_as<float>();
  parallel_for(groups, size * B, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      float acc[B];
      std::fill(acc, acc + B, Max ? -std::numeric_limits<float>::infinity() : 0.f);
      const float* v = xp + g * size * B;
      for (int64_t i = 0; i < size; ++i, v += B)
        for (int k = 0; k < B; ++k) acc[k] = Max ? std::max(acc[k], v[k]) : acc[k] + v[k];
      for (int k = 0; k < B; ++k) y[g * B + k] = Max ? acc[k] : acc[k] / static_cast<float>(size);
    }
  });
}

template <bool Max>
std::unique_ptr<Kernel> make_blocked_global_pool(KernelInit& init, std::string* why_not) {
  if (!(*why_not = float32_only(init, 0)).empty()) return nullptr;
  return std::make_unique<FunctionKernel>(init.inputs[0].shape.back() == 8 ? &blocked_global_pool<Max, 8>
                                                                           : &blocked_global_pool<Max, 16>);
}

}  // namespace

EMBER_KERNEL("MaxPool", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_max_pool>);
EMBER_KERNEL("AveragePool", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_average_pool>);
EMBER_KERNEL("LpPool", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_lp_pool>);
EMBER_KERNEL("GlobalAveragePool", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_global_pool<false>>);
EMBER_KERNEL("GlobalMaxPool", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_global_pool<true>>);
EMBER_KERNEL("NhwcMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_nhwc_max_pool>);
EMBER_KERNEL("NhwcAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_nhwc_average_pool>);
EMBER_KERNEL("NhwcGlobalAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu,
             dense_factory<make_nhwc_global_pool<false>>);
EMBER_KERNEL("NhwcGlobalMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_nhwc_global_pool<true>>);
EMBER_KERNEL("BlockedMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_blocked_max_pool>);
EMBER_KERNEL("BlockedAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_blocked_average_pool>);
EMBER_KERNEL("BlockedGlobalAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu,
             dense_factory<make_blocked_global_pool<false>>);
EMBER_KERNEL("BlockedGlobalMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cpu,
             dense_factory<make_blocked_global_pool<true>>);

}  // namespace ember
