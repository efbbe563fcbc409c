// BatchNormalization in inference mode: y = x * a[c] + b[c] with a = scale / sqrt(var +
// eps) and b = bias - mean * a. The per-channel a, b are folded at plan time when the
// statistics are constant (the usual case), else computed per run into the workspace.
// The same kernel runs com.ember FusedBatchNormalization and the layout planner's
// NhwcBatchNormalization and BlockedBatchNormalization (graph/schemas/norm.h: the
// channel is the lane there), with their fused activation in the same pass: Relu and
// Clip as bounds on each vector, another function over each plane just written.
#include "graph/schemas/norm.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"

#include <cmath>
#include <immintrin.h>
#include <limits>

namespace ember {

namespace {

// What a fused activation leaves to the affine loops: y clamped to [lo, hi]. The bound
// is compared first, so NaN stays NaN (as through max(0, x)).
struct Bounds {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  float clamp(float v) const {
    const float above = v < lo ? lo : v;
    return above > hi ? hi : above;
  }
};

// x * a + b within the bounds, eight lanes at a time; the bounds' registers are made once
// per parallel chunk, not per vector.
struct VectorAffine {
  explicit VectorAffine(const Bounds& b) : lo(_mm256_set1_ps(b.lo)), hi(_mm256_set1_ps(b.hi)) {}
  __m256 operator()(__m256 x, __m256 a, __m256 b) const {
    return _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_fmadd_ps(x, a, b)));
  }
  __m256 lo, hi;
};

