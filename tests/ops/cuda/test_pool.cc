// MaxPool, AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool, and their
// channels-last Nhwc* forms, on CUDA against the CPU kernels.
#include "dense_test_util.h"

namespace ember::test {
namespace {

// float32: Max is exact; averages sum at most a few hundred terms in another order.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-5;
// float16: the output is rounded to half.
constexpr double kRtol16 = 2e-3, kAtol16 = 2e-3;

const DType kFloatTypes[] = {DType::Float32, DType::Float16};
double rtol(DType t) { return t == DType::Float16 ? kRtol16 : kRtol32; }
double atol(DType t) { return t == DType::Float16 ? kAtol16 : kAtol32; }

struct PoolCase {
  Shape x, kernel;
  Shape strides, dilations, pads;  // empty: the attribute is left out
  int64_t ceil_mode = 0;
  std::string auto_pad;
};

PoolCase pool_case(Shape x, Shape kernel, Shape strides = {}, Shape dilations = {}, Shape pads = {},
                   int64_t ceil_mode = 0, std::string auto_pad = "") {
  return PoolCase{std::move(x),    std::move(kernel), std::move(strides), std::move(dilations),
                  std::move(pads), ceil_mode,         std::move(auto_pad)};
}

Attributes pool_attributes(const PoolCase& c) {
  Attributes at;
  at.set_ints("kernel_shape", c.kernel);
  if (!c.strides.empty()) at.set_ints("strides", c.strides);
  if (!c.dilations.empty()) at.set_ints("dilations", c.dilations);
  if (!c.pads.empty()) at.set_ints("pads", c.pads);
  if (c.ceil_mode) at.set_int("ceil_mode", 1);
  if (!c.auto_pad.empty()) at.set_string("auto_pad", c.auto_pad);
  return at;
}

std::string describe(const PoolCase& c) {
  return "X " + shape_to_string(c.x) + " kernel " + shape_to_string(c.kernel) + " strides " +
         shape_to_string(c.strides) + " dilations " + shape_to_string(c.dilations) + " pads " +
         shape_to_string(c.pads) + (c.ceil_mode ? " ceil" : "") + " " + c.auto_pad;
}

const PoolCase kCases[] = {
    pool_case({2, 3, 9, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}),
    pool_case({1, 2, 7, 9}, {3, 3}, {2, 2}, {}, {}, 1),               // ceil_mode
    pool_case({1, 2, 8, 8}, {3, 2}, {2, 3}, {}, {1, 0, 1, 1}, 1),     // ceil_mode past the explicit pads
    pool_case({1, 3, 11, 13}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}),  // dilations
    pool_case({1, 3, 7, 9}, {2, 3}, {2, 2}, {}, {}, 0, "SAME_UPPER"),
    pool_case({1, 3, 7, 9}, {4, 4}, {1, 1}, {}, {}, 0, "SAME_LOWER"),
    pool_case({2, 5, 17}, {4}, {3}, {}, {1, 2}),                      // 1-D
    pool_case({1, 2, 5, 6, 7}, {2, 3, 3}, {2, 1, 2}, {}, {0, 1, 1, 1, 1, 0}),  // 3-D
    pool_case({1, 1, 33, 257}, {2, 2}, {2, 2}),
};

TEST(CudaMaxPool, EveryGeometry) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases) {
      const Tensor x = seeded_tensor(t, c.x, 31);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("MaxPool", 1, 1, pool_attributes(c)), 12, {&x}, rtol(t), atol(t));
    }
}

TEST(CudaMaxPool, EightBitIntegers) {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::Int8, DType::UInt8})
    for (const PoolCase& c : kCases) {
      const Tensor x = seeded_tensor(t, c.x, 32, t == DType::Int8 ? -128 : 0, t == DType::Int8 ? 127 : 255);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("MaxPool", 1, 1, pool_attributes(c)), 12, {&x}, 0, 0);
    }
}

TEST(CudaAveragePool, EveryGeometryWithAndWithoutPadCounting) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases)
      for (int64_t count_pad : {0, 1}) {
        if (!c.dilations.empty()) continue;  // dilations on AveragePool arrived in opset 19
        const Tensor x = seeded_tensor(t, c.x, 33);
        Attributes at = pool_attributes(c);
        at.set_int("count_include_pad", count_pad);
        SCOPED_TRACE(describe(c) + " count_include_pad " + std::to_string(count_pad) + " " + dtype_name(t));
        expect_cuda_matches_cpu(make_node("AveragePool", 1, 1, at), 11, {&x}, rtol(t), atol(t));
      }
}

