// Helpers the graph tests share: random float tensors, scalar initializers, running a
// graph node by node, asking whether the CPU's kernel takes a fused node. Nodes
// (make_node with named inputs and outputs, "<output>_node") and the rest come from
// tests/test_util.h.
#pragma once

#include "graph/graph.h"
#include "graph/schema.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "test_util.h"

#include <ember/core/tensor.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <unordered_map>
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

// Every element within tol * (1 + |want|).
inline void expect_close(const Tensor& got, const Tensor& want, float tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], tol * (1 + std::fabs(want.data_as<float>()[i])))
        << "element " << i;
}

// A 2-D Conv's attributes: k x k windows padded to keep the size (k odd), `group` groups.
inline Attributes same_conv_attributes(int64_t k, int64_t group = 1) {
  Attributes a;
  a.set_ints("kernel_shape", {k, k});
  a.set_ints("pads", {k / 2, k / 2, k / 2, k / 2});
  a.set_int("group", group);
  return a;
}

// How many nodes of the graph are `op`.
inline int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

// Runs the graph node by node with evaluate_node (a fused node runs its own CPU kernel,
// or its decomposition where that kernel declines) and returns its outputs.
inline std::vector<Tensor> run_node_by_node(const Graph& g, const std::vector<Tensor>& inputs) {
  std::unordered_map<std::string, Tensor> env(g.initializers.begin(), g.initializers.end());
  for (size_t i = 0; i < g.inputs.size(); ++i) env[g.inputs[i].name] = inputs[i];
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &env.at(name));
    auto out = evaluate_node(n, g.opset(n.domain), in);
    for (size_t k = 0; k < n.outputs.size(); ++k) env[n.outputs[k]] = out[k];
  }
  std::vector<Tensor> outs;
  for (const auto& o : g.outputs) outs.push_back(env.at(o.name));
  return outs;
}

// Whether the CPU's kernel for `node` takes these inputs (all known at plan time), and
// if not, why: a fused node it declines runs as its decomposition, which computes the
// same, so comparing outputs alone cannot tell.
inline bool cpu_kernel_takes(const Node& node, const std::vector<const Tensor*>& inputs, std::string* why_not) {
  std::vector<TensorType> types;
  for (const Tensor* t : inputs) types.push_back({t->dtype(), t->shape()});
  KernelInit init{node, 1, Device{}, types, inputs, infer_node(node, 1, types, inputs)};
  return find_kernels(node.domain, node.op_type, 1, DeviceKind::Cpu).at(0)->factory(init, why_not) != nullptr;
}

}  // namespace ember::test
