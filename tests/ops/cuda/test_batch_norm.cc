// BatchNormalization (inference) on CUDA against the CPU kernel.
#include "dense_test_util.h"

namespace ember::test {
namespace {

// float32: the same fold (scale / sqrt(var + eps)) and one multiply-add per element,
// but sqrt/division may differ in the last ulp and the CPU may contract differently.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-5;
// float16: the output is rounded to half.
constexpr double kRtol16 = 2e-3, kAtol16 = 2e-3;

void check_bn(const Shape& x_shape, DType x_type, DType param_type, bool params_known, int64_t opset = 15,
              const std::string& op = "BatchNormalization") {
  const bool nhwc = op == "NhwcBatchNormalization";
  const int64_t c = nhwc ? x_shape.back() : x_shape[1];
  const Tensor x = seeded_tensor(x_type, x_shape, 41, -2, 2);
  const Tensor scale = seeded_tensor(param_type, {c}, 42, 0.5, 1.5), bias = seeded_tensor(param_type, {c}, 43);
  const Tensor mean = seeded_tensor(param_type, {c}, 44), var = seeded_tensor(param_type, {c}, 45, 0.1, 2);
  Attributes at;
  at.set_float("epsilon", 1e-3f);
  SCOPED_TRACE("X " + shape_to_string(x_shape) + " " + dtype_name(x_type) + ", params " + dtype_name(param_type));
  const bool half = x_type == DType::Float16, bf16 = x_type == DType::BFloat16;
  // bfloat16: the output rounded to 8 mantissa bits (2^-9 relative, 3.9e-3 between
  // neighbours).
  expect_cuda_matches_cpu(make_node(op, 5, 1, at, nhwc ? "com.ember" : ""), nhwc ? 1 : opset, {&x, &scale, &bias, &mean, &var},
                          half ? kRtol16 : bf16 ? 8e-3 : kRtol32, half ? kAtol16 : bf16 ? 1e-2 : kAtol32,
                          params_known ? std::vector<int>{1, 2, 3, 4} : std::vector<int>{});
}

TEST(CudaBatchNorm, SmallAndLargePlanes) {
  EMBER_REQUIRE_GPU();
  // Planes of 63 and 1 elements (one thread per element), 1024 and 4913 (a block per plane).
  const Shape shapes[] = {{2, 3, 7, 9}, {5, 17}, {1, 8, 32, 32}, {2, 3, 17, 17, 17}, {3, 1000, 1}};
  for (const Shape& s : shapes) {
    check_bn(s, DType::Float32, DType::Float32, true);
    check_bn(s, DType::Float32, DType::Float32, false);
    check_bn(s, DType::Float16, DType::Float16, true);
    check_bn(s, DType::BFloat16, DType::BFloat16, true);
  }
}

// The layout planner's channels-last form: X [N, H, W, C], the channel innermost.
TEST(CudaBatchNorm, ChannelsLastForm) {
  EMBER_REQUIRE_GPU();
  for (const Shape& s : {Shape{2, 5, 7, 6}, Shape{1, 4, 4, 40}}) {
    check_bn(s, DType::Float32, DType::Float32, true, 1, "NhwcBatchNormalization");
    check_bn(s, DType::Float16, DType::Float16, true, 1, "NhwcBatchNormalization");
  }
}

TEST(CudaBatchNorm, HalfInputWithFloatStatistics) {
  EMBER_REQUIRE_GPU();
  check_bn({2, 6, 5, 7}, DType::Float16, DType::Float32, true);  // opset 15: T, T1, T2 may differ
  check_bn({2, 6, 5, 7}, DType::BFloat16, DType::Float32, true);
  check_bn({2, 6, 5, 7}, DType::Float32, DType::Float32, true, 9);
}

TEST(CudaBatchNorm, DeclinesWithAReason) {
  EXPECT_TRUE(has_cuda_kernel("", "BatchNormalization", 15));
  const std::vector<TensorType> types{{DType::Float32, {1, 2, 3, 3}}, {DType::Float32, {2}}, {DType::Float32, {2}},
                                      {DType::Float32, {2}}, {DType::Float32, {2}}};
  Attributes training;
  training.set_int("training_mode", 1);
  const std::string why = cuda_decline_reason(make_node("BatchNormalization", 5, 1, training), 15, types);
  EXPECT_NE(why.find("training_mode"), std::string::npos) << why;
  const std::string outputs = cuda_decline_reason(make_node("BatchNormalization", 5, 3), 15, types);
  EXPECT_NE(outputs.find("only output Y"), std::string::npos) << outputs;
  std::vector<TensorType> f64 = types;
  f64[0].dtype = DType::Float64;
  const std::string f64_why = cuda_decline_reason(make_node("BatchNormalization", 5), 15, f64);
  EXPECT_NE(f64_why.find("float64"), std::string::npos) << f64_why;
}

}  // namespace
}  // namespace ember::test
