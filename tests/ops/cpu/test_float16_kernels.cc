// float16 in the CPU kernels that compute in float32 and store half: LayerNormalization
// (and bfloat16 in it and RMSNormalization, last),
// Softmax / LogSoftmax / Hardmax, and the Reduce family. Each runs on float16 inputs and,
// as the reference, the float32 kernel on the same float16-rounded values (the float32
// kernels are checked against plain references in test_norm.cc, test_softmax.cc and
// test_reduce.cc). The float16 result may differ from the float32 one by its rounding
// to float16 only.
#include <ember/core/float16.h>
#include "test_conv_util.h"

namespace ember::test {
namespace {

// Rounding the output to float16: relative 2^-11 (1e-3 leaves room for the float32
// reference's own last-bit differences); 1e-4 absolute for results near zero (sums that
// cancel, softmax tails).
constexpr float kRtol = 1e-3f, kAtol = 1e-4f;
// float32 outputs of a float16 node (LayerNormalization's statistics): the same float32
// arithmetic on the same values.
constexpr float kFloat32Rtol = 1e-6f, kFloat32Atol = 1e-6f;

Tensor to_half(const Tensor& t) {
  Tensor h(DType::Float16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data_as<Float16>()[i] = Float16(t.data_as<float>()[i]);
  return h;
}

Tensor to_float(const Tensor& h) {
  Tensor t(DType::Float32, h.shape());
  for (int64_t i = 0; i < h.numel(); ++i) t.data_as<float>()[i] = float(h.data_as<Float16>()[i]);
  return t;
}

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

// Runs `node` with its float32 inputs as float16, and as float32 holding the same
// (rounded) values; other inputs (int64 axes) go to both as they are. Compares every
// output: float16 ones after widening, float32 ones as they are.
void check_half_matches_float(const Node& node, int64_t opset, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> halves, rounded;
  for (const Tensor& t : inputs) {
    const bool is_float = t.dtype() == DType::Float32;
    halves.push_back(is_float ? to_half(t) : t);
    rounded.push_back(is_float ? to_float(halves.back()) : t);
  }
  std::vector<const Tensor*> h_ptrs, f_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    h_ptrs.push_back(&halves[i]);
    f_ptrs.push_back(&rounded[i]);
  }
  const auto got = run_node(node, opset, h_ptrs);
  const auto want = run_node(node, opset, f_ptrs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_EQ(got[k].shape(), want[k].shape());
    if (want[k].dtype() == DType::Float32 && got[k].dtype() == DType::Float32) {
      expect_close(got[k], values_of(want[k]), kFloat32Rtol, kFloat32Atol);
      continue;
    }
    ASSERT_EQ(got[k].dtype(), DType::Float16);
    expect_close(to_float(got[k]), values_of(want[k]), kRtol, kAtol);
  }
}

Node layer_norm(int64_t axis, bool bias) {
  Node n = make_node("LayerNormalization", bias ? 3 : 2, 3);
  n.attributes.set_int("axis", axis);
  return n;
}

TEST(Float16Kernels, LayerNormalizationRowsWithScaleAndBias) {
  // BERT's shape, then odd sizes (tails of the 16-lane loops), then one long row.
  check_half_matches_float(layer_norm(-1, true), 17,
                           {random_floats({2, 5, 768}, 1, -3, 3), random_floats({768}, 2), random_floats({768}, 3)});
  check_half_matches_float(layer_norm(-1, true), 17,
                           {random_floats({3, 33}, 4, -3, 5), random_floats({33}, 5), random_floats({33}, 6)});
  check_half_matches_float(layer_norm(1, true), 17,
                           {random_floats({1, 1031}, 7), random_floats({1031}, 8), random_floats({1031}, 9)});
}

TEST(Float16Kernels, LayerNormalizationOverSeveralAxesAndBroadcastScale) {
  check_half_matches_float(layer_norm(1, false), 17, {random_floats({3, 7, 33}, 10), random_floats({7, 33}, 11)});
  // Scale broadcast inside the normalized dims: the element-by-element path.
  check_half_matches_float(layer_norm(1, true), 17,
                           {random_floats({2, 7, 5}, 12), random_floats({1, 5}, 13), random_floats({7, 1}, 14)});
  check_half_matches_float(layer_norm(-2, false), 17, {random_floats({1, 1, 3}, 15), random_floats({1, 3}, 16)});
}

Node softmax(const char* op, int64_t axis) {
  Node n = make_node(op, 1);
  n.attributes.set_int("axis", axis);
  return n;
}

TEST(Float16Kernels, SoftmaxLogSoftmaxHardmaxOnRowsAndColumns) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    SCOPED_TRACE(op);
    // Rows (the attention hot path), odd lengths, and a vocabulary-sized row.
    check_half_matches_float(softmax(op, -1), 13, {random_floats({2, 12, 37}, 20, -8, 8)});
    check_half_matches_float(softmax(op, -1), 13, {random_floats({3, 257}, 21, -8, 8)});
    check_half_matches_float(softmax(op, -1), 13, {random_floats({1, 5003}, 22, -8, 8)});
    // The axis not innermost: the column path, inner sizes 3 and 65 (a partial chunk).
    check_half_matches_float(softmax(op, 1), 13, {random_floats({2, 33, 3}, 23, -8, 8)});
    check_half_matches_float(softmax(op, 0), 13, {random_floats({7, 65}, 24, -8, 8)});
    // Opset 11 flattens from `axis` on.
    check_half_matches_float(softmax(op, 1), 11, {random_floats({2, 3, 5}, 25, -8, 8)});
  }
}

