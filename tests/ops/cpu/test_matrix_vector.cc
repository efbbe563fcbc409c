// One row times constant weights (ops/cpu/matrix_vector.h), as MatMul, Gemm, FusedGemm,
// Conv and NhwcConv hand it over, against a plain double-precision loop: row counts
// that are not a multiple of the kernel's 4, lengths that are not a multiple of its 8
// lanes, biases, every fused activation, and two threads. The same nodes with the
// weights unknown at plan time take oneDNN's path, and must agree with the loop too. On
// AVX2, MatMul and Gemm of depth 256 and more (960, 1280 here) run ember's own product's
// single-row kernel instead (ops/cpu/packed_gemm.h), held to the same checks.
#include "test_conv_util.h"

namespace ember::test {
namespace {

// float32 dot products of up to 1,300 terms in [-1, 1], summed in another order.
constexpr float kRtol = 1e-4f, kAtol = 1e-4f;

// y[j] = bias[j] + sum_i x[i] w(i, j), with w(i, j) read from B [k, n] or, `rows`, [n, k].
std::vector<float> reference(const Tensor& x, const Tensor& w, bool rows, const Tensor* bias) {
  const int64_t k = x.numel(), n = w.numel() / k;
  std::vector<float> y(n);
  for (int64_t j = 0; j < n; ++j) {
    double s = bias ? bias->data_as<float>()[j] : 0.0;
    for (int64_t i = 0; i < k; ++i) s += double(x.data_as<float>()[i]) * w.data_as<float>()[rows ? j * k + i : i * n + j];
    y[j] = static_cast<float>(s);
  }
  return y;
}

const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1}, {7, 3}, {8, 4}, {37, 13}, {960, 240}, {1280, 1001}};

TEST(MatrixVector, MatMulOfOneRowAgainstConstantWeights) {
  for (const auto& [k, n] : kSizes)
    for (const Shape& x_shape : {Shape{1, k}, Shape{k}, Shape{1, 1, k}}) {
      const Tensor x = random_floats(x_shape, 1), w = random_floats({k, n}, 2);
      SCOPED_TRACE(shape_to_string(x_shape) + " x " + shape_to_string(w.shape()));
      for (int threads : {1, 2}) expect_close(run_node(make_node("MatMul", 2), 13, {&x, &w}, threads)[0], reference(x, w, false, nullptr), kRtol, kAtol);
      expect_close(run_node_runtime_inputs(make_node("MatMul", 2), 13, {&x, &w})[0], reference(x, w, false, nullptr), kRtol, kAtol);
    }
}

// The bias shapes the fusion passes write: [N], [1, N], [1, 1, N].
TEST(MatrixVector, FusedMatMulWithBiasAndActivation) {
  const Tensor x = random_floats({1, 1, 37}, 15), w = random_floats({37, 13}, 16);
  for (const Shape& bias_shape : {Shape{13}, Shape{1, 13}, Shape{1, 1, 13}}) {
    const Tensor bias = random_floats(bias_shape, 17);
    Node node = make_node("FusedMatMul", 3, 1, {}, "com.ember");
    set_activation(node, {"Relu", {}});
    std::vector<float> want = reference(x, w, false, &bias);
    for (float& v : want) v = activate("Relu", {}, v);
    SCOPED_TRACE(shape_to_string(bias_shape));
    expect_close(run_node(node, 1, {&x, &w, &bias}, 2)[0], want, kRtol, kAtol);
    expect_close(run_node_runtime_inputs(node, 1, {&x, &w, &bias})[0], want, kRtol, kAtol);
  }
}

