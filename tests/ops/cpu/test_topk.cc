// TopK against a plain reference (a stable sort of (value, index) pairs): every axis,
// largest 0/1, sorted 0/1, ties ordered by lower index, K as attribute (opset < 10)
// and as input, K = 0 and K = n.
#include "ops/evaluate.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

namespace ember {
namespace {

template <class T>
Tensor random_ties(DType dtype, const Shape& shape, unsigned seed) {
  Tensor t(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-6, 6);  // few distinct values: many ties
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = T(dist(rng)) * T(2);
  return t;
}

struct TopKArgs {
  int64_t k, axis = -1;
  bool largest = true, sorted = true;
  int64_t opset = 11;
  int threads = 1;
};

std::vector<Tensor> run_topk(const Tensor& x, const TopKArgs& a) {
  Node node;
  node.op_type = "TopK";
  node.name = "t";
  node.inputs = {"x"};
  node.outputs = {"values", "indices"};
  node.attributes.set_int("axis", a.axis);
  Tensor k(DType::Int64, {1});
  *k.data_as<int64_t>() = a.k;
  std::vector<const Tensor*> inputs = {&x};
  if (a.opset < 10) {
    node.attributes.set_int("k", a.k);
  } else {
    node.inputs.push_back("k");
    inputs.push_back(&k);
  }
  if (a.opset >= 11) {
    node.attributes.set_int("largest", a.largest);
    node.attributes.set_int("sorted", a.sorted);
  }
  return evaluate_node(node, a.opset, inputs, a.threads);
}

template <class T>
void check_topk(const Tensor& x, const TopKArgs& a) {
  const Shape& shape = x.shape();
  const int64_t rank = x.rank(), axis = a.axis < 0 ? a.axis + rank : a.axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t n = shape[axis];
  const auto out = run_topk(x, a);
  Shape want_shape = shape;
  want_shape[axis] = a.k;
  ASSERT_EQ(out[0].shape(), want_shape);
  ASSERT_EQ(out[1].shape(), want_shape);
  ASSERT_EQ(out[1].dtype(), DType::Int64);
  const T* xs = x.data_as<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return xs[(o * n + j) * inner + i]; };
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return a.largest ? at(p) > at(q) : at(p) < at(q);
      });
      std::vector<std::pair<T, int64_t>> got, want;
      for (int64_t j = 0; j < a.k; ++j) {
        const int64_t pos = (o * a.k + j) * inner + i;
        got.emplace_back(out[0].data_as<T>()[pos], out[1].data_as<int64_t>()[pos]);
        want.emplace_back(at(order[j]), order[j]);
        ASSERT_EQ(got.back().first, at(got.back().second)) << "value does not match its index";
      }
      if (!a.sorted) {  // any order of the same selection
        std::sort(got.begin(), got.end(), [](auto& p, auto& q) { return p.second < q.second; });
        std::sort(want.begin(), want.end(), [](auto& p, auto& q) { return p.second < q.second; });
      }
      ASSERT_EQ(got, want) << "axis " << a.axis << " k " << a.k << " largest " << a.largest;
    }
}

TEST(TopK, EveryAxisLargestSortedAndTiesByLowerIndex) {
  const Tensor x = random_ties<float>(DType::Float32, {4, 9, 5}, 1);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t n = x.shape()[axis < 0 ? axis + 3 : axis];
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, n})
      for (bool largest : {false, true})
        for (bool sorted : {false, true}) check_topk<float>(x, {k, axis, largest, sorted});
  }
}

TEST(TopK, OtherDtypesAndOpsets) {
  const Tensor xd = random_ties<double>(DType::Float64, {3, 11}, 2);
  const Tensor xi = random_ties<int32_t>(DType::Int32, {7, 6}, 3);
  const Tensor xl = random_ties<int64_t>(DType::Int64, {40}, 4);
  check_topk<double>(xd, {4, 1, true, true, 1});   // k attribute, largest by default
  check_topk<double>(xd, {5, -1, true, true, 10}); // K input, no largest/sorted yet
  check_topk<int32_t>(xi, {3, 0, false, true, 11});
  check_topk<int64_t>(xl, {17, 0, true, true, 24});
  // Negative draws wrap to values above 2^63: an unsigned order differs from a signed one.
  const Tensor xu = random_ties<uint64_t>(DType::UInt64, {5, 9}, 7);
  check_topk<uint64_t>(xu, {4, 1, true, true, 24});
  check_topk<uint64_t>(xu, {3, 0, false, true, 24});
}

TEST(TopK, SeveralThreadsEachUseTheirOwnScratch) {
  const Tensor x = random_ties<float>(DType::Float32, {67, 301}, 6);
  check_topk<float>(x, {10, 1, true, true, 11, 4});
  check_topk<float>(x, {5, 0, false, true, 11, 3});
}

TEST(TopK, KLargerThanTheAxisIsAnError) {
  const Tensor x = random_ties<float>(DType::Float32, {3, 4}, 5);
  EXPECT_THROW(run_topk(x, {5}), Error);
  EXPECT_THROW(run_topk(x, {-1}), Error);
}

}  // namespace
}  // namespace ember
