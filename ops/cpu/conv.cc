// Conv, com.ember FusedConv (bias, residual sum, activation) and its channels-last and
// blocked forms com.ember NhwcConv and BlockedConv, on oneDNN; BlockedConv's larger
// 3x3 convolutions by Winograd's algorithm (ops/cpu/winograd_conv.h).
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/matrix_vector.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/winograd_conv.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace ember {

namespace {

using dnnl::memory;

// The descriptor of ONNX weights [M, C/group, k...] as oneDNN sees them: grouped
// weights get a leading group dim (goihw is the same bytes as ONNX's layout).
memory::desc onnx_weights_desc(const Shape& w, int64_t group) {
  Shape dims = w;
  if (group > 1) {
    dims[0] /= group;
    dims.insert(dims.begin(), group);
  }
  return plain_f32_desc(dims);
}

// What the primitive is asked for (a tensor is stored as f32_desc_in says): a
// channels-last or blocked tensor as it is; an NCHW one lets the primitive pick its
// layout, reordered in and out. (oneDNN runs NCHW itself only through its GEMM
// fallback, whose post-ops are slow: a 1x1 conv with a residual sum and ReLU took 7x
// the time of the same conv in NHWC.)
memory::desc primitive_desc_for(const Shape& shape, Layout layout) {
  return layout == Layout::ChannelsFirst ? any_layout(plain_f32_desc(shape)) : f32_desc_in(shape, layout);
}
// A channels-last value as stored: bfloat16 between convolutions in bf16 sessions
// (keep_bf16_between_convs), float32 otherwise.
memory::desc stored_desc(const Shape& shape, Layout layout, bool bf16) {
  return computed_as(f32_desc_in(shape, layout), bf16 ? DenseMath::BFloat16 : DenseMath::Float32);
}

class ConvKernel final : public Kernel {
 public:
  // X in `layout`, Y and the residual in `y_layout`.
  ConvKernel(KernelInit& init, const ew::Activation& act, Layout layout, Layout y_layout)
      : activation_(act, init.outputs[0].dtype == DType::BFloat16) {
    const Shape& x = init.inputs[0].shape;
    const Shape& w = init.inputs[1].shape;
    const int64_t group = init.node.attributes.get_int_or("group", 1);
    const WindowGeometry g = forward_window(init.node, spatial_dims(x, layout), conv_kernel_shape(init.node, w), false);
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    has_residual_ = init.inputs.size() > 3 && init.inputs[3].present();
    const bool const_weights = init.values[1] != nullptr;
    output_bf16_ = init.outputs[0].dtype == DType::BFloat16;

    const Shape& y = init.outputs[0].shape;
    const memory::desc stored_src = stored_desc(x, layout, init.inputs[0].dtype == DType::BFloat16);
    const memory::desc stored_dst = stored_desc(y, y_layout, output_bf16_);
    bias_md_ = has_bias_ ? plain_f32_desc({w[0]}) : memory::desc();
    const memory::desc plain_w = onnx_weights_desc(w, group);
    memory::dims dilations;
    for (int64_t d : g.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
    dnnl::post_ops ops;
    if (has_residual_) ops.append_sum(1.f);
    activation_.append_to(ops);

    // bf16 math: source and weights in bfloat16, accumulation in float32, output in
    // float32 unless it is stored bfloat16. Only constant weights, converted once here,
    // and only where the products pay for converting X: a conv of fewer operations
    // whose X and Y are float32 stays float32 (Silero VAD's STFT conv, 0.4 MFLOP on one
    // input channel, ran 0.010 ms in float32 and 0.026 in bf16, one thread).
    constexpr double kBf16FromFlops = 2e6;
    const double flops = init.flops;  // make_conv_in's count
    const bool stored_bf16 = init.inputs[0].dtype == DType::BFloat16 || output_bf16_;
    const DenseMath math =
        const_weights && (stored_bf16 || flops >= kBf16FromFlops) ? init.dense_math : DenseMath::Float32;
    DnnlThreadScope threads(dnnl_threads_for(init.num_threads, flops));
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        computed_as(primitive_desc_for(x, layout), math),
        const_weights ? computed_as(any_layout(plain_w), math) : plain_w, bias_md_,
        output_bf16_ ? stored_dst : primitive_desc_for(y, y_layout), to_dnnl_dims(g.strides), dilations,
        to_dnnl_dims(g.pads_begin), to_dnnl_dims(g.pads_end));
    const dnnl::convolution_forward::primitive_desc pd(desc, make_dnnl_attr(ops), dnnl_engine());
    // A blocked layout is chosen for oneDNN's fast kernels on this CPU; where it has none
    // for this conv in it but its reference loops (nChw16c on an AVX2 CPU: 1000x slower),
    // the kernel declines and the planner runs the node's plain fallback.
    const bool blocked = layout == Layout::ChannelsBlocked || y_layout == Layout::ChannelsBlocked;
    if (blocked && std::string_view(pd.impl_info_str()).starts_with("ref"))
      throw dnnl::error(dnnl_unimplemented, "only oneDNN's reference loops run this layout on this CPU");
    prim_ = dnnl::convolution_forward(pd);
    src_md_ = pd.src_desc();
    dst_md_ = pd.dst_desc();
    weights_md_ = pd.weights_desc();
    if (const_weights) weights_ = packed_constant(init, 1, plain_w, weights_md_);
    scratch_md_ = pd.scratchpad_desc();

    to_src_ = DnnlReorder(stored_src, src_md_);
    // The float32 residual goes into dst as dst's type (rounded to bfloat16 there).
    if (has_residual_) to_dst_ = DnnlReorder(f32_desc_in(y, y_layout), dst_md_);
    from_dst_ = DnnlReorder(dst_md_, stored_dst);
    WorkspaceLayout ws;
    ws.take(std::max({scratchpad_bytes(pd), to_src_.scratchpad(), to_dst_.scratchpad(), from_dst_.scratchpad()}));
    src_at_ = to_src_ ? ws.take(src_md_.get_size()) : 0;
    dst_at_ = from_dst_ ? ws.take(dst_md_.get_size()) : 0;
    init.workspace_bytes = ws.total();
  }

  void run(const RunArgs& args) const override {
    void* scratch = args.workspace;
    const void* x = args.inputs[0]->data();
    if (to_src_) {
      void* blocked = workspace_at(args, src_at_);
      to_src_.run(x, blocked, scratch);
      x = blocked;
    }
    void* y = from_dst_ ? workspace_at(args, dst_at_) : args.outputs[0]->data();
    // The sum post-op adds to what dst holds, so the residual is put there first.
    if (has_residual_ && to_dst_) to_dst_.run(args.inputs[3]->data(), y, scratch);
    else if (has_residual_ && args.inputs[3]->data() != y) copy(args.inputs[3]->data_as<float>(), static_cast<float*>(y), args.outputs[0]->numel());
    const void* w = weights_ ? weights_.get_data_handle() : args.inputs[1]->data();
    dnnl_execute(prim_, handles_, {{DNNL_ARG_SRC, &src_md_, x},
                         {DNNL_ARG_WEIGHTS, &weights_md_, w},
                         {DNNL_ARG_BIAS, has_bias_ ? &bias_md_ : nullptr, has_bias_ ? args.inputs[2]->data() : nullptr},
                         {DNNL_ARG_DST, &dst_md_, y},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, scratch}});
    if (from_dst_) from_dst_.run(y, args.outputs[0]->data(), scratch);
    if (!output_bf16_) activation_.apply_after(args.outputs[0]->data_as<float>(), args.outputs[0]->numel());
  }

 private:
  static void copy(const float* from, float* to, int64_t n) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) { std::memcpy(to + b, from + b, (e - b) * sizeof(float)); });
  }

  FusedActivation activation_;
  dnnl::convolution_forward prim_;
  mutable DnnlHandles handles_;
  memory::desc src_md_, weights_md_, bias_md_, dst_md_, scratch_md_;
  memory weights_;
  DnnlReorder to_src_, to_dst_, from_dst_;
  size_t src_at_ = 0, dst_at_ = 0;
  bool has_bias_ = false, has_residual_ = false, output_bf16_ = false;
};

