// Helpers the graph tests share: random float tensors, scalar initializers, nodes.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <random>
#include <string>
#include <vector>

namespace ember::test {

inline Tensor random_tensor(Shape shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::Float32, std::move(shape));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

inline Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  *t.data_as<float>() = v;
  return t;
}

// A standard-domain node named after its first output.
inline Node make_node(std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.op_type = std::move(op);
  n.name = out[0] + "_node";
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

}  // namespace ember::test
