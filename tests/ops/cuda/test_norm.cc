// LayerNormalization, RMSNormalization, InstanceNormalization and GroupNormalization
// on CUDA against the CPU kernels.
#include "reduce_test_util.h"

#include "graph/passes/passes.h"

namespace ember::test {
namespace {

// float32: the same two-pass statistics summed in another order, then one
// multiply-add chain per element: ~1e-6 relative on the statistics; outputs near zero
// (x close to the mean) need an absolute bound.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-5;
// float16: outputs (|y| up to ~6) rounded to half: 6 * 2^-11 = 3e-3.
constexpr double kRtol16 = 2e-3, kAtol16 = 4e-3;
// bfloat16: the same outputs rounded to 8 mantissa bits: 6 * 2^-9 = 1.2e-2 (2.3e-2
// between neighbours).
constexpr double kRtolBf16 = 8e-3, kAtolBf16 = 3e-2;

double rtol(DType t) { return t == DType::Float16 ? kRtol16 : t == DType::BFloat16 ? kRtolBf16 : kRtol32; }
double atol(DType t, double atol32 = kAtol32) {
  return t == DType::Float16 ? kAtol16 : t == DType::BFloat16 ? kAtolBf16 : atol32;
}

struct Case {
  Case(Shape x_, int64_t axis_, Shape scale_ = {}, bool bias_ = true, double lo_ = -2, double hi_ = 2)
      : x(std::move(x_)), axis(axis_), scale(std::move(scale_)), bias(bias_), lo(lo_), hi(hi_) {}
  Shape x;
  int64_t axis;
  Shape scale;  // empty: the normalized dims
  bool bias;
  double lo, hi;  // X's range
};

Shape normalized_dims(const Shape& x, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(x.size());
  return Shape(x.begin() + (axis < 0 ? axis + rank : axis), x.end());
}

void check_layer_norm(const Case& c, DType dtype, size_t outputs = 3, float epsilon = 1e-5f,
                      double atol32 = kAtol32) {
  Attributes at;
  at.set_int("axis", c.axis);
  at.set_float("epsilon", epsilon);
  const Shape p = c.scale.empty() ? normalized_dims(c.x, c.axis) : c.scale;
  const uint32_t seed = static_cast<uint32_t>(shape_numel(c.x));
  const Tensor x = seeded_tensor(dtype, c.x, seed, c.lo, c.hi);
  const Tensor scale = seeded_tensor(dtype, p, seed + 1, 0.5, 1.5), bias = seeded_tensor(dtype, p, seed + 2);
  SCOPED_TRACE("LayerNormalization X " + shape_to_string(c.x) + " axis " + std::to_string(c.axis) + " scale " +
               shape_to_string(p) + (c.bias ? " with bias " : " no bias ") + dtype_name(dtype));
  std::vector<const Tensor*> inputs{&x, &scale};
  if (c.bias) inputs.push_back(&bias);
  expect_cuda_matches_cpu(make_node("LayerNormalization", inputs.size(), outputs, at), 17, inputs, rtol(dtype),
                          atol(dtype, atol32));
}

TEST(CudaLayerNorm, BertShapesWithAndWithoutBias) {
  EMBER_REQUIRE_GPU();
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (bool bias : {true, false}) {
      check_layer_norm({{2, 128, 768}, -1, {}, bias}, dtype);
      check_layer_norm({{2, 128, 768}, -1, {}, bias}, dtype, 1);  // Y alone
    }
}

TEST(CudaLayerNorm, EveryRowLengthAndAxis) {
  EMBER_REQUIRE_GPU();
  // Warp path with 1..32 values per lane, block path cached (1025, 3000, 8192) and not (9000).
  const std::vector<Case> cases = {
      {{3, 5, 7}, 1},        {{3, 5, 7}, -1},       {{3, 5, 7}, 0},        {{1, 1}, -1},
      {{4, 33}, -1},         {{6, 100}, 1},         {{5, 257}, -1},        {{3, 1000}, -1},
      {{2, 1025}, -1},       {{2, 3, 1000}, 1},     {{4, 8192}, -1},       {{2, 9000}, -1},
      {{3, 31}, -1},         {{3, 32}, -1},         {{2, 1024}, -1},       {{2, 4097}, -1},  // path boundaries
      {{2, 8193}, -1},       {{2, 16385}, -1},
      {{2, 7, 768}, -1, {1, 768}},  // scale with a leading 1
      {{2, 64, 512}, -1, {}, true, 5, 7},  // mean far from 0: two-pass statistics
  };
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (const Case& c : cases) check_layer_norm(c, dtype);
  check_layer_norm({{4, 96}, -1}, DType::Float32, 3, 1e-2f);  // epsilon reaches the result
}

// More rows than the warp kernel's grid has warps (65535 * 8 blocks of 4): the row
// loop's second turn, with the Mean and InvStdDev outputs.
TEST(CudaLayerNorm, MoreRowsThanTheGridHasWarps) {
  EMBER_REQUIRE_GPU();
  EMBER_SKIP_IF_EMULATED("the grid alone is 65535 * 8 blocks");
  // Among 2.2 million rows of 3 values in [-2, 2], some are nearly constant: x - mean
  // then keeps float32 rounding of |x| <= 2 (2.4e-7) over sqrt(var + eps) >= 3.2e-3,
  // up to 7.5e-5 absolute from summation order alone. The CUDA emulator measured 6.2e-5.
  check_layer_norm({{2200000, 3}, -1}, DType::Float32, 3, 1e-5f, 1e-4);
}

// com.ember AddLayerNormalization (what fuse_add_layer_norm makes of a residual Add and
// the LayerNormalization reading it) against its decomposition on the CPU, on each of
// the row kernels: 16-byte groups (768), one warp per row (100), one block per row
// with the row cached (1025) and re-read (9000).
TEST(CudaLayerNorm, TheResidualAddFusedIntoItMatchesTheTwoNodes) {
  EMBER_REQUIRE_GPU();
  for (const Shape& x : {Shape{2, 128, 768}, Shape{3, 100}, Shape{2, 1025}, Shape{2, 9000}})
    for (bool bias : {true, false})
      for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
        Graph g;
        g.opset_imports[""] = 17;
        g.inputs = {{"x", DType::Float32, {}, false}, {"r", DType::Float32, {}, false},
                    {"scale", DType::Float32, {}, false}, {"bias", DType::Float32, {}, false}};
        Node norm = make_node("LayerNormalization", {"sum", "scale"}, {"y"});
        if (bias) norm.inputs.push_back("bias");
        g.nodes = {make_node("Add", {"x", "r"}, {"sum"}), norm};
        g.outputs = {{"y", DType::Float32, {}, false}};
        ASSERT_EQ(fuse_add_layer_norm(g), 1);
        const Node& fused = g.nodes[0];
        const uint32_t seed = static_cast<uint32_t>(shape_numel(x));
        const Shape p{x.back()};
        const Tensor a = seeded_tensor(dtype, x, seed, -2, 2), r = seeded_tensor(dtype, x, seed + 1, -1, 1);
        const Tensor scale = seeded_tensor(dtype, p, seed + 2, 0.5, 1.5), b = seeded_tensor(dtype, p, seed + 3);
        SCOPED_TRACE("AddLayerNormalization X " + shape_to_string(x) + (bias ? " with bias " : " ") + dtype_name(dtype));
        std::vector<const Tensor*> inputs{&a, &r, &scale};
        if (bias) inputs.push_back(&b);
        expect_cuda_matches_cpu(fused, 1, inputs, rtol(dtype), atol(dtype));
      }
  // A residual that broadcasts is the decomposition's.
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {{"x", DType::Float32, {}, false}, {"r", DType::Float32, {}, false}, {"scale", DType::Float32, {}, false}};
  g.nodes = {make_node("Add", {"x", "r"}, {"sum"}), make_node("LayerNormalization", {"sum", "scale"}, {"y"})};
  g.outputs = {{"y", DType::Float32, {}, false}};
  ASSERT_EQ(fuse_add_layer_norm(g), 1);
  const std::string why =
      cuda_verdict(g.nodes[0], 1, {{DType::Float32, {2, 8}}, {DType::Float32, {8}}, {DType::Float32, {8}}});
  EXPECT_NE(why.find("the residual [8] broadcasts"), std::string::npos) << why;
}

TEST(CudaLayerNorm, DeclinesWithAReason) {
  const TensorType x{DType::Float32, {2, 8}};
  const Node ln = make_node("LayerNormalization", 3, 3);
  EXPECT_EQ(cuda_verdict(ln, 17, {x, {DType::Float32, {8}}, {DType::Float32, {8}}}), "");
  EXPECT_EQ(cuda_verdict(ln, 17, {{DType::Float16, {2, 8}}, {DType::Float16, {1, 8}}, {}}), "");
  const std::string within = cuda_verdict(ln, 17, {x, {DType::Float32, {1}}, {DType::Float32, {8}}});
  EXPECT_NE(within.find("broadcasts inside the normalized dims"), std::string::npos) << within;
  const std::string rows = cuda_verdict(ln, 17, {x, {DType::Float32, {8}}, {DType::Float32, {2, 8}}});
  EXPECT_NE(rows.find("bias [2, 8]"), std::string::npos) << rows;
  const std::string f64 = cuda_verdict(ln, 17, {{DType::Float64, {2, 8}}, {DType::Float64, {8}}, {}});
  EXPECT_NE(f64.find("float64 is not supported on CUDA"), std::string::npos) << f64;
  const std::string mixed = cuda_verdict(ln, 17, {{DType::Float16, {2, 8}}, {DType::Float32, {8}}, {}});
  EXPECT_NE(mixed.find("input 1 is float32 while X is float16"), std::string::npos) << mixed;
  Node bf16 = ln;
  bf16.attributes.set_int("stash_type", 16);
  const std::string stash = cuda_verdict(bf16, 17, {x, {DType::Float32, {8}}, {}});
  EXPECT_NE(stash.find("stash_type"), std::string::npos) << stash;
}

TEST(CudaRmsNorm, RowsAndScales) {
  EMBER_REQUIRE_GPU();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{2, 16, 512}, -1}, {{3, 5, 7}, 1}, {{4, 33}, -1}, {{2, 2000}, -1}, {{2, 10000}, -1}, {{1, 1}, 0},
      {{3, 32}, -1},      {{2, 1024}, -1}, {{2, 1025}, -1}, {{2, 8193}, -1}};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (const auto& [shape, axis] : cases) {
      Attributes at;
      at.set_int("axis", axis);
      at.set_float("epsilon", 1e-6f);
      const Tensor x = seeded_tensor(dtype, shape, 7, -2, 2);
      const Tensor scale = seeded_tensor(dtype, normalized_dims(shape, axis), 8, 0.5, 1.5);
      SCOPED_TRACE("RMSNormalization " + shape_to_string(shape) + " axis " + std::to_string(axis));
      expect_cuda_matches_cpu(make_node("RMSNormalization", 2, 1, at), 23, {&x, &scale}, rtol(dtype),
                              atol(dtype));
    }
}