// What a channels-last conv with a bfloat16 X or output needs (keep_bf16_between_convs
// marks only such nodes): bf16 math on constant weights, float32 everywhere else, and
// no activation pass over a float32 output. "" when it can run.
std::string why_not_bf16(const KernelInit& init, Layout layout) {
  const bool x_bf16 = init.inputs[0].dtype == DType::BFloat16;
  if (layout != Layout::ChannelsLast) return "bfloat16 values are read and written by NhwcConv only";
  if (init.dense_math != DenseMath::BFloat16 || init.values[1] == nullptr)
    return "bfloat16 values need bf16 math on constant weights";
  for (size_t i = x_bf16 ? 1 : 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != DType::Float32) return float32_only(init, i);
  ew::Activation act;
  std::string why;
  if (init.outputs[0].dtype == DType::BFloat16 && fused_activation_of(init.node, &act, &why) &&
      !FusedActivation(act, /*bfloat16_output=*/true).in_primitive())
    return "a bfloat16 output needs its activation applied inside oneDNN";
  return "";
}

// A 1x1 convolution of one 1x1 image (squeeze-excite's, after its global pool) is a
// matrix-vector product: every input value is one channel, every output one filter.
bool conv_is_matrix_vector(const KernelInit& init) {
  const Shape& w = init.inputs[1].shape;
  const bool residual = init.inputs.size() > 3 && init.inputs[3].present();
  if (residual || init.node.attributes.get_int_or("group", 1) != 1 || w.size() < 2) return false;
  for (size_t d = 2; d < w.size(); ++d)
    if (w[d] != 1) return false;
  return shape_numel(init.inputs[0].shape) == w[1] && shape_numel(init.outputs[0].shape) == w[0] &&
         matrix_vector_applies(init, 1, w[1], w[0]);
}

