// Helpers the graph tests share: random float tensors and scalar initializers. Nodes
// (make_node with named inputs and outputs, "<output>_node") and the rest come from
// tests/test_util.h.
#pragma once

#include "graph/graph.h"
#include "test_util.h"

#include <ember/core/tensor.h>

#include <random>
#include <string>
#include <vector>

namespace ember::test {

// float32 random_tensor in [lo, hi].
inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  return random_tensor(DType::Float32, shape, lo, hi, rng);
}

inline Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  *t.data_as<float>() = v;
  return t;
}

}  // namespace ember::test