TEST(CudaRmsNorm, DeclinesWithAReason) {
  const Node rms = make_node("RMSNormalization", 2);
  EXPECT_EQ(cuda_verdict(rms, 23, {{DType::Float32, {2, 8}}, {DType::Float32, {8}}}), "");
  const std::string within = cuda_verdict(rms, 23, {{DType::Float32, {2, 8}}, {DType::Float32, {1}}});
  EXPECT_NE(within.find("broadcasts inside the normalized dims"), std::string::npos) << within;
  EXPECT_EQ(cuda_verdict(rms, 22, {{DType::Float32, {2, 8}}, {DType::Float32, {8}}}), "no CUDA kernel is registered");
}

void check_group_norm(const std::string& op, const Shape& x_shape, int64_t opset, DType dtype, int64_t groups = 0,
                      float epsilon = 1e-4f) {
  Attributes at;
  at.set_float("epsilon", epsilon);
  if (groups) at.set_int("num_groups", groups);
  const int64_t params = op == "GroupNormalization" && opset < 21 ? groups : x_shape[1];
  const uint32_t seed = static_cast<uint32_t>(shape_numel(x_shape));
  const Tensor x = seeded_tensor(dtype, x_shape, seed, -1, 3);
  const Tensor scale = seeded_tensor(dtype, {params}, seed + 1, 0.5, 1.5);
  const Tensor bias = seeded_tensor(dtype, {params}, seed + 2);
  SCOPED_TRACE(op + " " + shape_to_string(x_shape) + " opset " + std::to_string(opset) + " groups " +
               std::to_string(groups) + " " + dtype_name(dtype));
  expect_cuda_matches_cpu(make_node(op, 3, 1, at), opset, {&x, &scale, &bias}, rtol(dtype), atol(dtype));
}

