// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp and ReduceSumSquare on CUDA: float32 and float16
// (float32 accumulation), and int32/int64 for ReduceSum/Max/Min (int64 accumulation,
// as on the CPU). Axes come from the attribute (older opsets) or from input 1, which
// must then be a plan-time constant; keepdims and noop_with_empty_axes as ONNX has
// them. Any set of axes is taken: reduce_impl.h has the three layouts, reduce_plan.cc
// the choice.
#include "graph/schemas/reduce.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/reduce_impl.h"
#include "ops/cuda/reduce_plan.h"
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

template <ReduceOp kOp>
std::unique_ptr<Kernel> make_reduce(KernelInit& init, std::string* why_not) {
  constexpr bool kIntegers = kOp == ReduceOp::Sum || kOp == ReduceOp::Max || kOp == ReduceOp::Min;
  cuda::ReduceArgs a;
  a.op = kOp;
  switch (init.inputs[0].dtype) {
    case DType::Float32: a.dtype = cuda::ReduceDType::Float32; break;
    case DType::Float16: a.dtype = cuda::ReduceDType::Float16; break;
    case DType::BFloat16: a.dtype = cuda::ReduceDType::BFloat16; break;
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
  const InferContext ctx = infer_context(init);
  if (!reduce_axes_known(ctx)) {
    *why_not = "axes (input 1) is not a plan-time constant";
    return nullptr;
  }
  if (!cuda::plan_reduce(init.inputs[0].shape, reduced_dims(ctx), &a.layout)) {
    *why_not = "more than " + std::to_string(cuda::kReduceMaxDims) + " kept or reduced runs of dimensions";
    return nullptr;
  }
  return std::make_unique<ReduceKernel>(a);
}

// Whether the axes are an attribute or input 1 (by opset) is the schema's business
// (graph/schemas/reduce.h): one kernel for every opset.
#define EMBER_CUDA_REDUCE(name, op) EMBER_KERNEL(name, "", 1, kMaxOpset, DeviceKind::Cuda, make_reduce<op>)

EMBER_CUDA_REDUCE("ReduceSum", ReduceOp::Sum);
EMBER_CUDA_REDUCE("ReduceMean", ReduceOp::Mean);
EMBER_CUDA_REDUCE("ReduceMax", ReduceOp::Max);
EMBER_CUDA_REDUCE("ReduceMin", ReduceOp::Min);
EMBER_CUDA_REDUCE("ReduceProd", ReduceOp::Prod);
EMBER_CUDA_REDUCE("ReduceL1", ReduceOp::L1);
EMBER_CUDA_REDUCE("ReduceL2", ReduceOp::L2);
EMBER_CUDA_REDUCE("ReduceLogSum", ReduceOp::LogSum);
EMBER_CUDA_REDUCE("ReduceLogSumExp", ReduceOp::LogSumExp);
EMBER_CUDA_REDUCE("ReduceSumSquare", ReduceOp::SumSquare);

}  // namespace

}  // namespace ember
