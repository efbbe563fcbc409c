// BatchNormalization in inference mode: y = x * a[c] + b[c] with a = scale / sqrt(var +
// eps) and b = bias - mean * a. The per-channel a, b are folded at plan time when the
// statistics are constant (the usual case), else computed per run into the workspace.
#include "graph/schemas/norm.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(KernelInit& init, const BatchNormParams& p)
      : epsilon_(p.epsilon), channels_(p.channels), inner_(p.inner), outer_(p.outer) {
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
    const int64_t inner = inner_, channels = channels_;
    parallel_for(outer_ * channels, inner, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const float a = ab[plane % channels], b = ab[channels + plane % channels];
        const float* xp = x + plane * inner;
        float* yp = y + plane * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * a + b;
      }
    });
  }

 private:
  // out[0..C) = a, out[C..2C) = b.
  void fold(const float* scale, const float* bias, const float* mean, const float* var, float* out) const {
    for (int64_t c = 0; c < channels_; ++c) {
      const float a = scale[c] / std::sqrt(var[c] + epsilon_);
      out[c] = a;
      out[channels_ + c] = bias[c] - mean[c] * a;
    }
  }

  float epsilon_;
  int64_t channels_ = 0, inner_ = 0, outer_ = 0;
  std::vector<float> folded_;
};

std::unique_ptr<Kernel> make_batch_norm(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < 5; ++i)
    if (!(*why_not = float32_only(init, i)).empty()) return nullptr;
  BatchNormParams p;
  if (!batch_norm_params(infer_context(init), &p, why_not)) return nullptr;
  return std::make_unique<BatchNormKernel>(init, p);
}

}  // namespace

EMBER_KERNEL("BatchNormalization", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_batch_norm>);

}  // namespace ember