TEST(CudaInstanceNorm, SmallAndLargePlanes) {
  EMBER_REQUIRE_GPU();
  // Runs of 35, 3000, 10000 and 60 elements per block.
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (const Shape& s : std::vector<Shape>{{2, 3, 5, 7}, {1, 4, 3000}, {2, 3, 100, 100}, {1, 2, 3, 4, 5}})
      check_group_norm("InstanceNormalization", s, 6, dtype);
    // Runs of one element (variance 0, y = bias through x * a + b with a = scale /
    // sqrt(eps)): a larger epsilon keeps x * a small enough that an FMA on one side
    // and not the other stays inside the tolerance.
    check_group_norm("InstanceNormalization", {3, 4, 1}, 6, dtype, 0, 0.1f);
  }
}

TEST(CudaGroupNorm, PerGroupAndPerChannelParameters) {
  EMBER_REQUIRE_GPU();
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    check_group_norm("GroupNormalization", {2, 6, 4, 4}, 18, dtype, 3);   // scale per group
    check_group_norm("GroupNormalization", {2, 6, 4, 4}, 21, dtype, 3);   // scale per channel
    check_group_norm("GroupNormalization", {1, 32, 16, 16}, 21, dtype, 8);
    check_group_norm("GroupNormalization", {3, 5, 7}, 21, dtype, 5);      // groups == channels
    check_group_norm("GroupNormalization", {2, 4, 33, 65}, 21, dtype, 1);  // one group of 8580
    check_group_norm("GroupNormalization", {4, 6}, 18, dtype, 2);          // no spatial dims
  }
}

TEST(CudaGroupNorm, DeclinesWithAReason) {
  Attributes at;
  at.set_int("num_groups", 2);
  const Node gn = make_node("GroupNormalization", 3, 1, at);
  const std::vector<TensorType> f32{{DType::Float32, {1, 4, 3}}, {DType::Float32, {4}}, {DType::Float32, {4}}};
  EXPECT_EQ(cuda_verdict(gn, 21, f32), "");
  std::vector<TensorType> f64 = f32;
  for (TensorType& t : f64) t.dtype = DType::Float64;
  EXPECT_NE(cuda_verdict(gn, 21, f64).find("float64 is not supported on CUDA"), std::string::npos);
  const std::vector<TensorType> in{{DType::Float16, {1, 4, 3}}, {DType::Float16, {4}}, {DType::Float16, {4}}};
  EXPECT_EQ(cuda_verdict(make_node("InstanceNormalization", 3), 6, in), "");
}

}  // namespace
}  // namespace ember::test
