// ConvTranspose on cuDNN: a transposed convolution is the data gradient of the
// convolution whose input is Y and whose output is X, with ONNX's weights
// [C_in, C_out/group, k...] as that convolution's filter [K, C/group, k...].
//
// Symmetric pads without output_padding map onto cuDNN directly. Otherwise cuDNN
// writes the full, unpadded result (s * (in - 1) + dilated kernel per dim) into the
// workspace and a shifted copy crops pads_begin, drops pads_end and zero-fills what no
// input reaches (output_padding, or an output_shape larger than the full result).
// The bias is one epilogue pass.
#include "graph/schemas/window.h"
#include "ops/cuda/conv_cudnn.h"
#include "ops/cuda/conv_impl.h"
#include "ops/cuda/conv_plan.h"
#include "ops/cuda/dense_epilogue_impl.h"
#include "ops/registry.h"

#include <algorithm>
#include <vector>

namespace ember {

namespace {

using cuda::check;

class ConvTransposeKernel final : public Kernel {
 public:
  bool plan(KernelInit& init, const TransposedWindow& t, std::string* why_not) {
    const DType dtype = init.inputs[0].dtype;
    const Shape& x = init.inputs[0].shape;
    const Shape& w = init.inputs[1].shape;
    const Shape& y = init.outputs[0].shape;
    const WindowGeometry& g = t.window;
    const int64_t group = init.node.attributes.get_int_or("group", 1);
    cuda::float_storage(dtype, &storage_);
    half_ = storage_ != cuda::FloatStorage::Float32;  // 16-bit: tensor-op math
    esize_ = half_ ? 2 : 4;
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    y_numel_ = shape_numel(y);

    const cuda::DeconvGeometry geometry = cuda::deconv_geometry(x, y, t);
    direct_ = geometry.direct;
    crop_ = geometry.crop;
    const Shape& full = geometry.full;  // what cuDNN writes
    Shape xd = x, wd = w, fd = full;
    if (!cuda::set_conv_desc(conv_desc_, half_, group, geometry.pads, g.strides, g.dilations, &xd, &wd, &fd, why_not))
      return false;
    cuda::set_packed(dy_desc_, dtype, xd);
    cuda::set_filter(w_desc_, dtype, wd);
    cuda::set_packed(dx_desc_, dtype, fd);
    // The forward convolution of `full` must give back X's shape exactly (its output
    // channels are the filter's K = C_in).
    std::vector<int> out(fd.size());
    check(cudnnGetConvolutionNdForwardOutputDim(conv_desc_.get(), dx_desc_.get(), w_desc_.get(),
                                                static_cast<int>(out.size()), out.data()),
          "cudnnGetConvolutionNdForwardOutputDim");
    if (Shape(out.begin(), out.end()) != xd) {
      *why_not = "cuDNN's convolution of the output shape " + shape_to_string(fd) + " is " +
                 shape_to_string(Shape(out.begin(), out.end())) + ", not X's " + shape_to_string(xd);
      return false;
    }
    if (has_bias_) {
      epilogue_.bias_inner = y_numel_ / (y[0] * y[1]);
      epilogue_.bias_count = y[1];
    }

    const cuda::StreamContext& ctx = cuda::stream_context(init);
    int max_count = 0;
    check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(ctx.cudnn, &max_count),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
    int returned = 0;
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn, w_desc_.get(), dy_desc_.get(), conv_desc_.get(),
                                                      dx_desc_.get(), static_cast<int>(perf.size()), &returned,
                                                      perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    bool found = false;
    for (int i = 0; i < returned && !found; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      // As in Conv: run with the math type the heuristic paired with the algorithm.
      if (!cuda::usable_math_type(half_, perf[i].mathType)) continue;
      check(cudnnSetConvolutionMathType(conv_desc_.get(), perf[i].mathType), "cudnnSetConvolutionMathType");
      size_t bytes = 0;
      if (cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn, w_desc_.get(), dy_desc_.get(), conv_desc_.get(),
                                                       dx_desc_.get(), perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > cuda::kConvWorkspaceLimit)
        continue;
      algo_ = perf[i].algo;
      cudnn_workspace_ = bytes;
      found = true;
    }
    if (!found) {
      *why_not = "cuDNN offers no backward-data algorithm for this transposed convolution within " +
                 std::to_string(cuda::kConvWorkspaceLimit >> 20) + " MiB of workspace";
      return false;
    }
    // [cuDNN's scratch, raised to 256 bytes | the full-size result when cropped]
    full_at_ = cuda::align_up(cudnn_workspace_ + cuda::kScratchSlack);
    init.workspace_bytes = direct_ ? cudnn_workspace_ + cuda::kScratchSlack
                                   : full_at_ + static_cast<size_t>(shape_numel(full)) * esize_;
    return true;
  }

  void run(const RunArgs& args) const override {
    const cuda::StreamContext& ctx = cuda::stream_context(args);
    void* y = args.outputs[0]->data();
    void* dst = direct_ ? y : static_cast<char*>(args.workspace) + full_at_;
    const float one = 1.f, zero = 0.f;
    check(cudnnConvolutionBackwardData(ctx.cudnn, &one, w_desc_.get(), args.inputs[1]->data(), dy_desc_.get(),
                                       args.inputs[0]->data(), conv_desc_.get(), algo_,
                                       cuda::scratch_start(args.workspace), cudnn_workspace_, &zero, dx_desc_.get(), dst),
          "cudnnConvolutionBackwardData");
    if (!direct_) {
      cuda::ShiftCopyArgs c = crop_;
      c.x = dst;
      c.y = y;
      cuda::launch_shift_copy(static_cast<int>(esize_), c, ctx.stream);
      cuda::check_launch("ConvTranspose crop");
    }
    if (has_bias_) {
      cuda::EpilogueArgs e = epilogue_;
      e.y = y;
      e.n = y_numel_;
      e.bias = args.inputs[2]->data();
      cuda::launch_epilogue(storage_, e, ctx.stream);
      cuda::check_launch("ConvTranspose bias");
    }
  }

 private:
  cuda::TensorDesc dy_desc_, dx_desc_;
  cuda::FilterDesc w_desc_;
  cuda::ConvDesc conv_desc_;
  cudnnConvolutionBwdDataAlgo_t algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t cudnn_workspace_ = 0, full_at_ = 0, esize_ = 4;
  cuda::FloatStorage storage_ = cuda::FloatStorage::Float32;
  bool half_ = false, direct_ = true, has_bias_ = false;
  int64_t y_numel_ = 0;
  cuda::ShiftCopyArgs crop_;
  cuda::EpilogueArgs epilogue_;
};

std::unique_ptr<Kernel> make_conv_transpose(KernelInit& init, std::string* why_not) {
  if (!cuda::conv_inputs_supported(init, "ConvTranspose", "transposed convolutions", why_not)) return nullptr;
  const Shape& x = init.inputs[0].shape;
  if (shape_numel(x) == 0 || shape_numel(init.outputs[0].shape) == 0) {
    *why_not = "an empty input or output";
    return nullptr;
  }
  const TransposedWindow tw =
      transposed_window(init.node, Shape(x.begin() + 2, x.end()), conv_kernel_shape(init.node, init.inputs[1].shape));
  auto kernel = std::make_unique<ConvTransposeKernel>();
  if (!kernel->plan(init, tw, why_not)) return nullptr;
  return kernel;
}

}  // namespace

EMBER_KERNEL("ConvTranspose", "", 1, kMaxOpset, DeviceKind::Cuda, make_conv_transpose);

}  // namespace ember
