// The helpers every kernel and graph test shares: elements of any numeric dtype as
// doubles, tensors from values, random tensors, nodes to run, and a tolerant comparison
// that says where it fails. Folder helpers build on these (tests/ops/cpu/test_*_util.h,
// tests/ops/cuda/cuda_harness.h, tests/graph/graph_test_util.h); keep one copy here.
#pragma once

#include "graph/graph.h"

#include <ember/core/element_types.h>
#include <ember/core/tensor.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace ember::test {

// Whether element() and set_element() read and write this dtype.
inline bool has_numeric_view(DType dtype) {
  return dispatch(AllTypes{}, dtype, [](auto) {});
}

// Element i of t as a double: every numeric dtype (float16 and bfloat16 widened) and
// bool. Fails the test for dtypes with no numeric view (strings, complex, packed 4-bit).
inline double element(const Tensor& t, int64_t i) {
  double v = 0;
  const bool ok = dispatch(AllTypes{}, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = convert<double>(t.data_as<T>()[i]);
  });
  EXPECT_TRUE(ok) << "element: no numeric view of " << dtype_name(t.dtype());
  return v;
}

// Stores v as element i, converted as ONNX Cast converts (rounded to float16 or
// bfloat16, truncated toward zero for integers, != 0 for bool).
inline void set_element(Tensor& t, int64_t i, double v) {
  const bool ok = dispatch(AllTypes{}, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data_as<T>()[i] = convert<T>(v);
  });
  EXPECT_TRUE(ok) << "set_element: no numeric view of " << dtype_name(t.dtype());
}

// A tensor of `dtype` and `shape` holding `values` (one per element, row-major).
inline Tensor from_values(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size())
      << "from_values: " << values.size() << " values for shape " << shape_to_string(shape);
  const int64_t n = std::min(t.numel(), static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < n; ++i) set_element(t, i, values[static_cast<size_t>(i)]);
  return t;
}

// Uniform random values in [lo, hi] stored as `dtype`: reals rounded to the dtype for
// float types, integers drawn as integers in [ceil(lo), floor(hi)] for integer types,
// 0/1 for bool (whatever the range). Never all zeros where the range holds a nonzero
// value: an all-zero input would let a kernel that ignores it pass.
inline Tensor random_tensor(DType dtype, const Shape& shape, double lo, double hi, std::mt19937& rng) {
  Tensor t(dtype, shape);
  const double int_lo = std::ceil(lo), int_hi = std::floor(hi);
  const bool ok = dispatch(AllTypes{}, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool is_bool = std::is_same_v<T, bool>, is_int = !is_bool && !is_float_v<T>;
    if (is_int && int_lo > int_hi) {
      ADD_FAILURE() << "random_tensor: no integer in [" << lo << ", " << hi << "]";
      return;
    }
    std::uniform_real_distribution<double> real(lo, hi);
    std::uniform_int_distribution<int64_t> integer(is_int ? static_cast<int64_t>(int_lo) : 0,
                                                   is_int ? static_cast<int64_t>(int_hi) : 0);
    const bool can_be_nonzero = is_bool || (is_int ? int_lo != 0 || int_hi != 0 : lo != 0 || hi != 0);
    T* p = t.data_as<T>();
    for (int attempt = 0; attempt < 100; ++attempt) {
      bool all_zero = true;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double v = is_bool ? static_cast<double>(rng() & 1)
                         : is_int ? static_cast<double>(integer(rng))
                                  : real(rng);
        p[i] = convert<T>(v);
        all_zero = all_zero && convert<double>(p[i]) == 0;
      }
      if (!all_zero || t.numel() == 0 || !can_be_nonzero) return;
    }
    ADD_FAILURE() << "random_tensor: 100 draws in [" << lo << ", " << hi << "] were all zeros";
  });
  EXPECT_TRUE(ok) << "random_tensor: no numeric view of " << dtype_name(dtype);
  return t;
}

// random_tensor from a generator of its own, seeded with `seed`: reproducible per call.
inline Tensor seeded_tensor(DType dtype, const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  return random_tensor(dtype, shape, lo, hi, rng);
}

