// com.ember BlockedPointwiseDepthwiseConv (graph/schemas/pointwise_depthwise.h): the 1x1
// convolution as a oneDNN primitive with the depthwise 3x3 convolution as its post-op,
// so the 1x1's output goes from registers to the depthwise conv a few rows at a time
// and never to memory.
#include "graph/schemas/pointwise_depthwise.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/registry.h"

#include <string_view>

namespace ember {

namespace {

using dnnl::memory;

// Below this size the 1x1's output stays in the caches between two primitives, and the
// fusion saves nothing: Zen 3, 2 threads, nChw8c, MobileNetV2's layers at batch 8,
// fused against the two convolutions: 16->96 at 112x112 with the depthwise at stride 2
// (38 MB between them) 7.1 -> 3.0 ms, 24->144 at 56x56 (14 MB) 1.2-1.7x faster, 32->192
// at 28x28 (4.8 MB) 0.92-1.11x, the smaller ones 0.86-1.09x.
constexpr size_t kFuseFromBytes = size_t{8} << 20;

class PointwiseDepthwiseKernel final : public Kernel {
 public:
  // `dw_act` and `stride`: the depthwise conv's (its "dw_" attributes).
  PointwiseDepthwiseKernel(KernelInit& init, const ew::Activation& act, const ew::Activation& dw_act, int64_t stride) {
    const Shape& x = init.inputs[0].shape;  // [N, Ci/b, H, W, b]
    const Shape& w = init.inputs[1].shape;  // [C, Ci, 1, 1]
    const int64_t block = x.back(), channels = w[0];
    const Shape between{x[0], channels / block, x[2], x[3], block};
    has_bias_ = init.inputs[2].present();
    has_dw_bias_ = init.inputs[4].present();
    // Both biases always go to oneDNN, zeros where the node has none: its AVX2 fused
    // kernel crashed on a 1x1 without one, and the post-op reads one regardless.
    bias_md_ = plain_f32_desc({channels});
    if (!has_bias_ || !has_dw_bias_) zero_biases_.assign(channels, 0.f);

    dnnl::post_ops ops;
    FusedActivation(act).append_to(ops);
    ops.append_dw(memory::data_type::f32, memory::data_type::f32, memory::data_type::f32, 3, stride, 1, 0, {});
    FusedActivation(dw_act).append_to(ops);
    src_md_ = f32_desc_in(x, Layout::ChannelsBlocked);
    dst_md_ = f32_desc_in(init.outputs[0].shape, Layout::ChannelsBlocked);
    DnnlThreadScope threads(init.num_threads);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md_, any_layout(plain_f32_desc(w)),
        bias_md_, f32_desc_in(between, Layout::ChannelsBlocked), {1, 1}, {0, 0}, {0, 0});
    const dnnl::convolution_forward::primitive_desc pd(desc, make_dnnl_attr(ops), dnnl_engine());
    // oneDNN fuses in its jit 1x1 kernels only; its "ref_fused_convolution" runs the two
    // primitives one after the other, which the decomposition does as well.
    if (std::string_view(pd.impl_info_str()).starts_with("ref"))
      throw dnnl::error(dnnl_unimplemented, "oneDNN has no fused kernel for it on this CPU");
    dw_weights_md_ = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
    dw_bias_md_ = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS);
    if (pd.src_desc() != src_md_ || pd.dst_desc() != dst_md_ || dw_bias_md_ != plain_f32_desc({channels}))
      throw dnnl::error(dnnl_unimplemented, "oneDNN's fused kernel wants other layouts");
    prim_ = dnnl::convolution_forward(pd);
    weights_md_ = pd.weights_desc();
    weights_ = packed_constant(init, 1, plain_f32_desc(w), weights_md_);
    dw_weights_ = packed_constant(init, 3, plain_f32_desc({channels, 1, 1, 3, 3}), dw_weights_md_);
    scratch_md_ = pd.scratchpad_desc();
    init.workspace_bytes = scratchpad_bytes(pd);
  }

  const char* variant() const override { return "pointwise+depthwise"; }

  void run(const RunArgs& args) const override {
    const void* zeros = zero_biases_.data();
    const void* bias = has_bias_ ? args.inputs[2]->data() : zeros;
    const void* dw_bias = has_dw_bias_ ? args.inputs[4]->data() : zeros;
    dnnl_execute(prim_, handles_, {{DNNL_ARG_SRC, &src_md_, args.inputs[0]->data()},
                         {DNNL_ARG_WEIGHTS, &weights_md_, weights_.get_data_handle()},
                         {DNNL_ARG_BIAS, &bias_md_, bias},
                         {DNNL_ARG_DST, &dst_md_, args.outputs[0]->data()},
                         {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, &dw_weights_md_, dw_weights_.get_data_handle()},
                         {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, &dw_bias_md_, dw_bias},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, args.workspace}});
  }

 private:
  dnnl::convolution_forward prim_;
  mutable DnnlHandles handles_;
  memory::desc src_md_, weights_md_, bias_md_, dst_md_, dw_weights_md_, dw_bias_md_, scratch_md_;
  memory weights_, dw_weights_;
  std::vector<float> zero_biases_;
  bool has_bias_ = false, has_dw_bias_ = false;
};

// Float32 throughout, constant weights, both activations oneDNN post-ops, and a 1x1
// output large enough to be worth never writing; else the planner runs the two convs.
std::unique_ptr<Kernel> make_pointwise_depthwise(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return nullptr;
  if (init.inputs.size() != 5 || init.inputs[0].shape.size() != 5 || !init.values[1] || !init.values[3] ||
      init.dense_math != DenseMath::Float32) {
    *why_not = "needs a blocked 2-D X, both weights constant and float32 math";
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  const size_t between_bytes = sizeof(float) * static_cast<size_t>(x[0] * init.inputs[1].shape[0] * x[2] * x[3]);
  if (between_bytes < kFuseFromBytes) {
    *why_not = "the 1x1's output (" + std::to_string(between_bytes >> 10) + " KiB) stays in cache between two convolutions";
    return nullptr;
  }
  const Node depthwise = depthwise_part(init.node, "between");
  ew::Activation act, dw_act;
  if (!fused_activation_of(init.node, &act, why_not) || !fused_activation_of(depthwise, &dw_act, why_not)) return nullptr;
  if (!FusedActivation(act).in_primitive() || !FusedActivation(dw_act).in_primitive()) {
    *why_not = "an activation oneDNN has no post-op for";
    return nullptr;
  }
  init.flops = 2.0 * static_cast<double>(between_bytes / sizeof(float)) * static_cast<double>(init.inputs[1].shape[1]) +
               2.0 * 9.0 * static_cast<double>(shape_numel(init.outputs[0].shape));
  return std::make_unique<PointwiseDepthwiseKernel>(init, act, dw_act,
                                                    depthwise.attributes.get_ints_or("strides", {1, 1})[0]);
}

}  // namespace

EMBER_KERNEL("BlockedPointwiseDepthwiseConv", "com.ember", 1, kMaxOpset, DeviceKind::Cpu,
             dense_factory<make_pointwise_depthwise>);

}  // namespace ember
