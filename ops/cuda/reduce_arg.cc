// ArgMax and ArgMin on CUDA: float32, float16, int32 and int64 inputs, int64 output,
// keepdims (the output layout is the same either way) and select_last_index (opset
// 12+); the CPU kernel's answer also where values tie or are NaN
// (reduce_arg_impl.h says how).
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/reduce_arg_impl.h"
#include "ops/registry.h"

namespace ember {

namespace {

class ArgReduceKernel final : public Kernel {
 public:
  explicit ArgReduceKernel(const cuda::ArgReduceArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::ArgReduceArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data_as<int64_t>();
    cuda::launch_arg_reduce(a, cuda::stream_context(args).stream);
    cuda::check_launch(a.max ? "ArgMax" : "ArgMin");
  }

 private:
  cuda::ArgReduceArgs args_;
};

template <bool kMax>
std::unique_ptr<Kernel> make_arg_reduce(KernelInit& init, std::string* why_not) {
  cuda::ArgReduceArgs a;
  switch (init.inputs[0].dtype) {
    case DType::Float32: a.dtype = cuda::ArgReduceDType::Float32; break;
    case DType::Float16: a.dtype = cuda::ArgReduceDType::Float16; break;
    case DType::BFloat16: a.dtype = cuda::ArgReduceDType::BFloat16; break;
    case DType::Int32: a.dtype = cuda::ArgReduceDType::Int32; break;
    case DType::Int64: a.dtype = cuda::ArgReduceDType::Int64; break;
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) +
                 " is not supported on CUDA (float32, float16, int32 and int64 are)";
      return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.node.attributes.get_int_or("axis", 0);
  if (axis < -rank || axis >= rank) init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  a.max = kMax;
  a.last = init.node.attributes.get_int_or("select_last_index", 0) != 0;
  a.outer = 1;
  a.inner = 1;
  for (int64_t d = 0; d < axis; ++d) a.outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) a.inner *= x[d];
  a.n = x[axis];
  if (a.n == 0 && a.outer * a.inner > 0) init.fail("cannot take the arg-extreme of an empty axis");
  return std::make_unique<ArgReduceKernel>(a);
}

}  // namespace

EMBER_KERNEL("ArgMax", "", 1, kMaxOpset, DeviceKind::Cuda, make_arg_reduce<true>);
EMBER_KERNEL("ArgMin", "", 1, kMaxOpset, DeviceKind::Cuda, make_arg_reduce<false>);

}  // namespace ember
