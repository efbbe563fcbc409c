// Conv and com.ember FusedConv (bias, residual Z, activation) on cuDNN's legacy
// convolution API. Descriptors and the algorithm are fixed at plan time. cuDNN pads
// symmetrically: asymmetric ONNX pads (explicit, or from auto_pad SAME_*) put the
// extra rows into a zero-padded copy of X in the workspace. 1-D convolutions run as
// 2-D ones with a unit height.
//
// com.ember NhwcConv (the layout planning's channels-last Conv, X/Y/Z as [N, H, W, C],
// W still [K, C / group, R, S]) runs on cuDNN's NHWC kernels, where float16 and bfloat16
// meet the tensor cores without cuDNN transposing each tensor in and out. W goes to KRSC
// (nothing to do for 1x1 filters): a session weight once, at plan time, into device
// memory every plan shares (PackedWeights); a W known only at run time into the
// workspace each run. A 16-bit X whose channels are not a multiple of 8 (an image
// stem's C = 3) is copied with zero channels up to the next multiple, and a packed W
// gets the same zero channels, since cuDNN reaches the tensor cores only then; where
// the convolution is strided and s * s * C <= 32, the copy is a space-to-depth one
// instead, and cuDNN runs a stride-1 convolution over 32 channels (conv_plan.h says
// why; EMBER_CUDA_SPACE_TO_DEPTH=0 turns it off, to compare).
//
// The algorithm is timed at plan time (conv_algorithm.h).
//
// After the convolution: bias + Relu (+ Z) is cudnnConvolutionBiasActivationForward
// (falling back to the unfused path where cuDNN refuses it); every other combination
// is cudnnConvolutionForward followed by one epilogue pass (bias, residual and
// activation in a single launch).
#include "graph/elementwise_table.h"
#include "graph/schemas/window.h"
#include "ops/cuda/conv_algorithm.h"
#include "ops/cuda/conv_cudnn.h"
#include "ops/cuda/conv_impl.h"
#include "ops/cuda/conv_plan.h"
#include "ops/cuda/dense_epilogue_impl.h"
#include "ops/cuda/movement_impl.h"
#include "ops/registry.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ember {

namespace {

using cuda::check;

// `host` copied into device memory of its own on `device` (the current one at plan
// time), freed with the last owner.
std::shared_ptr<void> upload(const Tensor& host, int device) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(host.nbytes(), 1)), "allocating a KRSC filter on the GPU");
  std::shared_ptr<void> memory(p, [device](void* q) {
    cudaSetDevice(device);
    cudaFree(q);
  });
  // As the backend's weight uploads: a pageable copy may return before its DMA lands,
  // and the plan and run streams do not wait for the legacy stream.
  check(cudaMemcpy(p, host.data(), host.nbytes(), cudaMemcpyHostToDevice), "copying a KRSC filter to the GPU");
  check(cudaDeviceSynchronize(), "copying a KRSC filter to the GPU");
  return memory;
}