TEST(Float16Kernels, SoftmaxOfMaskedScoresHasNoNaN) {
  // Scores masked with -65504 (what the fp16 pass makes of -FLT_MAX masks) give exact
  // zeros, and the unmasked entries still sum to one.
  Tensor x = random_floats({4, 9}, 26, -4, 4);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = r + 1; c < 9; ++c) x.data_as<float>()[r * 9 + c] = -65504.0f;
  check_half_matches_float(softmax("Softmax", -1), 13, {x});
  const Tensor h = to_half(x);
  const auto y = run_node(softmax("Softmax", -1), 13, {&h});
  for (int64_t r = 0; r < 4; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < 9; ++c) {
      const float v = float(y[0].data_as<Float16>()[r * 9 + c]);
      ASSERT_FALSE(std::isnan(v));
      if (c > r) {
        EXPECT_EQ(v, 0.0f);
      }
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0f, 5e-3f);  // up to 9 float16 roundings of values <= 1
  }
}

Node reduce(const char* op, int64_t keepdims, std::vector<int64_t> axes_attr = {}) {
  Node n = make_node(op, 1);
  n.attributes.set_int("keepdims", keepdims);
  if (!axes_attr.empty()) n.attributes.set_ints("axes", axes_attr);
  return n;
}

TEST(Float16Kernels, ReduceMeanWithAxesInputAndAttribute) {
  // Opset 18: axes as an int64 input beside the float16 data.
  Node n = make_node("ReduceMean", 2);
  for (const auto& axes : std::vector<std::vector<int64_t>>{{2}, {0}, {1}, {0, 2}, {-1, 1}}) {
    check_half_matches_float(n, 18, {random_floats({3, 7, 33}, 30, -2, 3), int64s(axes)});
  }
  check_half_matches_float(make_node("ReduceMean", 1), 18, {random_floats({5, 1001}, 31)});  // every axis
  // Opset 13: axes as an attribute; BERT-style mean over the hidden size, kept dims.
  check_half_matches_float(reduce("ReduceMean", 1, {-1}), 13, {random_floats({2, 37, 768}, 32, -2, 3)});
  check_half_matches_float(reduce("ReduceMean", 0, {2, 3}), 13, {random_floats({2, 3, 7, 9}, 33)});
}

