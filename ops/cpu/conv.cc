// Conv and com.ember FusedConv (bias, residual sum, activation) on oneDNN.
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

using dnnl::memory;

// The descriptor of ONNX weights [M, C/group, k...] as oneDNN sees them: grouped
// weights get a leading group dim (goihw is the same bytes as ONNX's layout).
memory::desc onnx_weights_desc(const Shape& w, int64_t group, memory::format_tag tag_any) {
  memory::dims dims(w.begin(), w.end());
  if (group > 1) {
    dims[0] /= group;
    dims.insert(dims.begin(), group);
  }
  if (tag_any == memory::format_tag::any) return {dims, memory::data_type::f32, tag_any};
  return plain_f32_desc(Shape(dims.begin(), dims.end()));
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(KernelInit& init, const Activation& act) {
    const Shape& x = init.inputs[0].shape;
    const Shape& w = init.inputs[1].shape;
    const Shape& y = init.outputs[0].shape;
    const int64_t group = init.node.attributes.get_int_or("group", 1);
    const WindowGeometry g = forward_window(init.node, Shape(x.begin() + 2, x.end()),
                                            conv_kernel_shape(init.node, w), false);
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    has_residual_ = init.inputs.size() > 3 && init.inputs[3].present();
    const bool const_weights = init.values[1] != nullptr;

    src_md_ = plain_f32_desc(x);
    dst_md_ = plain_f32_desc(y);
    bias_md_ = has_bias_ ? plain_f32_desc({w[0]}) : memory::desc();
    const memory::desc plain_w = onnx_weights_desc(w, group, memory::format_tag::undef);
    const memory::desc any_w = const_weights ? onnx_weights_desc(w, group, memory::format_tag::any) : plain_w;

    memory::dims dilations;
    for (int64_t d : g.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
    dnnl::post_ops ops;
    if (has_residual_) ops.append_sum(1.f);
    append_activation(ops, act);

    DnnlThreadScope threads(init.num_threads);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md_, any_w,
        bias_md_, dst_md_, to_dnnl_dims(g.strides), dilations, to_dnnl_dims(g.pads_begin),
        to_dnnl_dims(g.pads_end));
    const dnnl::convolution_forward::primitive_desc pd(desc, make_dnnl_attr(ops), dnnl_engine());
    prim_ = dnnl::convolution_forward(pd);
    weights_md_ = pd.weights_desc();
    if (const_weights) weights_ = reorder_constant(init.values[1]->data(), plain_w, weights_md_);
    scratch_md_ = pd.scratchpad_desc();
    init.workspace_bytes = scratchpad_bytes(pd);
  }

  void run(const RunArgs& args) const override {
    Tensor& y = *args.outputs[0];
    if (has_residual_ && args.inputs[3]->data() != y.data())
      copy(args.inputs[3]->data_as<float>(), y.data_as<float>(), y.numel());
    const void* w = weights_ ? weights_.get_data_handle() : args.inputs[1]->data();
    dnnl_execute(prim_, {{DNNL_ARG_SRC, &src_md_, args.inputs[0]->data()},
                         {DNNL_ARG_WEIGHTS, &weights_md_, w},
                         {DNNL_ARG_BIAS, has_bias_ ? &bias_md_ : nullptr, has_bias_ ? args.inputs[2]->data() : nullptr},
                         {DNNL_ARG_DST, &dst_md_, y.data()},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, args.workspace}});
  }

 private:
  // The sum post-op adds to what dst holds, so the residual is put there first.
  static void copy(const float* from, float* to, int64_t n) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) { std::memcpy(to + b, from + b, (e - b) * sizeof(float)); });
  }

  dnnl::convolution_forward prim_;
  memory::desc src_md_, weights_md_, bias_md_, dst_md_, scratch_md_;
  memory weights_;
  bool has_bias_ = false, has_residual_ = false;
};

std::unique_ptr<Kernel> make_conv(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return nullptr;
  if (init.inputs[0].shape.size() > 5) {
    *why_not = "oneDNN convolutions have at most 3 spatial dims";
    return nullptr;
  }
  return std::make_unique<ConvKernel>(init, parse_activation(init));
}

}  // namespace

EMBER_KERNEL("Conv", "", 1, kMaxOpset, DeviceKind::Cpu, make_conv);
EMBER_KERNEL("FusedConv", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_conv);

}  // namespace ember