class ConvKernel final : public Kernel {
 public:
  // `x` and `y` in NCHW order whatever the layout (make_conv checked y is the
  // convolution's).
  bool plan(KernelInit& init, const cuda::Activation& act, const WindowGeometry& g, const Shape& x, const Shape& y,
            Layout layout, std::string* why_not) {
    const DType t = init.inputs[0].dtype;
    const Shape& w = init.inputs[1].shape;
    const int64_t group = init.node.attributes.get_int_or("group", 1);
    cuda::float_storage(t, &storage_);
    half_ = storage_ != cuda::FloatStorage::Float32;  // 16-bit: tensor cores, channels padded to 8
    esize_ = half_ ? 2 : 4;
    channels_last_ = layout == Layout::ChannelsLast;
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    has_residual_ = init.inputs.size() > 3 && init.inputs[3].present();
    y_numel_ = shape_numel(y);
    if (y_numel_ == 0) return true;

    // The symmetric part of the pads to cuDNN, the rest (and any zero channels) into a
    // padded copy of X; or X's space-to-depth copy, with no pads or strides left.
    const bool packable = channels_last_ && packable_filter(init);
    const bool few_channels = packable && half_ && group == 1 && x[1] % 8 != 0;
    space_to_depth_ = few_channels && space_to_depth_allowed() && cuda::space_to_depth_applies(x, w, g, group);
    padded_channels_ = few_channels && !space_to_depth_;
    channels_ = padded_channels_ ? (x[1] + 7) / 8 * 8 : x[1];
    Shape xpad, wd = w, yd = y, strides = g.strides, dilations = g.dilations;
    std::vector<int64_t> pads;
    if (space_to_depth_) {
      const cuda::SpaceToDepthConv rewritten = cuda::space_to_depth_conv(x, w, g);
      xpad = rewritten.x;
      wd = rewritten.w;
      pads.assign(2, 0);
      strides = dilations = {1, 1};
      space_to_depth_args_ = rewritten.copy;
      space_to_depth_taps_ = cuda::space_to_depth_taps(rewritten.copy);
      pad_ = true;
    } else {
      const cuda::ConvPadding padding =
          channels_last_ ? cuda::conv_padding_nhwc(x, g, channels_) : cuda::conv_padding(x, g);
      pad_ = padding.copy;
      pad_args_ = padding.copy_args;
      xpad = padding.padded_x;
      pads = padding.symmetric;
      if (padded_channels_) wd[1] = channels_;
    }
    if (!cuda::set_conv_desc(conv_desc_, half_, group, pads, strides, dilations, &xpad, &wd, &yd, why_not))
      return false;
    if (channels_last_) {
      cuda::set_nhwc(x_desc_, t, xpad);
      cuda::set_nhwc_filter(w_desc_, t, wd);
      cuda::set_nhwc(y_desc_, t, yd);
      plan_filter_transpose(wd);
      if (packable && (transpose_filter_ || padded_channels_ || space_to_depth_)) pack_filter(init, wd);
    } else {
      cuda::set_packed(x_desc_, t, xpad);
      cuda::set_filter(w_desc_, t, wd);
      cuda::set_packed(y_desc_, t, yd);
    }
    std::vector<int> out(yd.size());
    check(cudnnGetConvolutionNdForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(),
                                                static_cast<int>(out.size()), out.data()),
          "cudnnGetConvolutionNdForwardOutputDim");
    if (Shape(out.begin(), out.end()) != yd) {
      *why_not = "cuDNN computes the output shape " + shape_to_string(Shape(out.begin(), out.end())) + ", ONNX " +
                 shape_to_string(yd);
      return false;
    }

    // The epilogue pass: the whole tail when not fused, and the fallback should cuDNN
    // refuse the fused call for this geometry at run time.
    if (has_bias_) {  // epilogue_.bias is set per run
      epilogue_.bias_inner = channels_last_ ? 1 : y_numel_ / (y[0] * y[1]);
      epilogue_.bias_count = y[1];
    }
    if (has_residual_) {
      epilogue_.add_cols = y_numel_;
      epilogue_.add_row_stride = 0;
      epilogue_.add_col_stride = 1;
    }
    epilogue_.act = act;
    epilogue_needed_ = has_bias_ || has_residual_ || act.kind != cuda::Activation::Kind::None;

