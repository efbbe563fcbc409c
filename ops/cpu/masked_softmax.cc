// CPU kernel for com.ember MaskedSoftmax (graph/schemas/masked_softmax.cc): each row of
// attention scores scaled, masked, normalized and (nan_to_zero) cleared of NaN while it
// is in L1, instead of four passes over the scores. The row's softmax is the Softmax
// kernel's own (softmax_row, ops/cpu/vector_math.h). Float32; elsewhere it declines and
// the planner runs the nodes it was fused from.
#include "graph/schemas/masked_softmax.h"
#include "ops/cpu/broadcast_rows.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"

namespace ember {

namespace {

struct Scale {
  float value = 1.f;
  bool divides = false;
};

class MaskedSoftmaxKernel final : public Kernel {
 public:
  // `scores`: which input holds them (masked_softmax_scores), shaped x; the other, mask.
  MaskedSoftmaxKernel(int scores, const Shape& x, const Shape& mask, Scale scale, bool nan_to_zero)
      : scores_(scores),
        mask_(x, mask),
        width_(x.back()),
        rows_(shape_numel(x) / x.back()),
        scale_(scale),
        nan_to_zero_(nan_to_zero) {}

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[scores_]->data_as<float>();
    const float* mask = args.inputs[1 - scores_]->data_as<float>();
    float* y = args.outputs[0]->data_as<float>();
    parallel_for(rows_, 8 * width_, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        normalize_row(x + row * width_, mask + mask_.operand_row(row) * width_, y + row * width_);
    });
  }

 private:
  void normalize_row(const float* x, const float* mask, float* y) const {
    if (scale_.divides)
      for (int64_t j = 0; j < width_; ++j) y[j] = x[j] / scale_.value + mask[j];
    else
      for (int64_t j = 0; j < width_; ++j) y[j] = x[j] * scale_.value + mask[j];
    softmax_row(y, y, width_);
    if (nan_to_zero_)
      for (int64_t j = 0; j < width_; ++j) y[j] = y[j] != y[j] ? 0.f : y[j];
  }

  int scores_;
  BroadcastRows mask_;
  int64_t width_, rows_;
  Scale scale_;
  bool nan_to_zero_;
};

std::unique_ptr<Kernel> make_masked_softmax(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != DType::Float32 || init.inputs[1].dtype != DType::Float32) {
    *why_not = "float32 only";
    return nullptr;
  }
  const int scores = masked_softmax_scores(init.node, init.inputs[0].shape, init.inputs[1].shape);
  if (scores < 0) {
    *why_not = "the mask does not broadcast onto the scores along their rows";
    return nullptr;
  }
  const Attributes& a = init.node.attributes;
  const Scale scale{a.get_float_or("scale", 1.f), a.get_int_or("scale_divides", 0) != 0};
  return std::make_unique<MaskedSoftmaxKernel>(scores, init.inputs[scores].shape, init.inputs[1 - scores].shape,
                                               scale, a.get_int_or("nan_to_zero", 0) != 0);
}

}  // namespace

EMBER_KERNEL("MaskedSoftmax", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_masked_softmax);

}  // namespace ember
