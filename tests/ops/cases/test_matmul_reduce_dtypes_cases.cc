// MatMul on bfloat16 and float64 and ReduceMax on bfloat16 (the dtypes ONNX's expanded
// attention functions use), against plain double-precision references on random inputs.
#include "op_test.h"

#include <algorithm>
#include <limits>

namespace ember::test {
namespace {

// C[b] = A[b] @ B[b] with numpy batch broadcasting (A [batch.., M, K], B [.., K, N]),
// summed in double.
Tensor matmul_reference(const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor c(DType::Float64, out_shape);
  const int64_t r = static_cast<int64_t>(out_shape.size());
  const int64_t m = out_shape[r - 2], n = out_shape[r - 1], k = a.shape().back();
  const int64_t batches = c.numel() / (m * n);
  const int64_t a_batches = a.numel() / (m * k), b_batches = b.numel() / (k * n);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += element(a, (t % a_batches) * m * k + i * k + p) * element(b, (t % b_batches) * k * n + p * n + j);
        set_element(c, t * m * n + i * n + j, sum);
      }
  return c;
}

// bfloat16 rounds the result once (8 bits of mantissa: 2^-8 relative) after a float32
// sum; float64 sums in another order than the reference (1e-12).
Tolerance matmul_tolerance(DType t) {
  return t == DType::BFloat16 ? Tolerance{1.0 / 128, 1e-2} : Tolerance{1e-12, 1e-12};
}

EMBER_OP_TEST(MatMulDtypes, Bfloat16AndFloat64MatchAPlainProduct) {
  // A batch of 2 x 3 against a broadcast B, a 2-D B (folded batch), and odd sizes.
  const std::vector<std::pair<Shape, Shape>> shapes = {{{2, 3, 5, 7}, {3, 7, 4}}, {{4, 9, 13}, {13, 6}}, {{1, 1}, {1, 1}}};
  for (DType dtype : {DType::BFloat16, DType::Float64}) {
    uint32_t seed = 11;
    for (const auto& [sa, sb] : shapes) {
      OpCase c;
      c.node = make_node("MatMul", 2);
      c.opset = 13;
      c.inputs = {seeded_tensor(dtype, sa, seed++), seeded_tensor(dtype, sb, seed++)};
      Shape out(std::max(sa.size(), sb.size()) - 2, 1);
      for (size_t d = 0; d < out.size(); ++d) {
        const auto dim = [&](const Shape& s) {
          const size_t off = out.size() - (s.size() - 2);
          return d < off ? int64_t{1} : s[d - off];
        };
        out[d] = std::max(dim(sa), dim(sb));
      }
      out.push_back(sa[sa.size() - 2]);
      out.push_back(sb.back());
      c.reference = [out](const std::vector<const Tensor*>& in) {
        return std::vector<Tensor>{matmul_reference(*in[0], *in[1], out)};
      };
      c.tolerance = matmul_tolerance;
      c.what = std::string("MatMul ") + dtype_name(dtype) + " " + shape_to_string(sa) + " x " + shape_to_string(sb);
      expect_op_matches_reference(c);
    }
  }
}

EMBER_OP_TEST(ReduceMaxDtypes, Bfloat16MatchesAPlainMax) {
  // Over the last axis (contiguous runs) and over axis 1 (whole rows folded), keepdims.
  for (int64_t axis : {2, 1}) {
    OpCase c;
    Attributes a;
    a.set_int("keepdims", 1);
    c.node = make_node("ReduceMax", 2, a);
    c.opset = 18;
    const Shape shape{3, 5, 37};
    Tensor axes(DType::Int64, {1});
    *axes.data_as<int64_t>() = axis;
    c.inputs = {seeded_tensor(DType::BFloat16, shape, 7 + axis, -4, 4), axes};
    c.plan_time_inputs = {1};
    c.reference = [shape, axis](const std::vector<const Tensor*>& in) {
      Shape out = shape;
      out[axis] = 1;
      Tensor y(DType::Float64, out);
      const int64_t outer = axis == 2 ? 15 : 3, n = shape[axis], inner = axis == 2 ? 1 : 37;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t r = 0; r < n; ++r) m = std::max(m, element(*in[0], (o * n + r) * inner + i));
          set_element(y, o * inner + i, m);
        }
      return std::vector<Tensor>{y};
    };
    c.tolerance = [](DType) { return Tolerance{0, 0}; };  // a max picks an input: exact
    c.what = "ReduceMax bfloat16 over axis " + std::to_string(axis);
    expect_op_matches_reference(c);
  }
}

}  // namespace
}  // namespace ember::test