TEST(Float16Kernels, EveryReduction) {
  struct Case {
    const char* op;
    float lo, hi;  // inputs in a range where the op is defined and its result finite
  };
  for (const Case c : {Case{"ReduceSum", -1, 1}, Case{"ReduceMax", -5, -1}, Case{"ReduceMin", 1, 5},
                       Case{"ReduceProd", 0.9f, 1.1f}, Case{"ReduceL1", -1, 1}, Case{"ReduceL2", -1, 1},
                       Case{"ReduceLogSum", 0.1f, 2}, Case{"ReduceLogSumExp", -3, 3},
                       Case{"ReduceSumSquare", -1, 1}}) {
    SCOPED_TRACE(c.op);
    const int64_t opset = std::string(c.op) == "ReduceSum" ? 13 : 18;
    for (const auto& axes : std::vector<std::vector<int64_t>>{{2}, {0}, {0, 2}})
      check_half_matches_float(make_node(c.op, 2), opset, {random_floats({3, 5, 17}, 40, c.lo, c.hi), int64s(axes)});
    // Opset 13 (12 for ReduceSum): axes attribute.
    check_half_matches_float(reduce(c.op, 0, {1}), std::string(c.op) == "ReduceSum" ? 12 : 13,
                             {random_floats({4, 129}, 41, c.lo, c.hi)});
  }
}

TEST(Float16Kernels, EmptyReductionsGiveTheOpsIdentity) {
  // Max over nothing is -inf (float16 has no numeric_limits: the float32 accumulator's).
  const Tensor empty = to_half(Tensor(DType::Float32, {2, 0}));
  const Tensor axis = int64s({1});
  const auto max = run_node(make_node("ReduceMax", 2), 18, {&empty, &axis});
  ASSERT_EQ(max[0].dtype(), DType::Float16);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(float(max[0].data_as<Float16>()[i]), -INFINITY);
  const auto min = run_node(make_node("ReduceMin", 2), 18, {&empty, &axis});
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(float(min[0].data_as<Float16>()[i]), INFINITY);
  const auto lse = run_node(make_node("ReduceLogSumExp", 2), 18, {&empty, &axis});
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(float(lse[0].data_as<Float16>()[i]), -INFINITY);
}

// LayerNormalization and RMSNormalization take bfloat16 too (one kernel for both,
// float32 inside): against the float32 kernel on the same bfloat16-rounded values,
// within the output's rounding to bfloat16 (relative 2^-8; 8e-3 leaves room for the
// reference's last bits). Softmax takes it as well (tests/ops/cpu/test_softmax.cc).
TEST(Float16Kernels, BFloat16RowNormsComputeInFloat) {
  auto to_bf16 = [](const Tensor& t) {
    Tensor b(DType::BFloat16, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) b.data_as<BFloat16>()[i] = BFloat16(t.data_as<float>()[i]);
    return b;
  };
  auto widen = [](const Tensor& b) {
    Tensor t(DType::Float32, b.shape());
    for (int64_t i = 0; i < b.numel(); ++i) t.data_as<float>()[i] = float(b.data_as<BFloat16>()[i]);
    return t;
  };
  Node rms = make_node("RMSNormalization", 2);
  rms.attributes.set_int("axis", -1);
  for (const auto& [node, opset] : {std::pair{layer_norm(-1, false), int64_t{17}}, std::pair{rms, int64_t{23}}}) {
    SCOPED_TRACE(node.op_type);
    const Tensor x = to_bf16(random_floats({3, 37}, 50, -3, 3)), scale = to_bf16(random_floats({37}, 51));
    const Tensor xf = widen(x), scalef = widen(scale);
    const auto got = run_node(node, opset, {&x, &scale});
    const auto want = run_node(node, opset, {&xf, &scalef});
    ASSERT_EQ(got[0].dtype(), DType::BFloat16);
    expect_close(widen(got[0]), values_of(want[0]), 8e-3f, kAtol);
  }
  EXPECT_EQ(why_refused(softmax("Softmax", -1), 13, {{DType::BFloat16, {2, 4}}}), "");
}

}  // namespace
}  // namespace ember::test