    const cuda::StreamContext& ctx = cuda::stream_context(init);
    // Everything the descriptors hold, for the process-wide cache of timed choices.
    std::string key = std::string(dtype_name(t)) + (channels_last_ ? " nhwc" : " nchw") + " x" +
                      shape_to_string(xpad) + " w" + shape_to_string(wd) + " y" + shape_to_string(yd) + " pads" +
                      shape_to_string(Shape(pads.begin(), pads.end())) + " strides" + shape_to_string(strides) +
                      " dilations" + shape_to_string(dilations) + " group " +
                      std::to_string(group) + " cuda:" + std::to_string(ctx.device);
    cuda::ForwardAlgorithm chosen;
    if (!cuda::choose_forward_algorithm(ctx, x_desc_, w_desc_, conv_desc_, y_desc_, half_, key, &chosen)) {
      *why_not = "cuDNN offers no forward algorithm for this convolution within " +
                 std::to_string(cuda::kConvWorkspaceLimit >> 20) + " MiB of workspace";
      return false;
    }
    algo_ = chosen.algo;
    cudnn_workspace_ = chosen.workspace;
    plan_fused_call(act, yd, w[0], t);
    // [cuDNN's scratch, raised to 256 bytes | the padded copy of X | W as KRSC]
    pad_at_ = cuda::align_up(cudnn_workspace_ + cuda::kScratchSlack);
    filter_at_ = pad_ ? cuda::align_up(pad_at_ + static_cast<size_t>(shape_numel(xpad)) * esize_) : pad_at_;
    init.workspace_bytes = filter_at_ + (transpose_filter_ ? static_cast<size_t>(shape_numel(wd)) * esize_ : 0);
    return true;
  }

  void run(const RunArgs& args) const override {
    if (y_numel_ == 0) return;
    const cuda::StreamContext& ctx = cuda::stream_context(args);
    const void* x = args.inputs[0]->data();
    if (pad_) x = copy_input(x, static_cast<char*>(args.workspace) + pad_at_, ctx.stream);
    const void* w = packed_filter_ ? packed_filter_.get() : args.inputs[1]->data();
    if (transpose_filter_) {
      void* krsc = static_cast<char*>(args.workspace) + filter_at_;
      cuda::launch_tiled_transpose(filter_transpose_, w, krsc, ctx.stream);
      cuda::check_launch("Conv filter to KRSC");
      w = krsc;
    }
    void* y = args.outputs[0]->data();
    void* scratch = cuda::scratch_start(args.workspace);
    const float one = 1.f, zero = 0.f;
    if (fused_ && !fused_refused_.load(std::memory_order_relaxed)) {
      // y = relu(conv(x) + alpha2 * z + bias). The API wants a z: without a residual
      // it is y itself with alpha2 = 0 (what PyTorch and ONNX Runtime pass for conv +
      // bias + relu).
      const float alpha2 = has_residual_ ? 1.f : 0.f;
      const void* z = has_residual_ ? args.inputs[3]->data() : y;
      const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
          ctx.cudnn, &one, x_desc_.get(), x, w_desc_.get(), w, conv_desc_.get(), algo_, scratch, cudnn_workspace_,
          &alpha2, y_desc_.get(), z, bias_desc_.get(), args.inputs[2]->data(), activation_desc_.get(), y_desc_.get(), y);
      if (status == CUDNN_STATUS_SUCCESS) return;
      // cuDNN decides what the fused call supports (algorithm, dims, bias type) only
      // when called; it refuses before launching anything, so the unfused path below is
      // still correct (ONNX Runtime's FusedConv falls back on any failure). A parameter
      // the plain convolution shares is still reported there. Remembered, so later runs
      // go straight to it.
      const int category = CUDNN_STATUS_CATEGORY(status);
      if (category != CUDNN_STATUS_NOT_SUPPORTED && category != CUDNN_STATUS_BAD_PARAM)
        check(status, "cudnnConvolutionBiasActivationForward");
      fused_refused_.store(true, std::memory_order_relaxed);
    }
    check(cudnnConvolutionForward(ctx.cudnn, &one, x_desc_.get(), x, w_desc_.get(), w, conv_desc_.get(), algo_,
                                  scratch, cudnn_workspace_, &zero, y_desc_.get(), y),
          "cudnnConvolutionForward");
    if (epilogue_needed_) {
      cuda::EpilogueArgs e = epilogue_;
      e.y = y;
      e.n = y_numel_;
      e.bias = has_bias_ ? args.inputs[2]->data() : nullptr;
      e.add = has_residual_ ? args.inputs[3]->data() : nullptr;
      cuda::launch_epilogue(storage_, e, ctx.stream);
      cuda::check_launch("Conv epilogue");
    }
  }

 private:
  // X's padded or space-to-depth copy, written to `into`.
  const void* copy_input(const void* x, void* into, cudaStream_t stream) const {
    if (space_to_depth_) {
      cuda::SpaceToDepthArgs p = space_to_depth_args_;
      p.x = x;
      p.y = into;
      cuda::launch_space_to_depth(static_cast<int>(esize_), p, space_to_depth_taps_, stream);
    } else {
      cuda::ShiftCopyArgs p = pad_args_;
      p.x = x;
      p.y = into;
      cuda::launch_shift_copy(static_cast<int>(esize_), p, stream);
    }
    cuda::check_launch(space_to_depth_ ? "Conv input space-to-depth" : "Conv input padding");
    return into;
  }

  // cuDNN's fused call, y = act(conv(x) + alpha2 * z + bias), where it takes the
  // activation: Relu, or none (identity, which cuDNN runs only with
  // IMPLICIT_PRECOMP_GEMM). ResNet's downsampling convolutions (bias, no activation)
  // then need no epilogue pass: on the H200 those 4 passes took 110 us of ResNet-50's
  // 1.93 ms at b64.
  void plan_fused_call(const cuda::Activation& act, const Shape& y, int64_t k, DType t) {
    const bool identity =
        act.kind == cuda::Activation::Kind::None && algo_ == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    fused_ = has_bias_ && (act.is(ew::UnaryFunction::Relu) || identity);
    if (!fused_) return;
    Shape bias_shape(y.size(), 1);
    bias_shape[1] = k;
    cuda::set_packed(bias_desc_, t, bias_shape);
    check(cudnnSetActivationDescriptor(activation_desc_.get(), identity ? CUDNN_ACTIVATION_IDENTITY : CUDNN_ACTIVATION_RELU,
                                       CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
  }

  // Whether W is a session weight, on the host at plan time (the planner hands kernels
  // the initializer). Anything else, such as a W computed at run time, stays with the
  // per-run transpose.
  static bool packable_filter(const KernelInit& init) {
    const Tensor* w = init.values.size() > 1 ? init.values[1] : nullptr;
    return init.is_weight(1) && w && w->data() && w->dtype() == init.inputs[0].dtype;
  }

  // W as KRSC (with zero channels up to channels_ where padded_channels_, or as the
  // space-to-depth filter), `filter` ([K, C, R, S] as cuDNN reads it), made once and
  // held on the device (PackedWeights, so every plan of the session shares it); then no
  // run transposes it.
  void pack_filter(KernelInit& init, const Shape& filter) {
    const Tensor& w = *init.values[1];
    const int device = cuda::stream_context(init).device;
    const int64_t stride = space_to_depth_args_.stride, c = w.shape()[1], channels = filter[1];
    std::string form = "cuda:" + std::to_string(device) + " KRSC";
    if (space_to_depth_) form += " space-to-depth " + std::to_string(stride);
    else if (channels != c) form += " with " + std::to_string(channels) + " channels";
    const size_t bytes = static_cast<size_t>(shape_numel(filter)) * esize_;
    packed_filter_ = init.packed_weights->get(
        w, form, bytes,
        [&] {
          return upload(space_to_depth_ ? cuda::filter_to_space_to_depth_krsc(w, stride)
                                        : cuda::filter_to_krsc(w, channels),
                        device);
        },
        init.device);
    transpose_filter_ = false;
  }

  // EMBER_CUDA_SPACE_TO_DEPTH=0 keeps image stems on the zero-channel copy, to compare.
  static bool space_to_depth_allowed() {
    static const bool allowed = [] {
      const char* v = std::getenv("EMBER_CUDA_SPACE_TO_DEPTH");
      return !(v && std::string(v) == "0");
    }();
    return allowed;
  }

  // W [K, C, R, S] -> [K, R, S, C]: per k, the [C, RS] matrix transposed.
  void plan_filter_transpose(const Shape& w) {
    const int64_t k = w[0], c = w[1], rs = w[2] * w[3];
    transpose_filter_ = rs > 1 && c > 1;  // else the two orders are the same bytes
    if (!transpose_filter_) return;
    cuda::TiledTranspose& t = filter_transpose_;
    t.unit = static_cast<int32_t>(esize_);
    t.size_a = rs;  // the input's innermost dim
    t.out_stride_a = c;
    t.size_b = c;  // the output's innermost dim
    t.in_stride_b = rs;
    t.batch_rank = 1;
    t.batches = k;
    t.batch_dims[0] = k;
    t.batch_in_strides[0] = c * rs;
    t.batch_out_strides[0] = c * rs;
  }

  cuda::TensorDesc x_desc_, y_desc_, bias_desc_;
  cuda::FilterDesc w_desc_;
  cuda::ConvDesc conv_desc_;
  cuda::ActivationDesc activation_desc_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t cudnn_workspace_ = 0, pad_at_ = 0, filter_at_ = 0, esize_ = 4;
  cuda::FloatStorage storage_ = cuda::FloatStorage::Float32;
  bool half_ = false, pad_ = false, fused_ = false, has_bias_ = false, has_residual_ = false;
  bool channels_last_ = false, transpose_filter_ = false;
  cuda::TiledTranspose filter_transpose_;
  std::shared_ptr<void> packed_filter_;  // W as KRSC on the device, when W is a session weight
  bool epilogue_needed_ = false;
  mutable std::atomic<bool> fused_refused_{false};  // cuDNN said NOT_SUPPORTED to the fused call
  int64_t y_numel_ = 0;
  int64_t channels_ = 0;  // of X as cuDNN reads it: C, or C with zero channels added
  bool padded_channels_ = false;  // X and W get zero channels up to channels_ (group 1)
  bool space_to_depth_ = false;   // X and W rewritten by space-to-depth (conv_plan.h)
  cuda::ShiftCopyArgs pad_args_;
  cuda::SpaceToDepthArgs space_to_depth_args_;
  cuda::SpaceToDepthTaps space_to_depth_taps_{};
  cuda::EpilogueArgs epilogue_;
};

// NHWC [N, H, W, C] as the NCHW-ordered dims cuDNN's descriptors take.
Shape nchw_order(const Shape& nhwc) { return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]}; }

