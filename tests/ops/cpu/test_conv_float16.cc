// float16 inputs run through the float32 kernels (converted around them): the result
// must equal the float32 kernel's on the same (float16-rounded) values, up to the
// rounding of the output to float16. The float32 kernels are checked against plain
// references in the other files.
#include "test_conv_util.h"

#include <immintrin.h>

namespace ember::test {
namespace {

// Output rounding to float16: relative 2^-11, plus a little for values near zero.
constexpr float kRtol = 1e-3f, kAtol = 1e-3f;

Tensor to_half(const Tensor& t) {
  Tensor h(DType::Float16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    h.data_as<uint16_t>()[i] = _cvtss_sh(t.data_as<float>()[i], _MM_FROUND_TO_NEAREST_INT);
  return h;
}

Tensor to_float(const Tensor& h) {
  Tensor t(DType::Float32, h.shape());
  for (int64_t i = 0; i < h.numel(); ++i) t.data_as<float>()[i] = _cvtsh_ss(h.data_as<uint16_t>()[i]);
  return t;
}

// Runs `node` on float16 copies of `inputs` and on their float32 values; compares.
void check_half_matches_float(const Node& node, int64_t opset, const std::vector<Tensor>& inputs,
                              bool runtime_inputs = false) {
  std::vector<Tensor> halves, rounded;
  std::vector<const Tensor*> h_ptrs, f_ptrs;
  for (const Tensor& t : inputs) {
    halves.push_back(to_half(t));
    rounded.push_back(to_float(halves.back()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    h_ptrs.push_back(&halves[i]);
    f_ptrs.push_back(&rounded[i]);
  }
  const auto got = runtime_inputs ? run_node_runtime_inputs(node, opset, h_ptrs) : run_node(node, opset, h_ptrs);
  const auto want = run_node(node, opset, f_ptrs);
  ASSERT_EQ(got[0].dtype(), DType::Float16);
  ASSERT_EQ(got[0].shape(), want[0].shape());
  expect_close(to_float(got[0]), values_of(want[0]), kRtol, kAtol);
}

TEST(Float16, ConvWithConstantWeights) {
  Node node = make_node("Conv", 3);
  node.attributes.set_ints("pads", {1, 1, 1, 1});
  node.attributes.set_ints("strides", {2, 1});
  check_half_matches_float(node, 22,
                           {random_floats({1, 3, 7, 9}, 1), random_floats({4, 3, 3, 3}, 2), random_floats({4}, 3)});
}

TEST(Float16, MatMulWithRuntimeInputs) {
  check_half_matches_float(make_node("MatMul", 2), 13, {random_floats({2, 3, 5}, 4), random_floats({5, 7}, 5)},
                           /*runtime_inputs=*/true);
}

TEST(Float16, MaxPoolAndBatchNorm) {
  Node pool = make_node("MaxPool", 1);
  pool.attributes.set_ints("kernel_shape", {3, 3});
  check_half_matches_float(pool, 12, {random_floats({1, 2, 7, 9}, 6)});
  check_half_matches_float(make_node("BatchNormalization", 5), 15,
                           {random_floats({2, 3, 4, 5}, 7), random_floats({3}, 8), random_floats({3}, 9),
                            random_floats({3}, 10), random_floats({3}, 11, 0.5f, 1.5f)});
}

TEST(Float16, DeformConvWithMaskAndBias) {
  Node node = make_node("DeformConv", 5);
  node.attributes.set_ints("pads", {1, 1, 1, 1});
  check_half_matches_float(node, 19,
                           {random_floats({1, 2, 5, 6}, 1), random_floats({3, 2, 3, 3}, 2),
                            random_floats({1, 18, 5, 6}, 3, -2, 2), random_floats({3}, 4),
                            random_floats({1, 9, 5, 6}, 5, 0, 1)});
}

TEST(Float16, RefusesMixingWithIntegers) {
  EXPECT_NE(why_refused(make_node("MatMul", 2), 13, {{DType::Float16, {2, 3}}, {DType::Int32, {3, 2}}}), "");
}

}  // namespace
}  // namespace ember::test
