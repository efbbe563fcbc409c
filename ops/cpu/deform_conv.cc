// DeformConv (opset 19), 2-D, float32 (float16 by conversion): a convolution whose
// kernel taps sample X at learned fractional offsets. Per image, a deformable im2col
// writes the bilinear samples (times the mask) into a column matrix in the workspace,
// then one oneDNN matmul per image, batched over groups, multiplies W by it:
//   Y[n] [G, M/G, oH*oW] = W [G, M/G, C/G*kH*kW] x columns [G, C/G*kH*kW, oH*oW].
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>

namespace ember {

namespace {

using dnnl::memory;

// One output position's bilinear sample of a channel plane: four corner offsets and
// their weights (mask included). Corners outside the plane read element 0 with weight
// 0, so the channel loop has no branches (X is zero outside, as GridSample's zeros
// padding with align_corners=1 that the ONNX reference samples with).
struct Sample {
  int64_t at[4];
  float weight[4];
};

Sample bilinear_sample(double y, double x, double scale, int64_t h, int64_t w) {
  Sample s{};
  const double y0 = std::floor(y), x0 = std::floor(x), fy = y - y0, fx = x - x0;
  const double weights[4] = {(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx};
  for (int k = 0; k < 4; ++k) {
    const double cy = y0 + (k >> 1), cx = x0 + (k & 1);
    if (!(cy >= 0 && cy <= h - 1 && cx >= 0 && cx <= w - 1)) continue;  // NaN and huge offsets too
    s.at[k] = static_cast<int64_t>(cy) * w + static_cast<int64_t>(cx);
    s.weight[k] = static_cast<float>(weights[k] * scale);
  }
  return s;
}

class DeformConvKernel final : public Kernel {
 public:
  explicit DeformConvKernel(KernelInit& init) {
    const Shape& x = init.inputs[0].shape;
    const Shape& w = init.inputs[1].shape;
    const WindowGeometry g = forward_window(init.node, {x[2], x[3]}, {w[2], w[3]}, false);
    n_ = x[0], c_ = x[1], h_ = x[2], w_ = x[3], m_ = w[0], kh_ = w[2], kw_ = w[3];
    oh_ = g.out[0], ow_ = g.out[1];
    stride_h_ = g.strides[0], stride_w_ = g.strides[1];
    dilation_h_ = g.dilations[0], dilation_w_ = g.dilations[1];
    pad_h_ = g.pads_begin[0], pad_w_ = g.pads_begin[1];
    group_ = init.node.attributes.get_int_or("group", 1);
    offset_group_ = init.node.attributes.get_int_or("offset_group", 1);
    has_bias_ = init.inputs.size() > 3 && init.inputs[3].present();
    has_mask_ = init.inputs.size() > 4 && init.inputs[4].present();

    // Per group: M/G output channels (W's rows) and C/G * kH * kW column rows.
    const int64_t mg = m_ / group_, k = c_ / group_ * kh_ * kw_, p = oh_ * ow_;
    WorkspaceLayout ws;
    // With no input channels, no W rows or an empty X plane every sample is 0 and Y is
    // the bias: nothing to multiply (and oneDNN's matmul divides by empty dims).
    if (mg > 0 && k > 0 && h_ * w_ > 0) {
      DnnlThreadScope threads(init.num_threads);
      const dnnl::matmul::desc desc(plain_f32_desc({group_, mg, k}), plain_f32_desc({group_, k, p}), memory::desc(),
                                    plain_f32_desc({group_, mg, p}));
      const dnnl::matmul::primitive_desc pd(desc, make_dnnl_attr(), dnnl_engine());
      matmul_ = dnnl::matmul(pd);
      w_md_ = pd.src_desc();
      columns_md_ = pd.weights_desc();
      y_md_ = pd.dst_desc();
      scratch_md_ = pd.scratchpad_desc();
      ws.take(scratchpad_bytes(pd));
    }
    columns_at_ = ws.take(static_cast<size_t>(c_ * kh_ * kw_ * p) * sizeof(float));
    init.workspace_bytes = ws.total();
  }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    const float* w = args.inputs[1]->data_as<float>();
    const float* offset = args.inputs[2]->data_as<float>();
    const float* bias = has_bias_ ? args.inputs[3]->data_as<float>() : nullptr;
    const float* mask = has_mask_ ? args.inputs[4]->data_as<float>() : nullptr;
    float* y = args.outputs[0]->data_as<float>();
    float* columns = static_cast<float*>(workspace_at(args, columns_at_));
    const int64_t p = oh_ * ow_, taps = kh_ * kw_;
    for (int64_t n = 0; n < n_; ++n) {
      float* yn = y + n * m_ * p;
      if (matmul_) {
        im2col(x + n * c_ * h_ * w_, offset + n * offset_group_ * taps * 2 * p,
               mask ? mask + n * offset_group_ * taps * p : nullptr, columns);
        dnnl_execute(matmul_, handles_, {{DNNL_ARG_SRC, &w_md_, w},
                                         {DNNL_ARG_WEIGHTS, &columns_md_, columns},
                                         {DNNL_ARG_DST, &y_md_, yn},
                                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, args.workspace}});
      }
      if (matmul_ && !bias) continue;
      parallel_for(m_, p, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          float* row = yn + m * p;
          if (!matmul_) std::fill(row, row + p, 0.f);
          if (bias) std::for_each(row, row + p, [b = bias[m]](float& v) { v += b; });
        }
      });
    }
  }

 private:
  // columns[c * kH*kW + tap][oy * oW + ox] = mask * X[c] sampled at the tap's position
  // moved by its offset. The sample's corners and weights depend on the offset group,
  // tap and output position only, so they are worked out once and used for every
  // channel of the offset group; chunks of one output row keep them on the stack.
  void im2col(const float* x, const float* offset, const float* mask, float* columns) const {
    const int64_t p = oh_ * ow_, taps = kh_ * kw_, plane = h_ * w_;
    const int64_t channels = c_ / offset_group_;
    const int64_t rows = offset_group_ * taps * oh_;  // work items: (offset group, tap, oy)
    parallel_for(rows, channels * ow_ * 4, [&](int64_t begin, int64_t end) {
      constexpr int64_t kChunk = 64;
      Sample samples[kChunk];
      for (int64_t r = begin; r < end; ++r) {
        const int64_t oy = r % oh_, tap = r / oh_ % taps, og = r / oh_ / taps;
        const int64_t i = tap / kw_, j = tap % kw_;
        // offset channels per group and tap: (dy, dx); mask channels: one per tap.
        const float* dy = offset + ((og * taps + tap) * 2) * p + oy * ow_;
        const float* dx = dy + p;
        const float* mk = mask ? mask + (og * taps + tap) * p + oy * ow_ : nullptr;
        const double base_y = static_cast<double>(oy * stride_h_ - pad_h_ + i * dilation_h_);
        for (int64_t ox0 = 0; ox0 < ow_; ox0 += kChunk) {
          const int64_t len = std::min(kChunk, ow_ - ox0);
          for (int64_t q = 0; q < len; ++q) {
            const int64_t ox = ox0 + q;
            const double base_x = static_cast<double>(ox * stride_w_ - pad_w_ + j * dilation_w_);
            samples[q] = bilinear_sample(base_y + dy[ox], base_x + dx[ox], mk ? mk[ox] : 1.0, h_, w_);
          }
          for (int64_t c = og * channels; c < (og + 1) * channels; ++c) {
            const float* xc = x + c * plane;
            float* out = columns + (c * taps + tap) * p + oy * ow_ + ox0;
            for (int64_t q = 0; q < len; ++q) {
              const Sample& s = samples[q];
              out[q] = s.weight[0] * xc[s.at[0]] + s.weight[1] * xc[s.at[1]] + s.weight[2] * xc[s.at[2]] +
                       s.weight[3] * xc[s.at[3]];
            }
          }
        }
      }
    });
  }

  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, m_ = 0, kh_ = 0, kw_ = 0, oh_ = 0, ow_ = 0;
  int64_t stride_h_ = 1, stride_w_ = 1, dilation_h_ = 1, dilation_w_ = 1, pad_h_ = 0, pad_w_ = 0;
  int64_t group_ = 1, offset_group_ = 1;
  bool has_bias_ = false, has_mask_ = false;
  dnnl::matmul matmul_;
  mutable DnnlHandles handles_;
  memory::desc w_md_, columns_md_, y_md_, scratch_md_;
  size_t columns_at_ = 0;
};

std::unique_ptr<Kernel> make_deform_conv(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return nullptr;
  return std::make_unique<DeformConvKernel>(init);
}

}  // namespace

EMBER_KERNEL("DeformConv", "", 19, kMaxOpset, DeviceKind::Cpu, dense_factory<make_deform_conv>);

}  // namespace ember
