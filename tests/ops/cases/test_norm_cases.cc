// Softmax, LogSoftmax, LayerNormalization and RMSNormalization against plain
// double-precision references: one list for all devices.
#include "op_test.h"

#include <cmath>

namespace ember::test {
namespace {

// float32: sums of up to a few thousand terms in another order, ~1e-6 relative;
// outputs near zero need an absolute bound. float16: the output's rounding (2^-11)
// on values up to ~6, and inputs rounded to half before the kernel sees them (the
// reference reads the same rounded inputs).
Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {1e-5, 1e-5};
    case DType::Float64: return {1e-12, 1e-12};
    default: return {2e-3, 4e-3};
  }
}

// The [outer, n, inner] rows of `shape` around `axis`.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
};
Rows rows_around(const Shape& shape, int64_t axis, bool coerced) {
  Rows r;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) r.outer *= shape[d];
    else if (d == axis || coerced) r.n *= shape[d];
    else r.inner *= shape[d];
  }
  return r;
}

Tensor softmax_reference(const Tensor& x, int64_t axis, bool coerced, bool log) {
  const int64_t rank = x.rank();
  const Rows r = rows_around(x.shape(), axis < 0 ? axis + rank : axis, coerced);
  Tensor y(DType::Float64, x.shape());
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t i = 0; i < r.inner; ++i) {
      auto at = [&](int64_t k) { return (o * r.n + k) * r.inner + i; };
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < r.n; ++k) max = std::max(max, element(x, at(k)));
      for (int64_t k = 0; k < r.n; ++k) sum += std::exp(element(x, at(k)) - max);
      for (int64_t k = 0; k < r.n; ++k) {
        const double shifted = element(x, at(k)) - max;
        y.data_as<double>()[at(k)] = log ? shifted - std::log(sum) : std::exp(shifted) / sum;
      }
    }
  return y;
}

EMBER_OP_TEST(OpSoftmax, EveryAxisOpsetAndDtypeMatchesItsReference) {
  struct Case {
    Shape shape;
    int64_t axis, opset;
  };
  const std::vector<Case> cases = {
      {{2, 3, 17}, -1, 13}, {{2, 3, 17}, 1, 13}, {{2, 3, 17}, 0, 13}, {{4, 1000}, -1, 13}, {{1, 1}, -1, 13},
      {{3, 5, 7}, 1, 11},   {{3, 5, 7}, 0, 11},  {{3, 5, 7}, -1, 11}, {{2, 2, 3}, 3, 11},  // coerced to 2-D
  };
  uint32_t seed = 1;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const Case& s : cases)
      for (DType dtype : {DType::Float32, DType::Float16, DType::Float64}) {
        Attributes a;
        a.set_int("axis", s.axis);
        OpCase c;
        c.node = make_node(op, 1, a);
        c.opset = s.opset;
        c.inputs = {seeded_tensor(dtype, s.shape, seed++, -4, 4)};
        const bool log = std::string(op) == "LogSoftmax", coerced = s.opset < 13;
        const int64_t axis = s.axis;
        c.reference = [=](const std::vector<const Tensor*>& in) {
          return std::vector<Tensor>{softmax_reference(*in[0], axis, coerced, log)};
        };
        c.tolerance = tolerance;
        c.what = std::string(op) + " opset " + std::to_string(s.opset) + " axis " + std::to_string(s.axis) + " " +
                 dtype_name(dtype) + " " + shape_to_string(s.shape);
        expect_op_matches_reference(c);
      }
}

// y = (x - mean) / sqrt(var + epsilon) * scale (+ bias), over each row from `axis` on;
// RMSNormalization: y = x / sqrt(mean(x^2) + epsilon) * scale. Scale and bias are of
// the normalized dims' shape.
Tensor row_norm_reference(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, float epsilon,
                          bool rms) {
  const int64_t rank = x.rank();
  const Rows r = rows_around(x.shape(), axis < 0 ? axis + rank : axis, true);
  Tensor y(DType::Float64, x.shape());
  for (int64_t row = 0; row < r.outer; ++row) {
    const int64_t base = row * r.n;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < r.n; ++k) mean += element(x, base + k) / r.n;
    if (rms) mean = 0;
    for (int64_t k = 0; k < r.n; ++k) var += (element(x, base + k) - mean) * (element(x, base + k) - mean) / r.n;
    const double inv = 1 / std::sqrt(var + double(epsilon));
    for (int64_t k = 0; k < r.n; ++k)
      y.data_as<double>()[base + k] =
          (element(x, base + k) - mean) * inv * element(scale, k) + (bias ? element(*bias, k) : 0.0);
  }
  return y;
}

EMBER_OP_TEST(OpRowNorm, LayerAndRmsNormalizationMatchTheirReference) {
  struct Case {
    Shape x;
    int64_t axis;
    bool bias;
    float epsilon;
  };
  const std::vector<Case> cases = {
      {{2, 7, 768}, -1, true, 1e-5f}, {{2, 7, 768}, -1, false, 1e-5f}, {{3, 5, 7}, 1, true, 1e-5f},
      {{4, 33}, -1, true, 1e-2f},     {{2, 1025}, -1, true, 1e-6f},    {{6, 100}, 0, true, 1e-5f},
  };
  uint32_t seed = 100;
  for (const char* op : {"LayerNormalization", "RMSNormalization"})
    for (const Case& s : cases)
      for (DType dtype : {DType::Float32, DType::Float16}) {
        const bool rms = std::string(op) == "RMSNormalization", bias = s.bias && !rms;
        Attributes a;
        a.set_int("axis", s.axis);
        a.set_float("epsilon", s.epsilon);
        const int64_t axis = s.axis < 0 ? s.axis + static_cast<int64_t>(s.x.size()) : s.axis;
        const Shape p(s.x.begin() + axis, s.x.end());
        OpCase c;
        c.node = make_node(op, bias ? 3 : 2, a);
        c.opset = rms ? 23 : 17;
        c.inputs = {seeded_tensor(dtype, s.x, seed, 1, 3), seeded_tensor(dtype, p, seed + 1, 0.5, 1.5)};
        if (bias) c.inputs.push_back(seeded_tensor(dtype, p, seed + 2));
        seed += 3;
        const float epsilon = s.epsilon;
        c.reference = [=](const std::vector<const Tensor*>& in) {
          return std::vector<Tensor>{row_norm_reference(*in[0], *in[1], bias ? in[2] : nullptr, axis, epsilon, rms)};
        };
        c.tolerance = tolerance;
        c.what = std::string(op) + " axis " + std::to_string(s.axis) + (bias ? " with bias " : " ") +
                 dtype_name(dtype) + " " + shape_to_string(s.x);
        expect_op_matches_reference(c);
      }
}

}  // namespace
}  // namespace ember::test
