// ArgMax / ArgMin against a plain reference: every axis (negative too), keepdims 0/1,
// select_last_index with many ties, several dtypes.
#include "ops/evaluate.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <random>
#include <string>

namespace ember {
namespace {

template <class T>
Tensor random_small(DType dtype, const Shape& shape, unsigned seed) {
  Tensor t(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-4, 4);  // few distinct values: many ties
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = T(dist(rng)) * T(1.5);
  return t;
}

Tensor run_arg(const std::string& op, int64_t opset, const Tensor& x, int64_t axis, bool keepdims,
               bool last) {
  Node node;
  node.op_type = op;
  node.name = "arg";
  node.inputs = {"x"};
  node.outputs = {"y"};
  node.attributes.set_int("axis", axis);
  node.attributes.set_int("keepdims", keepdims);
  if (last) node.attributes.set_int("select_last_index", 1);
  return evaluate_node(node, opset, {&x})[0];
}

template <class T>
void check_all_axes(DType dtype, const Shape& shape, unsigned seed) {
  const Tensor x = random_small<T>(dtype, shape, seed);
  const int64_t rank = x.rank();
  for (const std::string op : {"ArgMax", "ArgMin"})
    for (int64_t axis = -rank; axis < rank; ++axis)
      for (bool keep : {false, true})
        for (bool last : {false, true}) {
          const int64_t a = axis < 0 ? axis + rank : axis;
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < a; ++d) outer *= shape[d];
          for (int64_t d = a + 1; d < rank; ++d) inner *= shape[d];
          const int64_t n = shape[a];
          const Tensor y = run_arg(op, last ? 12 : 11, x, axis, keep, last);
          Shape want_shape = shape;
          if (keep) want_shape[a] = 1;
          else want_shape.erase(want_shape.begin() + a);
          ASSERT_EQ(y.shape(), want_shape);
          ASSERT_EQ(y.dtype(), DType::Int64);
          const T* xs = x.data_as<T>();
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
              int64_t best = 0;
              for (int64_t k = 1; k < n; ++k) {
                const T v = xs[(o * n + k) * inner + i], b = xs[(o * n + best) * inner + i];
                const bool wins = op == std::string("ArgMax") ? v > b : v < b;
                if (wins || (last && v == b)) best = k;
              }
              ASSERT_EQ(y.data_as<int64_t>()[o * inner + i], best)
                  << op << " axis " << axis << " keepdims " << keep << " last " << last;
            }
        }
}

TEST(ArgReduce, EveryAxisKeepdimsAndSelectLastIndex) {
  check_all_axes<float>(DType::Float32, {3, 5, 7}, 1);
  check_all_axes<float>(DType::Float32, {2, 130, 3}, 2);  // columns beyond one chunk
  check_all_axes<float>(DType::Float32, {2, 3, 131}, 3);
  check_all_axes<double>(DType::Float64, {4, 6}, 4);
  check_all_axes<int32_t>(DType::Int32, {5, 1, 9}, 5);
  check_all_axes<int64_t>(DType::Int64, {17}, 6);
  check_all_axes<int8_t>(DType::Int8, {3, 4}, 7);
}

TEST(ArgReduce, DefaultsAreAxis0AndKeepdims) {
  const Tensor x = random_small<float>(DType::Float32, {4, 3}, 9);
  Node node;
  node.op_type = "ArgMax";
  node.inputs = {"x"};
  node.outputs = {"y"};
  const Tensor y = evaluate_node(node, 13, {&x})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
}

TEST(ArgReduce, AxisOutOfRangeIsAnError) {
  const Tensor x = random_small<float>(DType::Float32, {4, 3}, 9);
  EXPECT_THROW(run_arg("ArgMax", 13, x, 2, true, false), Error);
  EXPECT_THROW(run_arg("ArgMin", 13, x, -3, true, false), Error);
}

}  // namespace
}  // namespace ember
