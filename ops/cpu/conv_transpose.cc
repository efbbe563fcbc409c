// ConvTranspose on oneDNN's deconvolution.
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/registry.h"

namespace ember {

namespace {

using dnnl::memory;

// ONNX weights are [C_in, C_out/group, k...]; oneDNN wants dims (G,) OC, IC, k... — the
// same bytes described by strides.
memory::desc onnx_deconv_weights(const Shape& w, int64_t group) {
  const int64_t ic_g = w[0] / group, oc_g = w[1];
  const int64_t ksz = shape_numel(Shape(w.begin() + 2, w.end()));
  memory::dims dims{oc_g, ic_g}, strides{ksz, oc_g * ksz};
  if (group > 1) {
    dims.insert(dims.begin(), group);
    strides.insert(strides.begin(), ic_g * oc_g * ksz);
  }
  int64_t stride = 1;
  memory::dims k_strides(w.size() - 2);
  for (size_t i = w.size(); i-- > 2;) {
    k_strides[i - 2] = stride;
    stride *= w[i];
  }
  dims.insert(dims.end(), w.begin() + 2, w.end());
  strides.insert(strides.end(), k_strides.begin(), k_strides.end());
  return {dims, memory::data_type::f32, strides};
}

class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(KernelInit& init, const TransposedWindow& t, const Shape& pads_end) {
    const Shape& w = init.inputs[1].shape;
    const int64_t group = init.node.attributes.get_int_or("group", 1);
    const WindowGeometry& g = t.window;
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    src_md_ = plain_f32_desc(init.inputs[0].shape);
    dst_md_ = plain_f32_desc(init.outputs[0].shape);
    bias_md_ = has_bias_ ? plain_f32_desc({w[1] * group}) : memory::desc();
    const memory::desc plain_w = onnx_deconv_weights(w, group);
    const bool const_weights = init.values[1] != nullptr;
    const memory::desc want_w = const_weights ? any_layout(plain_w) : plain_w;
    memory::dims dilations;
    for (int64_t d : g.dilations) dilations.push_back(d - 1);

    const double flops = w[0] > 0 ? 2.0 * static_cast<double>(shape_numel(init.inputs[0].shape)) *
                                        static_cast<double>(shape_numel(w) / w[0])
                                  : 0.0;
    DnnlThreadScope threads(dnnl_threads_for(init.num_threads, flops));
    const dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src_md_, want_w, bias_md_,
        dst_md_, to_dnnl_dims(g.strides), dilations, to_dnnl_dims(g.pads_begin), to_dnnl_dims(pads_end));
    const dnnl::deconvolution_forward::primitive_desc pd(desc, make_dnnl_attr(), dnnl_engine());
    prim_ = dnnl::deconvolution_forward(pd);
    weights_md_ = pd.weights_desc();
    if (const_weights) weights_ = packed_constant(init, 1, plain_w, weights_md_);
    scratch_md_ = pd.scratchpad_desc();
    init.workspace_bytes = scratchpad_bytes(pd);
  }

  void run(const RunArgs& args) const override {
    const void* w = weights_ ? weights_.get_data_handle() : args.inputs[1]->data();
    dnnl_execute(prim_, handles_, {{DNNL_ARG_SRC, &src_md_, args.inputs[0]->data()},
                         {DNNL_ARG_WEIGHTS, &weights_md_, w},
                         {DNNL_ARG_BIAS, has_bias_ ? &bias_md_ : nullptr, has_bias_ ? args.inputs[2]->data() : nullptr},
                         {DNNL_ARG_DST, &dst_md_, args.outputs[0]->data()},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, args.workspace}});
  }

 private:
  dnnl::deconvolution_forward prim_;
  mutable DnnlHandles handles_;
  memory::desc src_md_, weights_md_, bias_md_, dst_md_, scratch_md_;
  memory weights_;
  bool has_bias_ = false;
};

std::unique_ptr<Kernel> make_conv_transpose(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return nullptr;
  const Shape& x = init.inputs[0].shape;
  if (x.size() > 5) {
    *why_not = "oneDNN deconvolutions have at most 3 spatial dims";
    return nullptr;
  }
  const TransposedWindow t =
      transposed_window(init.node, Shape(x.begin() + 2, x.end()), conv_kernel_shape(init.node, init.inputs[1].shape));
  // output_padding adds rows at the end that no input reaches: to oneDNN that is
  // less end padding.
  Shape pads_end = t.window.pads_end;
  for (size_t i = 0; i < pads_end.size(); ++i) pads_end[i] -= t.output_padding[i];
  return std::make_unique<ConvTransposeKernel>(init, t, pads_end);
}

}  // namespace

EMBER_KERNEL("ConvTranspose", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_conv_transpose>);

}  // namespace ember
