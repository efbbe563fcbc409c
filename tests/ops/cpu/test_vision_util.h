// Helpers the vision/attention/loss kernel tests share.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <random>
#include <string>
#include <vector>

namespace ember::test {

inline Tensor random_floats(const Shape& shape, float lo, float hi, unsigned seed) {
  Tensor t(DType::Float32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

inline Node make_node(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Node n;
  n.name = op;
  n.op_type = std::move(op);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

}  // namespace ember::test