// float32 seeded_tensor, the common input of the float kernels' tests.
inline Tensor random_floats(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  return seeded_tensor(DType::Float32, shape, seed, lo, hi);
}

// Sets graph attribute `name` of `n` (an If branch, a Loop or Scan body).
inline void set_graph(Node& n, const char* name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.kind = Attribute::Kind::Graph;
  a.g = std::move(g);
  n.attributes.set(name, std::move(a));
}

// A node named "n_<op>" reading x0, x1, ... and writing y0, y1, ...
inline Node make_node(const std::string& op, size_t num_inputs, size_t num_outputs = 1, Attributes attrs = {},
                      const std::string& domain = "") {
  Node node;
  node.name = "n_" + op;
  node.op_type = op;
  node.domain = domain;
  for (size_t i = 0; i < num_inputs; ++i) node.inputs.push_back("x" + std::to_string(i));
  for (size_t i = 0; i < num_outputs; ++i) node.outputs.push_back("y" + std::to_string(i));
  node.attributes = std::move(attrs);
  return node;
}

// The same with one output and attributes: make_node("LeakyRelu", 1, alpha).
inline Node make_node(const std::string& op, size_t num_inputs, Attributes attrs) {
  return make_node(op, num_inputs, 1, std::move(attrs));
}

// A node reading and writing the values named (for graphs, where names connect nodes;
// "" marks an absent optional input), named after its first output: "<output>_node".
inline Node make_node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                      Attributes attrs = {}, const std::string& domain = "") {
  Node node;
  node.name = (outputs.empty() ? op : outputs[0]) + "_node";
  node.op_type = op;
  node.domain = domain;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attrs);
  return node;
}

namespace detail {

// |got - want| <= atol + rtol * |want|; NaN matches only NaN, an infinity only itself.
inline bool close_enough(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// Compares element(got, i) with want(i) for every i; one failure naming how many
// elements differ, the worst difference and the first few mismatches.
template <class Want>
void expect_close_elements(const Tensor& got, Want want, double rtol, double atol, const std::string& what) {
  if (!has_numeric_view(got.dtype())) {
    ADD_FAILURE() << what << ": cannot compare " << dtype_name(got.dtype()) << " elements";
    return;
  }
  int64_t failures = 0;
  double worst = 0;
  std::ostringstream first;
  first << std::setprecision(10);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = element(got, i), w = want(i);
    if (std::isfinite(w) && std::isfinite(g)) worst = std::max(worst, std::fabs(g - w));
    if (!close_enough(g, w, rtol, atol) && failures++ < 5)
      first << "\n  element " << i << ": got " << g << ", want " << w;
  }
  if (failures)
    ADD_FAILURE() << what << (what.empty() ? "" : ": ") << failures << " of " << got.numel()
                  << " elements differ (rtol " << rtol << ", atol " << atol << "; worst |got - want| " << worst
                  << ")" << first.str();
}

}  // namespace detail

// Every element of `got` (any numeric dtype, compared as double) close to `want`:
// |got - want| <= atol + rtol * |want|, NaN matching NaN, an infinity itself. Reports
// the first few mismatches with their index, got and want.
inline void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol,
                         const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  detail::expect_close_elements(got, [&](int64_t i) { return want[static_cast<size_t>(i)]; }, rtol, atol, what);
}

// The same against values of another arithmetic type (float references).
template <class T>
  requires(std::is_arithmetic_v<T> && !std::is_same_v<T, double>)
void expect_close(const Tensor& got, const std::vector<T>& want, double rtol, double atol,
                  const std::string& what = "") {
  expect_close(got, std::vector<double>(want.begin(), want.end()), rtol, atol, what);
}

// The same against a tensor of the same shape (its dtype may differ: a float16 result
// against a float32 reference).
inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                         const std::string& what = "") {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_TRUE(has_numeric_view(want.dtype())) << what << ": cannot compare " << dtype_name(want.dtype()) << " elements";
  detail::expect_close_elements(got, [&](int64_t i) { return element(want, i); }, rtol, atol, what);
}

}  // namespace ember::test