class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(KernelInit& init, const ew::Activation& act, const BatchNormParams& p)
      : epsilon_(p.epsilon), channels_(p.channels), inner_(p.inner), outer_(p.outer),
        lanes_(p.inner == 1 ? p.channels : p.lanes) {  // inner 1 (NHWC, N x C): rows of C lanes
    if (act.is(ew::UnaryFunction::Relu)) {
      bounds_.lo = 0.f;
    } else if (act.kind == ew::Activation::Kind::Clip) {
      bounds_ = {act.params.alpha, act.params.beta};
    } else {
      after_ = act;
    }
    const bool constant = init.values[1] && init.values[2] && init.values[3] && init.values[4];
    if (constant) {
      folded_.resize(2 * channels_);
      fold(init.values[1]->data_as<float>(), init.values[2]->data_as<float>(), init.values[3]->data_as<float>(),
           init.values[4]->data_as<float>(), folded_.data());
    } else {
      init.workspace_bytes = 2 * channels_ * sizeof(float);
    }
  }

  void run(const RunArgs& args) const override {
    const float* ab = folded_.data();
    if (folded_.empty()) {
      float* scratch = static_cast<float*>(args.workspace);
      fold(args.inputs[1]->data_as<float>(), args.inputs[2]->data_as<float>(), args.inputs[3]->data_as<float>(),
           args.inputs[4]->data_as<float>(), scratch);
      ab = scratch;
    }
    const float* x = args.inputs[0]->data_as<float>();
    float* y = args.outputs[0]->data_as<float>();
    if (lanes_ <= 1) return run_planes(x, y, ab);  // 0: no channels
    run_lanes(x, y, ab);
  }

 private:
  // Planes of `inner_` values of one channel each (NCHW).
  void run_planes(const float* x, float* y, const float* ab) const {
    const int64_t inner = inner_, channels = channels_;
    const Bounds bounds = bounds_;
    parallel_for(outer_ * channels, inner, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const float a = ab[plane % channels], b = ab[channels + plane % channels];
        const float* xp = x + plane * inner;
        float* yp = y + plane * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] = bounds.clamp(xp[i] * a + b);
        activate_after(yp, inner);
      }
    });
  }

  // Planes of `inner_` rows of `lanes_` channels (a block's; NHWC: one row of all C).
  void run_lanes(const float* x, float* y, const float* ab) const {
    const int64_t lanes = lanes_, inner = inner_, blocks = channels_ / lanes, channels = channels_;
    parallel_for(outer_ * blocks, inner * lanes, [&](int64_t begin, int64_t end) {
      const VectorAffine affine(bounds_);
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t first = plane % blocks * lanes;
        const float* xp = x + plane * inner * lanes;
        float* yp = y + plane * inner * lanes;
        const float* a = ab + first;
        const float* b = ab + channels + first;
        if (lanes == 8) {
          affine_block<1>(affine, xp, a, b, yp, inner);
        } else if (lanes == 16) {
          affine_block<2>(affine, xp, a, b, yp, inner);
        } else {
          for (int64_t i = 0; i < inner; ++i) affine_row(affine, xp + i * lanes, a, b, yp + i * lanes, lanes);
        }
        activate_after(yp, inner * lanes);
      }
    });
  }

  // Rows of one channel block (nChw8c, nChw16c): its scale and shift stay in registers
  // (row by row through affine_row took 3.5x as long).
  template <int kVectors>
  static void affine_block(const VectorAffine& affine, const float* x, const float* a, const float* b, float* y,
                           int64_t rows) {
    __m256 va[kVectors], vb[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      va[v] = _mm256_loadu_ps(a + 8 * v);
      vb[v] = _mm256_loadu_ps(b + 8 * v);
    }
    for (int64_t i = 0; i < rows; ++i, x += 8 * kVectors, y += 8 * kVectors)
      for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(y + 8 * v, affine(_mm256_loadu_ps(x + 8 * v), va[v], vb[v]));
  }

  // y[l] = x[l] * a[l] + b[l] for l < n, eight lanes to a vector.
  void affine_row(const VectorAffine& affine, const float* x, const float* a, const float* b, float* y,
                  int64_t n) const {
    int64_t l = 0;
    for (; l + 8 <= n; l += 8)
      _mm256_storeu_ps(y + l, affine(_mm256_loadu_ps(x + l), _mm256_loadu_ps(a + l), _mm256_loadu_ps(b + l)));
    for (; l < n; ++l) y[l] = bounds_.clamp(x[l] * a[l] + b[l]);
  }

  // A fused activation other than Relu and Clip, over values just written (in cache).
  void activate_after(float* y, int64_t n) const {
    if (after_.kind != ew::Activation::Kind::Function) return;
    if (has_vector_form(after_.function)) return vector_unary(after_.function, after_.params, y, y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = ew::apply_activation(after_, y[i]);
  }

  // out[0..C) = a, out[C..2C) = b.
  void fold(const float* scale, const float* bias, const float* mean, const float* var, float* out) const {
    for (int64_t c = 0; c < channels_; ++c) {
      const float a = scale[c] / std::sqrt(var[c] + epsilon_);
      out[c] = a;
      out[channels_ + c] = bias[c] - mean[c] * a;
    }
  }

  float epsilon_;
  int64_t channels_ = 0, inner_ = 0, outer_ = 0, lanes_ = 1;
  std::vector<float> folded_;
  Bounds bounds_;
  ew::Activation after_;  // kind None where the bounds do it all
};

std::unique_ptr<Kernel> make_batch_norm(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < 5; ++i)
    if (!(*why_not = float32_only(init, i)).empty()) return nullptr;
  BatchNormParams p;
  ew::Activation act;
  if (!batch_norm_params(infer_context(init), &p, why_not) || !fused_activation_of(init.node, &act, why_not))
    return nullptr;
  return std::make_unique<BatchNormKernel>(init, act, p);
}

}  // namespace

EMBER_KERNEL("BatchNormalization", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_batch_norm>);
EMBER_KERNEL("FusedBatchNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_batch_norm>);
EMBER_KERNEL("NhwcBatchNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_batch_norm>);
EMBER_KERNEL("BlockedBatchNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_batch_norm>);

}  // namespace ember
