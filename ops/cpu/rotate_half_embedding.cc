// CPU kernel for com.ember RotateHalfEmbedding (graph/schemas/rotate_half_embedding.cc):
// Y = X * Cos + rotate_half(X) * Sin in one pass, row by row of X's last axis, Cos and
// Sin broadcast onto X's other axes (transformers' [1, 1, S, D] against [B, H, S, D]).
// Float32; elsewhere, and where the node is not exact as one pass, it declines and the
// planner runs the seven nodes it was fused from.
#include "graph/schemas/rotate_half_embedding.h"
#include "ops/cpu/broadcast_rows.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

namespace ember {

namespace {

class RotateHalfKernel final : public Kernel {
 public:
  RotateHalfKernel(const Shape& x, const Shape& cos, const Shape& sin, RotateHalfSplit split)
      : cos_(x, cos), sin_(x, sin), split_(split), rows_(shape_numel(x) / split.width) {}

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    const float* cos = args.inputs[1]->data_as<float>();
    const float* sin = args.inputs[2]->data_as<float>();
    float* y = args.outputs[0]->data_as<float>();
    const int64_t width = split_.width;
    parallel_for(rows_, 4 * width, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        rotate_row(x + row * width, cos + cos_.operand_row(row) * width, sin + sin_.operand_row(row) * width,
                   y + row * width);
    });
  }

 private:
  // y = x c + rotate_half(x) s on one row: its first width - half entries take the
  // negated entries from `half` on, the rest the entries before `half`.
  void rotate_row(const float* x, const float* c, const float* s, float* y) const {
    const int64_t h = split_.half, rest = split_.width - h;
    for (int64_t j = 0; j < rest; ++j) y[j] = x[j] * c[j] - x[j + h] * s[j];
    for (int64_t j = rest; j < split_.width; ++j) y[j] = x[j] * c[j] + x[j - rest] * s[j];
  }

  BroadcastRows cos_, sin_;
  RotateHalfSplit split_;
  int64_t rows_;
};

std::unique_ptr<Kernel> make_rotate_half(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < 3; ++i)
    if (init.inputs[i].dtype != DType::Float32) {
      *why_not = "float32 only";
      return nullptr;
    }
  const Shape &x = init.inputs[0].shape, &cos = init.inputs[1].shape, &sin = init.inputs[2].shape;
  RotateHalfSplit split;
  if (!rotate_half_fused_for(init.node, x, cos, sin, init.values[3], init.values[4], &split)) {
    *why_not = "not one split of X's last axis with Cos and Sin broadcasting onto X";
    return nullptr;
  }
  return std::make_unique<RotateHalfKernel>(x, cos, sin, split);
}

}  // namespace

EMBER_KERNEL("RotateHalfEmbedding", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_rotate_half);

}  // namespace ember