template <Layout kLayout = Layout::ChannelsFirst>
std::unique_ptr<Kernel> make_conv(KernelInit& init, std::string* why_not) {
  if (!cuda::conv_inputs_supported(init, "Conv", "convolutions", why_not)) return nullptr;
  const bool last = kLayout == Layout::ChannelsLast;
  if (last && init.inputs[0].shape.size() != 4) {
    *why_not = "channels-last convolutions on CUDA are 2-D";
    return nullptr;
  }
  const Shape x = last ? nchw_order(init.inputs[0].shape) : init.inputs[0].shape;
  cuda::Activation act;
  if (!fused_activation_of(init.node, &act, why_not)) return nullptr;
  const WindowGeometry g =
      forward_window(init.node, Shape(x.begin() + 2, x.end()), conv_kernel_shape(init.node, init.inputs[1].shape), false);
  Shape y{x[0], init.inputs[1].shape[0]};
  y.insert(y.end(), g.out.begin(), g.out.end());
  const Shape y_stored = last ? Shape{y[0], y[2], y[3], y[1]} : y;
  const bool has_residual = init.inputs.size() > 3 && init.inputs[3].present();
  if (init.outputs[0].shape != y_stored || (has_residual && init.inputs[3].shape != y_stored)) {
    *why_not = "the residual input broadcasts; the fused sum needs the output's shape";
    return nullptr;
  }
  auto kernel = std::make_unique<ConvKernel>();
  if (!kernel->plan(init, act, g, x, y, kLayout, why_not)) return nullptr;
  return kernel;
}

}  // namespace

EMBER_KERNEL("Conv", "", 1, kMaxOpset, DeviceKind::Cuda, make_conv<>);
EMBER_KERNEL("FusedConv", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_conv<>);
EMBER_KERNEL("NhwcConv", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_conv<Layout::ChannelsLast>);

}  // namespace ember