std::unique_ptr<Kernel> make_conv_in(KernelInit& init, std::string* why_not, Layout layout, Layout y_layout) {
  if (init.inputs[0].dtype == DType::BFloat16 || init.outputs[0].dtype == DType::BFloat16) {
    if (!(*why_not = why_not_bf16(init, layout)).empty()) return nullptr;
  } else {
    for (size_t i = 0; i < init.inputs.size(); ++i)
      if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return nullptr;
  }
  if (spatial_dims(init.inputs[0].shape, layout).size() > 3) {
    *why_not = "oneDNN convolutions have at most 3 spatial dims";
    return nullptr;
  }
  if (init.inputs.size() > 3 && init.inputs[3].present() && init.inputs[3].shape != init.outputs[0].shape) {
    *why_not = "the residual input broadcasts; the fused sum needs the output's shape";
    return nullptr;
  }
  const Shape& w = init.inputs[1].shape;
  if (!w.empty() && w[0] > 0)
    init.flops = 2.0 * static_cast<double>(shape_numel(init.outputs[0].shape)) * static_cast<double>(shape_numel(w) / w[0]);
  if (conv_is_matrix_vector(init)) return make_matrix_vector_kernel(init, onnx_weights_desc(w, 1), why_not);
  const WinogradTile tile = layout == Layout::ChannelsBlocked ? winograd_tile_for(init) : WinogradTile::None;
  if (tile != WinogradTile::None) {
    ew::Activation act;
    if (!fused_activation_of(init.node, &act, why_not)) return nullptr;
    if (auto winograd = make_winograd_conv(init, act, tile, why_not)) return winograd;
  }
  return with_fused_activation<ConvKernel>(init, why_not, layout, y_layout);
}

std::unique_ptr<Kernel> make_conv(KernelInit& init, std::string* why_not) {
  return make_conv_in(init, why_not, Layout::ChannelsFirst, Layout::ChannelsFirst);
}
std::unique_ptr<Kernel> make_nhwc_conv(KernelInit& init, std::string* why_not) {
  return make_conv_in(init, why_not, Layout::ChannelsLast, Layout::ChannelsLast);
}
// X is blocked when its rank is W's plus one, else plain (graph/schemas/dense.cc).
std::unique_ptr<Kernel> make_blocked_conv(KernelInit& init, std::string* why_not) {
  const bool x_blocked = init.inputs[0].shape.size() == init.inputs[1].shape.size() + 1;
  return make_conv_in(init, why_not, x_blocked ? Layout::ChannelsBlocked : Layout::ChannelsFirst, Layout::ChannelsBlocked);
}

}  // namespace

EMBER_KERNEL("Conv", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_conv>);
// The residual sum accumulates into the output: where the residual dies here, the
// output takes its bytes and nothing is copied (ResNet-50 at batch 8 copied 25 MB
// before each of its first bottlenecks' last convs).
EMBER_KERNEL_FLAGS("FusedConv", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_conv>,
                   KernelFlags{.overwrites_input = 3});
EMBER_KERNEL_FLAGS("NhwcConv", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_nhwc_conv>,
                   KernelFlags{.overwrites_input = 3});
EMBER_KERNEL_FLAGS("BlockedConv", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_blocked_conv>,
                   KernelFlags{.overwrites_input = 3});

}  // namespace ember
