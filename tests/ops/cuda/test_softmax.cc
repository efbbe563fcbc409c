// Softmax and LogSoftmax on CUDA against the CPU kernels.
#include "reduce_test_util.h"

namespace ember::test {
namespace {

// float32: expf and the row sum in another order than the CPU's (which uses a
// polynomial exp with ~2e-7 relative error): a few ulp per element.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-6;
// LogSoftmax values are (x - max) - log(sum): the error is absolute, ~ulp(|log sum|).
constexpr double kLogAtol32 = 1e-5;
// float16: outputs rounded to half (relative 4.9e-4), inputs identical on both sides.
constexpr double kRtol16 = 2e-3, kAtol16 = 1e-4;
constexpr double kLogAtol16 = 1e-2;  // |y| up to ~10 rounded to half: 10 * 2^-11 = 5e-3
// bfloat16: outputs rounded to 8 mantissa bits (relative 2^-9 = 2e-3; 3.9e-3 between
// neighbours), inputs identical on both sides.
constexpr double kRtolBf16 = 8e-3, kAtolBf16 = 1e-3;
constexpr double kLogAtolBf16 = 8e-2;  // |y| up to ~10: 10 * 2^-8 = 0.04 between neighbours

double rtol(DType t) { return t == DType::Float16 ? kRtol16 : t == DType::BFloat16 ? kRtolBf16 : kRtol32; }
double atol(DType t, bool log) {
  if (t == DType::Float16) return log ? kLogAtol16 : kAtol16;
  if (t == DType::BFloat16) return log ? kLogAtolBf16 : kAtolBf16;
  return log ? kLogAtol32 : kAtol32;
}

void check_softmax(const std::string& op, const Shape& shape, int64_t opset, DType dtype,
                   std::optional<int64_t> axis = std::nullopt, double lo = -5, double hi = 5) {
  Attributes at;
  if (axis) at.set_int("axis", *axis);
  const Tensor x = seeded_tensor(dtype, shape, static_cast<uint32_t>(shape_numel(shape) + opset), lo, hi);
  const bool log = op == "LogSoftmax";
  SCOPED_TRACE(op + " " + shape_to_string(shape) + " opset " + std::to_string(opset) + " " + dtype_name(dtype) +
               (axis ? " axis " + std::to_string(*axis) : " default axis"));
  expect_cuda_matches_cpu(make_node(op, 1, 1, at), opset, {&x}, rtol(dtype), atol(dtype, log));
}

// Every row length class: warp with 1, 2, 4, ... 32 values per lane (n = 1, 7, 33,
// 100, 128, 257, 1000, 1024), block with the row cached (1025, 5000, 8192), block
// re-reading global memory (8193, 20000); then both sides of every boundary between
// values per lane (31/32/33, 64/65, 512/513, 1024/1025), block sizes (4096/4097,
// 16384/16385: 256, 512, 1024 threads) and the cache (8192/8193).
TEST(CudaSoftmax, LastAxisEveryRowLength) {
  EMBER_REQUIRE_GPU();
  for (const std::string op : {"Softmax", "LogSoftmax"})
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      for (const Shape& s : std::vector<Shape>{{1, 1}, {3, 7}, {5, 33}, {4, 100}, {2, 128}, {3, 257}, {4, 1000},
                                               {2, 1024}, {3, 1025}, {2, 5000}, {2, 8192}, {2, 8193}, {2, 20000}})
        check_softmax(op, s, 13, dtype);
      for (const Shape& s : std::vector<Shape>{{3, 31}, {3, 32}, {2, 64}, {2, 65}, {2, 512}, {2, 513}, {2, 4096},
                                               {2, 4097}, {2, 16384}, {2, 16385}})
        check_softmax(op, s, 13, dtype);
    }
}

// More rows than the warp kernel's grid has warps (65535 * 8 blocks of 4): the row
// loop's second turn.
TEST(CudaSoftmax, MoreRowsThanTheGridHasWarps) {
  EMBER_REQUIRE_GPU();
  EMBER_SKIP_IF_EMULATED("the grid alone is 65535 * 8 blocks");
  check_softmax("LogSoftmax", {2200000, 3}, 13, DType::Float32);
}

TEST(CudaSoftmax, AttentionScores) {
  EMBER_REQUIRE_GPU();
  // BERT-base scores [B, H, S, S]: 3072 rows of 128 (warp path, many blocks).
  check_softmax("Softmax", {2, 12, 128, 128}, 13, DType::Float32);
  check_softmax("Softmax", {2, 12, 128, 128}, 13, DType::Float16);
  check_softmax("Softmax", {1, 12, 77, 77}, 13, DType::Float32, -1);
  check_softmax("Softmax", {1, 4, 3, 4096}, 13, DType::Float16);
}

TEST(CudaSoftmax, InnerAxis) {
  EMBER_REQUIRE_GPU();
  for (const std::string op : {"Softmax", "LogSoftmax"})
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      check_softmax(op, {2, 3, 4, 5}, 13, dtype, 1);   // strided: n 3, inner 20
      check_softmax(op, {2, 3, 4, 5}, 13, dtype, 0);   // outer 1
      check_softmax(op, {2, 3, 4, 5}, 13, dtype, -2);  // inner 5
      check_softmax(op, {7, 1000, 3}, 13, dtype, 1);   // long strided column
    }
}

