// Softmax and LogSoftmax on CUDA (float32, float16 and bfloat16 storage, float32
// math).
//
// Opsets 1-12 coerce the input to 2-D at `axis` (default 1) and normalize each row of
// prod(dims[axis:]) elements; opset 13+ normalizes along the one dimension `axis`
// (default -1). Both become [outer, n, inner] at plan time by graph/schemas/norm.h,
// as on the CPU; softmax_impl.h says which kernel takes which shape.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/softmax_impl.h"
#include "graph/schemas/norm.h"
#include "ops/registry.h"

namespace ember {

namespace {

class SoftmaxKernel final : public Kernel {
 public:
  explicit SoftmaxKernel(const cuda::SoftmaxArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::SoftmaxArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data();
    cuda::launch_softmax(a, cuda::stream_context(args).stream);
    cuda::check_launch(a.log ? "LogSoftmax" : "Softmax");
  }

 private:
  cuda::SoftmaxArgs args_;
};

template <bool kLog>
std::unique_ptr<Kernel> make_softmax(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  cuda::SoftmaxArgs a;
  if (!cuda::float_storage(dtype, &a.storage)) {
    *why_not = std::string(dtype_name(dtype)) + " is not supported on CUDA (float32, float16 and bfloat16 are)";
    return nullptr;
  }
  const SoftmaxShape s = softmax_shape(infer_context(init));
  a.log = kLog;
  a.outer = s.outer;
  a.n = s.n;
  a.inner = s.inner;
  return std::make_unique<SoftmaxKernel>(a);
}

}  // namespace

EMBER_KERNEL("Softmax", "", 1, kMaxOpset, DeviceKind::Cuda, make_softmax<false>);
EMBER_KERNEL("LogSoftmax", "", 1, kMaxOpset, DeviceKind::Cuda, make_softmax<true>);

}  // namespace ember
