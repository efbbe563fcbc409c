// Helpers for the shape/movement op tests: nodes with absent inputs, data to move,
// and references written as "which input element does output element i read". The
// shared helpers (make_node, random_tensor, expect_close) are tests/test_util.h.
#pragma once

#include "graph/graph.h"
#include "ops/evaluate.h"
#include "test_util.h"

#include <ember/core/error.h>
#include <ember/core/tensor.h>

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ember::test {

// make_node (tests/test_util.h) with the inputs `present` marks false left out ("").
inline Node make_node(const std::string& op, size_t num_inputs, size_t num_outputs, const std::vector<bool>& present) {
  Node n = make_node(op, num_inputs, num_outputs);
  for (size_t i = 0; i < present.size() && i < num_inputs; ++i)
    if (!present[i]) n.inputs[i] = "";
  return n;
}

inline std::vector<Tensor> run(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
  return evaluate_node(node, opset, inputs);
}

// Data to move, never all zero: floats in [-4, 4], integers in [-1000, 999], uint8 in
// [0, 255], bools (random_tensor, tests/test_util.h); float16 as random finite bit
// patterns (the ops move bytes, so any pattern must arrive unchanged).
inline Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float64: return random_tensor(dtype, shape, -4, 4, rng);
    case DType::Int64:
    case DType::Int32: return random_tensor(dtype, shape, -1000, 999, rng);
    case DType::Bool: return random_tensor(dtype, shape, 0, 1, rng);
    case DType::UInt8: return random_tensor(dtype, shape, 0, 255, rng);
    case DType::Float16: {
      Tensor t(dtype, shape);
      for (bool all_zero = t.numel() > 0; all_zero;)
        for (int64_t i = 0; i < t.numel(); ++i) {
          t.data_as<uint16_t>()[i] = static_cast<uint16_t>(rng() & 0xbbff);
          all_zero = all_zero && (t.data_as<uint16_t>()[i] & 0x7fff) == 0;
        }
      return t;
    }
    default: ADD_FAILURE() << "random_tensor: unsupported dtype " << dtype_name(dtype); return Tensor(dtype, shape);
  }
}

inline Tensor ints(const std::vector<int64_t>& v, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DType::Int64, shape);
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

inline Tensor floats(const std::vector<float>& v, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DType::Float32, shape);
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// The expected output of a pure data-movement op: output element at multi-index i is
// input element src(i) (a flat index), or `fill` (one element's bytes) when src is -1.
inline Tensor expected_by_index(const Tensor& in, const Shape& out_shape,
                                const std::function<int64_t(const std::vector<int64_t>&)>& src,
                                const void* fill = nullptr) {
  Tensor out(in.dtype(), out_shape);
  const size_t elem = dtype_bits(in.dtype()) / 8;
  const auto* from = static_cast<const uint8_t*>(in.data());
  auto* to = static_cast<uint8_t*>(out.data());
  for (int64_t o = 0; o < out.numel(); ++o) {
    const int64_t s = src(unravel(o, out_shape));
    if (s >= 0)
      std::memcpy(to + o * elem, from + s * elem, elem);
    else if (fill)
      std::memcpy(to + o * elem, fill, elem);
  }
  return out;
}

inline void expect_same(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(shape_to_string(actual.shape()), shape_to_string(expected.shape()));
  ASSERT_EQ(actual.nbytes(), expected.nbytes());
  const auto* a = static_cast<const uint8_t*>(actual.data());
  const auto* e = static_cast<const uint8_t*>(expected.data());
  const size_t elem = std::max(1, dtype_bits(actual.dtype()) / 8);
  for (size_t i = 0; i < actual.nbytes(); ++i)
    ASSERT_EQ(a[i], e[i]) << "first difference in element " << i / elem;
}

// Runs `body` and checks it raises ember::Error whose message names the node and
// contains `needle`.
template <class Body>
void expect_error(const Node& node, const std::string& needle, Body body) {
  try {
    body();
    ADD_FAILURE() << "expected an ember::Error containing '" << needle << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(node.label()), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

inline const std::vector<DType>& movement_dtypes() {
  static const std::vector<DType> dtypes{DType::Float32, DType::Int64, DType::Bool, DType::Float16};
  return dtypes;
}

}  // namespace ember::test