TEST(CudaAveragePool, Dilations) {
  EMBER_REQUIRE_GPU();
  const PoolCase c = pool_case({1, 3, 11, 13}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 1}, 1);
  for (DType t : kFloatTypes) {
    const Tensor x = seeded_tensor(t, c.x, 34);
    expect_cuda_matches_cpu(make_node("AveragePool", 1, 1, pool_attributes(c)), 19, {&x}, rtol(t), atol(t));
  }
}

TEST(CudaLpPool, PowersTwoAndThree) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (int64_t p : {2, 3}) {
      const PoolCase c = pool_case({1, 3, 9, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1});
      Attributes at = pool_attributes(c);
      at.set_int("p", p);
      const Tensor x = seeded_tensor(t, c.x, 35);
      SCOPED_TRACE("p " + std::to_string(p) + " " + dtype_name(t));
      // powf vs std::pow: a few float ulps.
      expect_cuda_matches_cpu(make_node("LpPool", 1, 1, at), 18, {&x}, t == DType::Float16 ? kRtol16 : 1e-4,
                              t == DType::Float16 ? kAtol16 : 1e-5);
    }
}

TEST(CudaGlobalPool, AverageAndMaxSmallAndLargePlanes) {
  EMBER_REQUIRE_GPU();
  // 63 elements per plane: a warp each; 1600 and 4913: a block each.
  const Shape shapes[] = {{2, 3, 7, 9}, {1, 4, 40, 40}, {3, 5, 1}, {1, 2, 17, 17, 17}, {1, 1000, 1, 1}};
  for (DType t : kFloatTypes)
    for (const Shape& s : shapes)
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        const Tensor x = seeded_tensor(t, s, 36);
        SCOPED_TRACE(std::string(op) + " " + shape_to_string(s) + " " + dtype_name(t));
        // Averages of up to ~5000 terms summed in another order.
        expect_cuda_matches_cpu(make_node(op, 1), 1, {&x}, rtol(t) * 10, atol(t));
      }
}

// The channels-last forms (com.ember Nhwc*, from the layout planning): X [N, H, W, C].
Shape channels_last(const Shape& nchw) { return {nchw[0], nchw[2], nchw[3], nchw[1]}; }

TEST(CudaNhwcPool, MaxAndAverageMatchTheCpu) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases) {
      if (c.x.size() != 4) continue;  // the layout planning makes 2-D ones
      const Tensor x = seeded_tensor(t, channels_last(c.x), 37);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("NhwcMaxPool", 1, 1, pool_attributes(c), "com.ember"), 1, {&x}, rtol(t),
                              atol(t));
      if (!c.dilations.empty()) continue;
      expect_cuda_matches_cpu(make_node("NhwcAveragePool", 1, 1, pool_attributes(c), "com.ember"), 1, {&x}, rtol(t),
                              atol(t));
    }
}

TEST(CudaNhwcPool, GlobalAverageAndMaxMatchTheCpu) {
  EMBER_REQUIRE_GPU();
  const Shape shapes[] = {{2, 7, 9, 3}, {1, 40, 40, 4}, {2, 7, 7, 2048}, {1, 1, 1, 1000}};
  for (DType t : kFloatTypes)
    for (const Shape& s : shapes)
      for (const char* op : {"NhwcGlobalAveragePool", "NhwcGlobalMaxPool"}) {
        const Tensor x = seeded_tensor(t, s, 38);
        SCOPED_TRACE(std::string(op) + " " + shape_to_string(s) + " " + dtype_name(t));
        expect_cuda_matches_cpu(make_node(op, 1, 1, {}, "com.ember"), 1, {&x}, rtol(t) * 10, atol(t));
      }
}

TEST(CudaPool, RegisteredForEveryOp) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"})
    EXPECT_TRUE(has_cuda_kernel("", op, 22)) << op;
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool", "NhwcGlobalAveragePool", "NhwcGlobalMaxPool"})
    EXPECT_TRUE(has_cuda_kernel("com.ember", op, 1)) << op;
}

TEST(CudaPool, DeclinesWithAReason) {
  Attributes at;
  at.set_ints("kernel_shape", {2, 2});
  const std::string indices =
      cuda_decline_reason(make_node("MaxPool", 1, 2, at), 12, {{DType::Float32, {1, 1, 4, 4}}});
  EXPECT_NE(indices.find("Indices"), std::string::npos) << indices;
  const std::string int_avg =
      cuda_decline_reason(make_node("AveragePool", 1, 1, at), 11, {{DType::Int8, {1, 1, 4, 4}}});
  EXPECT_NE(int_avg.find("int8"), std::string::npos) << int_avg;
  const std::string f64 = cuda_decline_reason(make_node("GlobalMaxPool", 1), 1, {{DType::Float64, {1, 1, 4, 4}}});
  EXPECT_NE(f64.find("float64"), std::string::npos) << f64;
}

}  // namespace
}  // namespace ember::test
