// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp and ReduceSumSquare on CUDA: float32 and float16
// (float32 accumulation), and int32/int64 for ReduceSum/Max/Min (int64 accumulation,
// as on the CPU). Axes come from the attribute (older opsets) or from input 1, which
// must then be a plan-time constant; keepdims and noop_with_empty_axes as ONNX has
// them. Any set of axes is taken: reduce_impl.h has the three layouts, reduce_plan.cc
// the choice.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/reduce_impl.h"
#include "ops/cuda/reduce_plan.h"
#include "ops/reduce_params.h"
#include "ops/registry.h"

namespace ember {

namespace {

using cuda::ReduceOp;

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "ReduceSum";
    case ReduceOp::Mean: return "ReduceMean";
    case ReduceOp::Max: return "ReduceMax";
    case ReduceOp::Min: return "ReduceMin";
    case ReduceOp::Prod: return "ReduceProd";
    case ReduceOp::L1: return "ReduceL1";
    case ReduceOp::L2: return "ReduceL2";
    case ReduceOp::LogSum: return "ReduceLogSum";
    case ReduceOp::LogSumExp: return "ReduceLogSumExp";
    case ReduceOp::SumSquare: return "ReduceSumSquare";
  }
  return "Reduce";
}

class ReduceKernel final : public Kernel {
 public:
  explicit ReduceKernel(const cuda::ReduceArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::ReduceArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data();
    cuda::launch_reduce(a, cuda::stream_context(args).stream);
    cuda::check_launch(op_name(a.op));
  }

 private:
  cuda::ReduceArgs args_;
};

template <ReduceOp kOp, bool kAxesInput>
std::unique_ptr<Kernel> make_reduce(KernelInit& init, std::string* why_not) {
  constexpr bool kIntegers = kOp == ReduceOp::Sum || kOp == ReduceOp::Max || kOp == ReduceOp::Min;
  cuda::ReduceArgs a;
  a.op = kOp;
  switch (init.inputs[0].dtype) {
    case DType::Float32: a.dtype = cuda::ReduceDType::Float32; break;
    case DType::Float16: a.dtype = cuda::ReduceDType::Float16; break;
    case DType::Int32: a.dtype = cuda::ReduceDType::Int32; break;
    case DType::Int64: a.dtype = cuda::ReduceDType::Int64; break;
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported on CUDA";
      return nullptr;
  }
  if (!kIntegers && (a.dtype == cuda::ReduceDType::Int32 || a.dtype == cuda::ReduceDType::Int64)) {
    *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported on CUDA for " + op_name(kOp) +
               " (integers only for ReduceSum, ReduceMax, ReduceMin)";
    return nullptr;
  }
  std::vector<bool> mask;
  if (!reduced_mask(init, kAxesInput, &mask)) {
    *why_not = "axes (input 1) is not a plan-time constant";
    return nullptr;
  }
  if (!cuda::plan_reduce(init.inputs[0].shape, mask, &a.layout)) {
    *why_not = "more than " + std::to_string(cuda::kReduceMaxDims) + " kept or reduced runs of dimensions";
    return nullptr;
  }
  return std::make_unique<ReduceKernel>(a);
}

// Up to opset 12 (17 for the ops other than ReduceSum) the axes are an attribute.
#define EMBER_CUDA_REDUCE(name, op, axes_input_since)                                                     \
  EMBER_KERNEL(name, "", 1, axes_input_since - 1, DeviceKind::Cuda, (make_reduce<op, false>));           \
  EMBER_KERNEL(name, "", axes_input_since, kMaxOpset, DeviceKind::Cuda, (make_reduce<op, true>))

EMBER_CUDA_REDUCE("ReduceSum", ReduceOp::Sum, 13);
EMBER_CUDA_REDUCE("ReduceMean", ReduceOp::Mean, 18);
EMBER_CUDA_REDUCE("ReduceMax", ReduceOp::Max, 18);
EMBER_CUDA_REDUCE("ReduceMin", ReduceOp::Min, 18);
EMBER_CUDA_REDUCE("ReduceProd", ReduceOp::Prod, 18);
EMBER_CUDA_REDUCE("ReduceL1", ReduceOp::L1, 18);
EMBER_CUDA_REDUCE("ReduceL2", ReduceOp::L2, 18);
EMBER_CUDA_REDUCE("ReduceLogSum", ReduceOp::LogSum, 18);
EMBER_CUDA_REDUCE("ReduceLogSumExp", ReduceOp::LogSumExp, 18);
EMBER_CUDA_REDUCE("ReduceSumSquare", ReduceOp::SumSquare, 18);

}  // namespace

}  // namespace ember
