// Helpers for the elementwise kernel tests: random tensors of any dtype, element
// access as double, a plain broadcasting reference and a tolerant comparison.
#pragma once

#include "graph/graph.h"
#include "ops/cpu/elementwise.h"
#include "ops/evaluate.h"

#include <ember/core/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ember::test {

// Element i of t as a double (every dtype the elementwise kernels take).
inline double element(const Tensor& t, int64_t i) {
  double v = 0;
  const bool ok = dispatch(AllTypes{}, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = convert<double>(t.data_as<T>()[i]);
  });
  EXPECT_TRUE(ok) << dtype_name(t.dtype());
  return v;
}

inline void set_element(Tensor& t, int64_t i, double v) {
  dispatch(AllTypes{}, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data_as<T>()[i] = convert<T>(v);
  });
}

// v as it reads back once stored in `dtype` (the rounding a kernel's output gets).
inline double round_to(DType dtype, double v) {
  Tensor t(dtype, {});
  set_element(t, 0, v);
  return element(t, 0);
}

inline Tensor from_values(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, values[static_cast<size_t>(i)]);
  return t;
}

// Uniform values in [lo, hi]; integers for integer dtypes, 0/1 for bool.
inline Tensor random_tensor(DType dtype, const Shape& shape, double lo, double hi, std::mt19937& rng) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  const bool is_int = !is_float_dtype(dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = dtype == DType::Bool ? double(rng() & 1)
                     : is_int            ? static_cast<double>(integer(rng))
                                         : real(rng);
    set_element(t, i, v);
  }
  return t;
}

// "Add float32 [2, 3] [3]": names a case in failure messages.
template <class... Parts> std::string describe(const Parts&... parts) {
  std::ostringstream out;
  ((out << parts << ' '), ...);
  return out.str();
}

inline Node make_node(const std::string& op, size_t num_inputs, Attributes attrs = {}) {
  Node node;
  node.name = "n_" + op;
  node.op_type = op;
  for (size_t i = 0; i < num_inputs; ++i) {
    std::string name(1, 'x');
    name += std::to_string(i);
    node.inputs.push_back(name);
  }
  node.outputs = {"y"};
  node.attributes = std::move(attrs);
  return node;
}

// Numpy's broadcast of two shapes (the tests' own, to check the schema against).
inline Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// Replaces every element by its nearest integer, so comparisons see ties.
inline void round_values(Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, std::round(element(t, i)));
}

// The flat index in an input of shape `in` that numpy broadcasting reads for output
// element `flat` of shape `out`.
inline int64_t broadcast_source(const Shape& in, const Shape& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  const size_t pad = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (d < pad) continue;
    const int64_t dim = in[d - pad];
    if (dim != 1) index += coord * stride;
    stride *= dim;
  }
  return index;
}

// Reference: out[i] = f(inputs at their broadcast positions), as doubles.
inline std::vector<double> reference(const std::vector<const Tensor*>& inputs, const Shape& out,
                                     const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> result;
  std::vector<double> args(inputs.size());
  for (int64_t i = 0; i < shape_numel(out); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k)
      args[k] = element(*inputs[k], broadcast_source(inputs[k]->shape(), out, i));
    result.push_back(f(args));
  }
  return result;
}

// |got - want| <= atol + rtol * |want| elementwise, NaN matching NaN, Inf matching Inf.
inline void expect_close(const Tensor& got, const std::vector<double>& want, double rtol,
                         double atol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numel() && failures < 5; ++i) {
    const double g = element(got, i), w = want[static_cast<size_t>(i)];
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
    }
  }
}

}  // namespace ember::test