TEST(MatrixVector, GemmWithTransposedWeightsAndBiasRows) {
  const Node with_bias = make_node("Gemm", 3), without = make_node("Gemm", 2);
  for (const auto& [k, n] : kSizes)
    for (bool tb : {false, true})
      for (const Shape& c_shape : {Shape{}, Shape{n}, Shape{1, n}}) {
        const Tensor a = random_floats({1, k}, 3), b = random_floats(tb ? Shape{n, k} : Shape{k, n}, 4);
        const Tensor c = random_floats(c_shape, 5);
        const bool with_c = !c_shape.empty();
        Node node = with_c ? with_bias : without;
        node.attributes.set_int("transB", tb);
        const std::vector<const Tensor*> inputs = with_c ? std::vector<const Tensor*>{&a, &b, &c} : std::vector<const Tensor*>{&a, &b};
        SCOPED_TRACE("k " + std::to_string(k) + " n " + std::to_string(n) + " transB " + std::to_string(tb) + " C " + shape_to_string(c_shape));
        const std::vector<float> want = reference(a, b, tb, with_c ? &c : nullptr);
        expect_close(run_node(node, 13, inputs, 2)[0], want, kRtol, kAtol);
        expect_close(run_node_runtime_inputs(node, 13, inputs)[0], want, kRtol, kAtol);
      }
}

// alpha or beta other than 1 stay with oneDNN: the same answer either way.
TEST(MatrixVector, GemmScaledByAlphaOrBetaStillMatches) {
  const Tensor a = random_floats({1, 37}, 6), b = random_floats({37, 13}, 7), c = random_floats({13}, 8);
  for (const auto& [alpha, beta] : std::vector<std::pair<float, float>>{{2.f, 1.f}, {1.f, 0.5f}, {1.f, 0.f}}) {
    Node node = make_node("Gemm", 3);
    node.attributes.set_float("alpha", alpha);
    node.attributes.set_float("beta", beta);
    std::vector<float> want = reference(a, b, false, nullptr);
    for (int64_t j = 0; j < 13; ++j) want[j] = alpha * want[j] + beta * c.data_as<float>()[j];
    expect_close(run_node(node, 13, {&a, &b, &c})[0], want, kRtol, kAtol);
  }
}

TEST(MatrixVector, FusedGemmAppliesEveryActivation) {
  const Tensor a = random_floats({1, 37}, 9), b = random_floats({13, 37}, 10), c = random_floats({13}, 11);
  const std::vector<float> base = reference(a, b, true, &c);
  for (const ActivationCase& act : all_activations()) {
    Node node = make_node("FusedGemm", 3, 1, {}, "com.ember");
    node.attributes.set_int("transB", 1);
    set_activation(node, act);
    std::vector<float> want = base;
    for (float& v : want) v = activate(act.kind, act.params, v);
    SCOPED_TRACE(act.kind);
    expect_close(run_node(node, 1, {&a, &b, &c})[0], want, kRtol, kAtol);
  }
}

// Squeeze-excite's convolutions: 1x1 filters over a 1x1 image, channels first or last.
TEST(MatrixVector, OneByOneConvolutionOfOneByOneImage) {
  for (const auto& [k, n] : kSizes)
    for (const char* op : {"FusedConv", "NhwcConv"}) {
      const bool last = std::string(op) == "NhwcConv";
      const Tensor x = random_floats(last ? Shape{1, 1, 1, k} : Shape{1, k, 1, 1}, 12);
      const Tensor w = random_floats({n, k, 1, 1}, 13), bias = random_floats({n}, 14);
      Node node = make_node(op, 3, 1, {}, "com.ember");
      node.attributes.set_ints("kernel_shape", {1, 1});
      set_activation(node, {"Sigmoid", {}});
      std::vector<float> want = reference(x, w, true, &bias);
      for (float& v : want) v = activate("Sigmoid", {}, v);
      SCOPED_TRACE(std::string(op) + " k " + std::to_string(k) + " n " + std::to_string(n));
      const auto y = run_node(node, 1, {&x, &w, &bias}, 2);
      EXPECT_EQ(y[0].shape(), last ? (Shape{1, 1, 1, n}) : (Shape{1, n, 1, 1}));
      expect_close(y[0], want, kRtol, kAtol);
      expect_close(run_node_runtime_inputs(node, 1, {&x, &w, &bias})[0], want, kRtol, kAtol);
    }
}

}  // namespace
}  // namespace ember::test