TEST(CudaSoftmax, Opset11CoercesTo2D) {
  EMBER_REQUIRE_GPU();
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    check_softmax(op, {2, 3, 4, 5}, 11, DType::Float32);     // default axis 1: rows of 60
    check_softmax(op, {2, 3, 4, 5}, 11, DType::Float32, 2);  // rows of 20
    check_softmax(op, {2, 3, 4, 5}, 11, DType::Float32, 0);  // one row of 120
    check_softmax(op, {2, 3, 4, 5}, 11, DType::Float32, 4);  // axis == rank: rows of 1
    check_softmax(op, {3, 40, 50}, 11, DType::Float16);      // rows of 2000: block path
    check_softmax(op, {2, 3, 4, 5}, 1, DType::Float32, -1);  // opset 1, negative axis
  }
}

TEST(CudaSoftmax, LargeMagnitudesStayFinite) {
  EMBER_REQUIRE_GPU();
  // exp(100) overflows float: only the max-subtracted form is finite.
  check_softmax("Softmax", {4, 300}, 13, DType::Float32, -1, -100, 100);
  check_softmax("LogSoftmax", {4, 3000}, 13, DType::Float32, -1, -100, 100);
  check_softmax("Softmax", {3, 50, 4}, 13, DType::Float32, 1, -100, 100);
}

TEST(CudaSoftmax, EmptyTensorRunsNothing) {
  EMBER_REQUIRE_GPU();
  check_softmax("Softmax", {0, 5}, 13, DType::Float32);
  check_softmax("Softmax", {3, 0}, 13, DType::Float32);
}

TEST(CudaSoftmax, AcceptsFloatAndDeclinesOthersWithAReason) {
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    EXPECT_EQ(cuda_verdict(make_node(op, 1), 13, {{DType::Float32, {2, 3}}}), "");
    EXPECT_EQ(cuda_verdict(make_node(op, 1), 11, {{DType::Float16, {2, 3, 4}}}), "");
    const std::string why = cuda_verdict(make_node(op, 1), 13, {{DType::Float64, {2, 3}}});
    EXPECT_NE(why.find("float64 is not supported on CUDA"), std::string::npos) << why;
  }
  EXPECT_EQ(cuda_verdict(make_node("Hardmax", 1), 13, {{DType::Float32, {2, 3}}}), "no CUDA kernel is registered");
}

}  // namespace
}  // namespace ember::test
