// The random ops ember runs: Bernoulli (opset 15: y[i] = 1 with probability x[i], else
// 0, in `dtype`, default x's dtype) and RandomUniformLike (uniform in [low, high) in x's
// shape; the draws of Bernoulli's ONNX function body). Not deterministic: constant
// folding leaves them alone.
#include "graph/schema.h"

namespace ember {

namespace {

std::vector<TensorType> infer_bernoulli(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64 && x.dtype != DType::Float16 && x.dtype != DType::BFloat16)
    ctx.fail(std::string("input must be float, double, float16 or bfloat16 probabilities, got ") + dtype_name(x.dtype));
  DType out = x.dtype;
  if (ctx.node.attributes.has("dtype")) {
    out = static_cast<DType>(ctx.node.attributes.get_int("dtype"));
    switch (out) {
      case DType::Float32: case DType::Float64: case DType::Float16: case DType::BFloat16:
      case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
      case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64: case DType::Bool: break;
      default:
        ctx.fail("dtype " + std::to_string(ctx.node.attributes.get_int("dtype")) +
                 " is not a numeric or bool type Bernoulli can write");
    }
  }
  return {{out, x.shape}};
}

std::vector<TensorType> infer_random_uniform_like(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const DType out = ctx.node.attributes.has("dtype") ? static_cast<DType>(ctx.node.attributes.get_int("dtype")) : x.dtype;
  if (out != DType::Float32 && out != DType::Float64 && out != DType::Float16 && out != DType::BFloat16)
    ctx.fail(std::string("the output must be float, double, float16 or bfloat16, got ") + dtype_name(out));
  return {{out, x.shape}};
}

}  // namespace

EMBER_SCHEMA("Bernoulli", "", infer_bernoulli, nullptr, OpTraits{.deterministic = false});
EMBER_SCHEMA("RandomUniformLike", "", infer_random_uniform_like, nullptr, OpTraits{.deterministic = false});

}  // namespace ember
