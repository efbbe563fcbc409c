// The dense family's epilogue pass (bias, residual add, activation after a cuBLASLt or
// cuDNN call) against a host loop over the same formula, on both of its paths: 16-byte
// groups where the bias is a row/channels-last vector and the add is a residual, one
// element at a time otherwise (a channels-first bias, a broadcast add, odd sizes, a
// pointer off 16 bytes). The arithmetic is the same float32 on both sides, so float32
// agrees to rounding (1e-6 relative, the activations' own ulps) and float16 to one
// half ulp of the stored result (2^-11 relative, atol 1e-3 near 0).
#include "cuda_harness.h"

#include "ops/cuda/cuda_common.h"
#include "ops/cuda/dense_epilogue_impl.h"

#include <cmath>

namespace ember::test {
namespace {

struct Case {
  const char* what;
  int64_t rows, cols;   // y is [rows, cols]
  int64_t bias_inner;   // 1: a row bias of cols; cols... : per row (channels-first)
  bool add;             // a residual of y's shape
  int64_t offset;       // elements y, bias and add start past a 256-byte aligned base
};

float reference(const cuda::EpilogueArgs& a, float y, float bias, float add) {
  float v = y;
  if (a.bias) v += bias;
  if (a.add) v += a.add_scale * add;
  return ew::apply_activation(a.act, v);
}

void check_case(const Case& c, DType dtype, const ew::Activation& act, std::mt19937& rng) {
  SCOPED_TRACE(std::string(c.what) + " " + dtype_name(dtype));
  const int64_t n = c.rows * c.cols, bias_count = c.bias_inner == 1 ? c.cols : c.rows;
  const Tensor y = random_tensor(dtype, {n}, -3, 3, rng);
  const Tensor bias = random_tensor(dtype, {bias_count}, -1, 1, rng);
  const Tensor add = random_tensor(dtype, {n}, -1, 1, rng);
  const size_t esize = dtype_bytes(dtype, 1);
  auto region = [&](int64_t elements) { return (static_cast<size_t>(elements + c.offset) * esize + 255) / 256 * 256; };
  const size_t y_at = 0, bias_at = region(n), add_at = bias_at + region(bias_count);
  void* buffer = nullptr;
  cuda::check(cudaMalloc(&buffer, add_at + region(n)), "cudaMalloc");
  char* base = static_cast<char*>(buffer);
  char* dy = base + y_at + c.offset * esize;
  char* dbias = base + bias_at + c.offset * esize;
  char* dadd = base + add_at + c.offset * esize;
  cuda::check(cudaMemcpy(dy, y.data(), y.nbytes(), cudaMemcpyHostToDevice), "upload");
  cuda::check(cudaMemcpy(dbias, bias.data(), bias.nbytes(), cudaMemcpyHostToDevice), "upload");
  cuda::check(cudaMemcpy(dadd, add.data(), add.nbytes(), cudaMemcpyHostToDevice), "upload");

  cuda::EpilogueArgs a;
  a.y = dy;
  a.n = n;
  a.bias = dbias;
  a.bias_inner = c.bias_inner;
  a.bias_count = bias_count;
  if (c.add) {
    a.add = dadd;
    a.add_scale = 0.5f;
    a.add_cols = n;
    a.add_row_stride = 0;
    a.add_col_stride = 1;
  }
  a.act = act;
  cuda::StreamContext* context = cuda::create_stream_context(0);
  cuda::FloatStorage storage = cuda::FloatStorage::Float32;
  cuda::float_storage(dtype, &storage);
  cuda::launch_epilogue(storage, a, context->stream);
  cuda::check_launch("epilogue");
  cuda::check(cudaStreamSynchronize(context->stream), "the epilogue");
  Tensor got(dtype, {n});
  cuda::check(cudaMemcpy(got.data(), dy, got.nbytes(), cudaMemcpyDeviceToHost), "download");
  cudaFree(buffer);
  cuda::destroy_stream_context(context);

  const Tensor yf = cast_to(y, DType::Float32), bf = cast_to(bias, DType::Float32), af = cast_to(add, DType::Float32);
  Tensor want(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i)
    want.data_as<float>()[i] = reference(a, yf.data_as<float>()[i], bf.data_as<float>()[(i / c.bias_inner) % bias_count],
                                         af.data_as<float>()[i]);
  // Against the formula rounded to the same type: one rounding apart at most (float16
  // 2^-11, bfloat16 2^-8 between neighbours).
  const double tol = dtype == DType::Float16 ? 1e-3 : dtype == DType::BFloat16 ? 8e-3 : 1e-6;
  expect_close(got, cast_to(cast_to(want, dtype), DType::Float32), tol, tol, c.what);
}

TEST(CudaDenseEpilogue, VectorAndElementPathsMatchTheFormula) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(31);
  ew::Activation relu, gelu;
  relu.kind = gelu.kind = ew::Activation::Kind::Function;
  relu.function = ew::UnaryFunction::Relu;
  gelu.function = ew::UnaryFunction::Gelu;
  const std::vector<Case> cases = {
      {"row bias, 16-byte groups", 37, 64, 1, false, 0},
      {"row bias and residual, 16-byte groups", 5, 3072, 1, true, 0},
      {"channels-first bias: per element", 6, 49, 49, false, 0},
      {"row bias of 20: float16 per element, float32 in groups", 9, 20, 1, true, 0},
      {"odd size: per element", 3, 7, 1, true, 0},
      {"y 2 elements off 16 bytes: per element", 4, 64, 1, true, 2},
  };
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (const Case& c : cases)
      for (const ew::Activation& act : {relu, gelu}) check_case(c, dtype, act, rng);
}

}  // namespace
}  // namespace ember::test
