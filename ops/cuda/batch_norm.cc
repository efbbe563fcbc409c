// BatchNormalization in inference mode on CUDA: y = x * a[c] + b[c] with a = scale /
// sqrt(var + eps), b = bias - mean * a, folded per run into the workspace (a C-thread
// kernel) so that statistics need not be constants, then one pass over X.
#include "graph/schemas/norm.h"
#include "ops/cuda/batch_norm_impl.h"
#include "ops/cuda/cuda_common.h"
#include "ops/registry.h"

namespace ember {

namespace {

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const cuda::BatchNormArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::BatchNormArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data();
    a.scale = args.inputs[1]->data();
    a.bias = args.inputs[2]->data();
    a.mean = args.inputs[3]->data();
    a.var = args.inputs[4]->data();
    a.folded = static_cast<float*>(args.workspace);
    cuda::launch_batch_norm(a, cuda::stream_context(args).stream);
    cuda::check_launch("BatchNormalization");
  }

 private:
  cuda::BatchNormArgs args_;
};

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

std::unique_ptr<Kernel> make_batch_norm(KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < 5; ++i)
    if (!is_float(init.inputs[i].dtype)) {
      *why_not = "BatchNormalization on CUDA takes float32, float16 and bfloat16, input " + std::to_string(i) +
                 " is " + dtype_name(init.inputs[i].dtype);
      return nullptr;
    }
  BatchNormParams p;
  if (!batch_norm_params(infer_context(init), &p, why_not)) return nullptr;
  if (p.lanes != 1) {
    *why_not = "the blocked layout is the CPU's";
    return nullptr;
  }
  if (!init.node.attributes.get_string_or("activation", "").empty()) {
    *why_not = "a fused activation is the CPU's";
    return nullptr;
  }
  if (init.inputs[1].dtype != init.inputs[2].dtype || init.inputs[3].dtype != init.inputs[4].dtype) {
    *why_not = "scale and B, or mean and var, differ in type";
    return nullptr;
  }
  cuda::BatchNormArgs a;
  cuda::float_storage(init.inputs[0].dtype, &a.x_storage);
  cuda::float_storage(init.inputs[1].dtype, &a.scale_bias_storage);
  cuda::float_storage(init.inputs[3].dtype, &a.stats_storage);
  a.epsilon = p.epsilon;
  a.outer = p.outer;
  a.channels = p.channels;
  a.inner = p.inner;
  init.workspace_bytes = 2 * static_cast<size_t>(a.channels) * sizeof(float);
  return std::make_unique<BatchNormKernel>(a);
}

}  // namespace

EMBER_KERNEL("BatchNormalization", "", 1, kMaxOpset, DeviceKind::Cuda, make_batch_norm);
// X [N, H, W, C] as [N*H*W, C, 1]: the same kernel.
EMBER_KERNEL("NhwcBatchNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_batch_norm);

}  // namespace ember
