#include "ops/cuda/elementwise.h"

#include "graph/elementwise_table.h"
#include "ops/broadcast_plan.h"
#include "ops/cuda/cuda_common.h"

#include <functional>
#include <limits>

namespace ember::cuda {

bool to_ew_type(DType dtype, EwType* type) {
  switch (dtype) {
    case DType::Float32: *type = EwType::F32; return true;
    case DType::Float16: *type = EwType::F16; return true;
    case DType::BFloat16: *type = EwType::BF16; return true;
    case DType::Int32: *type = EwType::I32; return true;
    case DType::Int64: *type = EwType::I64; return true;
    case DType::Int8: *type = EwType::I8; return true;
    case DType::UInt8: *type = EwType::U8; return true;
    case DType::Bool: *type = EwType::Bool; return true;
    case DType::Float64: *type = EwType::F64; return true;
    default: return false;
  }
}

std::string unsupported_on_cuda(const KernelInit& init, DType dtype) {
  return init.node.op_type + " on " + dtype_name(dtype) + " is not supported on CUDA";
}

bool make_broadcast_index(const Shape& out, std::initializer_list<const Shape*> inputs, BroadcastIndex* index,
                          std::string* why_not) {
  static_assert(kEwMaxInputs <= kMaxBroadcastInputs && kEwMaxRank <= kMaxBroadcastDims);
  BroadcastPlan plan;
  if (!make_broadcast_plan(out, inputs, &plan, why_not)) return false;
  if (plan.rank > kEwMaxRank) {
    *why_not = "broadcasting to " + shape_to_string(out) + " needs more than " + std::to_string(kEwMaxRank) +
               " dims on CUDA";
    return false;
  }
  BroadcastIndex ix;
  ix.rank = plan.rank;
  ix.num_inputs = plan.num_inputs;
  ix.numel = plan.numel;
  for (int d = 0; d < plan.rank; ++d) {
    ix.dims[d] = plan.dims[d];
    for (int k = 0; k < plan.num_inputs; ++k) ix.strides[k][d] = plan.strides[k][d];
  }
  // Every input offset is below its numel, which is at most the output's.
  ix.index32 = ix.numel > 0 && ix.numel <= std::numeric_limits<int32_t>::max();
  if (ix.index32)
    for (int d = 0; d < ix.rank; ++d) ix.div[d] = make_fast_div(static_cast<uint32_t>(ix.dims[d]));
  *index = ix;
  return true;
}

namespace {

// One elementwise launch per run, y = f(x) over y's elements: `launch` holds which
// function (an UnaryOp or a table function) and its parameters.
class EwUnaryKernel final : public Kernel {
 public:
  using Launch = std::function<void(const void* x, void* y, int64_t n, cudaStream_t stream)>;
  EwUnaryKernel(Launch launch, std::string what) : launch_(std::move(launch)), what_(std::move(what)) {}

  void run(const RunArgs& args) const override {
    launch_(args.inputs[0]->data(), args.outputs[0]->data(), args.outputs[0]->numel(), stream_context(args).stream);
    check_launch(what_.c_str());
  }

 private:
  Launch launch_;
  std::string what_;
};

class EwBinaryKernel final : public Kernel {
 public:
  EwBinaryKernel(BinaryOp op, EwType a, EwType b, const EwParams& params, const BroadcastIndex& index,
                 std::string what)
      : op_(op), a_(a), b_(b), params_(params), index_(index), what_(std::move(what)) {}

  void run(const RunArgs& args) const override {
    launch_binary(op_, a_, b_, params_, args.inputs[0]->data(), args.inputs[1]->data(),
                  args.outputs[0]->data(), index_, stream_context(args).stream);
    check_launch(what_.c_str());
  }

 private:
  BinaryOp op_;
  EwType a_, b_;
  EwParams params_;
  BroadcastIndex index_;
  std::string what_;
};

}  // namespace

std::unique_ptr<Kernel> make_unary_kernel(KernelInit& init, std::string* why_not, UnaryOp op,
                                          const EwParams& params) {
  const DType dtype = init.inputs[0].dtype;
  EwType type;
  if (!to_ew_type(dtype, &type) || !(accepted_types(op) & type_bit(type))) {
    *why_not = unsupported_on_cuda(init, dtype);
    return nullptr;
  }
  return std::make_unique<EwUnaryKernel>(
      [=](const void* x, void* y, int64_t n, cudaStream_t stream) { launch_unary(op, type, params, x, y, n, stream); },
      init.node.op_type);
}

std::unique_ptr<Kernel> make_unary_function_kernel(KernelInit& init, std::string* why_not) {
  ew::UnaryFunction f;
  if (!unary_function_of(init.node, &f, why_not)) return nullptr;
  const DType dtype = init.inputs[0].dtype;
  EwType type;
  if (!to_ew_type(dtype, &type) || !(accepted_types(f) & type_bit(type))) {
    *why_not = unsupported_on_cuda(init, dtype);
    return nullptr;
  }
  const ew::Params params = unary_params(init.node, f);
  return std::make_unique<EwUnaryKernel>(
      [=](const void* x, void* y, int64_t n, cudaStream_t stream) {
        launch_unary_function(f, type, params, x, y, n, stream);
      },
      init.node.op_type);
}

std::unique_ptr<Kernel> make_binary_kernel(KernelInit& init, std::string* why_not, BinaryOp op,
                                           const EwParams& params, const Shape* b_shape) {
  const DType a_dtype = init.inputs[0].dtype, b_dtype = init.inputs[1].dtype;
  EwType a, b;
  if (!to_ew_type(a_dtype, &a) || !(accepted_types(op) & type_bit(a))) {
    *why_not = unsupported_on_cuda(init, a_dtype);
    return nullptr;
  }
  if (op == BinaryOp::Pow) {
    if (!to_ew_type(b_dtype, &b) || !(kEwSigned & type_bit(b))) {
      *why_not = std::string("Pow with a ") + dtype_name(b_dtype) + " exponent is not supported on CUDA";
      return nullptr;
    }
  } else if (b_dtype != a_dtype) {
    *why_not = init.node.op_type + " needs equal input dtypes";
    return nullptr;
  } else {
    b = a;
  }
  BroadcastIndex index;
  if (!make_broadcast_index(init.outputs[0].shape, {&init.inputs[0].shape, b_shape ? b_shape : &init.inputs[1].shape},
                            &index, why_not))
    return nullptr;
  return std::make_unique<EwBinaryKernel>(op, a, b, params, index, init.node.op_type);
}

}  // namespace ember::cuda
