// Helpers shared by the dense-op tests (conv, pool, matmul, batch norm): running one
// node, and the plain-loop references of the fused activations. Random inputs
// (random_floats), nodes and expect_close come from tests/test_util.h.
#pragma once

#include "graph/graph.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "test_util.h"

#include <ember/core/error.h>
#include <ember/core/tensor.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace ember::test {

inline std::vector<float> values_of(const Tensor& t) {
  const float* p = t.data_as<float>();
  return {p, p + t.numel()};
}

// Runs a node with evaluate_node; absent optional inputs are nullptr (and the node's
// input name is blanked so schemas see them as absent).
inline std::vector<Tensor> run_node(Node node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                    int threads = 1) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) node.inputs[i] = "";
  return evaluate_node(node, opset, inputs, threads);
}

// How run_kernel builds the node's CPU kernel: with every input value known at plan
// time (constant weights) or none (weights computed by the graph), and its dense math.
struct KernelBuild {
  bool values_known = true;
  DenseMath math = DenseMath::Float32;
};

// Runs a kernel built from `init` once on `inputs`, with the workspace it asked for;
// its one output.
inline Tensor run_built_kernel(const Kernel& kernel, const KernelInit& init, const std::vector<const Tensor*>& inputs) {
  Tensor y(init.outputs[0].dtype, init.outputs[0].shape);
  Tensor* out = &y;
  void* ws = init.workspace_bytes ? std::aligned_alloc(64, (init.workspace_bytes + 63) / 64 * 64) : nullptr;
  kernel.run(RunArgs{inputs, std::span<Tensor* const>(&out, 1), ws, 1, nullptr});
  std::free(ws);
  return y;
}

// Builds the node's first CPU kernel as `how` says and runs it once.
inline std::vector<Tensor> run_kernel(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                      KernelBuild how) {
  std::vector<TensorType> types(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) types[i] = {inputs[i]->dtype(), inputs[i]->shape()};
  const std::vector<const Tensor*> values = how.values_known ? inputs : std::vector<const Tensor*>(inputs.size());
  KernelInit init{node, opset, Device{}, types, values, infer_node(node, opset, types, values)};
  init.dense_math = how.math;
  std::string why;
  auto entries = find_kernels(node.domain, node.op_type, opset, DeviceKind::Cpu);
  EXPECT_FALSE(entries.empty());
  auto kernel = entries.at(0)->factory(init, &why);
  if (!kernel) throw Error("no kernel: " + why);  // the test fails with the reason, not a crash
  return {run_built_kernel(*kernel, init, inputs)};
}

// Like run_node, but tells the kernel no input value is known at plan time (weights
// computed by the graph), exercising the non-constant-weights path.
inline std::vector<Tensor> run_node_runtime_inputs(const Node& node, int64_t opset,
                                                   const std::vector<const Tensor*>& inputs) {
  return run_kernel(node, opset, inputs, {.values_known = false});
}

// bf16 math is what --precision bf16 runs on a CPU with AVX512_BF16 (sessions refuse
// it elsewhere); its tests skip, saying so, on other CPUs.
#define SKIP_WITHOUT_BF16()                                                                     \
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "this CPU has no AVX512_BF16"

// Under --precision bf16 (DenseMath::BFloat16) with constant weights.
inline std::vector<Tensor> run_node_bf16(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
  return run_kernel(node, opset, inputs, {.math = DenseMath::BFloat16});
}

// The float32 tensor with each value rounded to the nearest bfloat16 (ties to even),
// as the bf16 kernels round their operands. Inputs are finite.
inline Tensor rounded_to_bf16(const Tensor& t) {
  Tensor r(DType::Float32, t.shape());
  const float* from = t.data_as<float>();
  float* to = r.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &from[i], 4);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&to[i], &bits, 4);
  }
  return r;
}

// The largest |a - b| / (|b| + atol) over two equal-length float lists.
inline double max_relative_difference(const Tensor& a, const std::vector<float>& b, double atol) {
  double worst = 0;
  for (size_t i = 0; i < b.size(); ++i)
    worst = std::max(worst, std::abs(double(a.data_as<float>()[i]) - b[i]) / (std::abs(double(b[i])) + atol));
  return worst;
}

// The factory's refusal reason for this node, or "" when it builds.
inline std::string why_refused(const Node& node, int64_t opset, const std::vector<TensorType>& types) {
  const std::vector<const Tensor*> unknown(types.size(), nullptr);
  KernelInit init{node, opset, Device{}, types, unknown, infer_node(node, opset, types, unknown)};
  std::string why;
  for (const KernelEntry* e : find_kernels(node.domain, node.op_type, opset, DeviceKind::Cpu))
    if (e->factory(init, &why)) return "";
  return why;
}

// Plain references of the fused activations, as the com.ember contract defines them.
inline float activate(const std::string& kind, const std::vector<float>& p, float x) {
  if (kind == "Relu") return x > 0 ? x : 0;
  if (kind == "LeakyRelu") return x > 0 ? x : p[0] * x;
  if (kind == "Clip") return std::min(std::max(x, p[0]), p[1]);
  if (kind == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (kind == "Tanh") return std::tanh(x);
  if (kind == "HardSigmoid") return std::max(0.f, std::min(1.f, p[0] * x + p[1]));
  if (kind == "HardSwish") return x * std::max(0.f, std::min(1.f, x / 6 + 0.5f));
  if (kind == "Gelu") return 0.5f * x * (1 + std::erf(x / std::sqrt(2.f)));
  if (kind == "GeluTanh")
    return 0.5f * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979f) * (x + 0.044715f * x * x * x)));
  if (kind == "Elu") return x > 0 ? x : p[0] * (std::exp(x) - 1);
  if (kind == "Swish" || kind == "QuickGelu") return x / (1 + std::exp(-p[0] * x));
  if (kind == "Abs") return std::fabs(x);
  if (kind == "Softplus") return std::log1p(std::exp(x));
  if (kind == "Mish") return x * std::tanh(std::log1p(std::exp(x)));
  if (kind == "Softsign") return x / (1 + std::fabs(x));
  return x;
}

struct ActivationCase {
  std::string kind;
  std::vector<float> params;
};

inline std::vector<ActivationCase> all_activations() {
  return {{"", {}},          {"Relu", {}},      {"LeakyRelu", {0.1f}}, {"Clip", {-0.5f, 0.7f}},
          {"Sigmoid", {}},   {"Tanh", {}},      {"HardSigmoid", {0.3f, 0.4f}},
          {"HardSwish", {}}, {"Gelu", {}},      {"GeluTanh", {}},
          // oneDNN post-ops with a parameter, and table functions ember applies after the
          // primitive (oneDNN has no post-op for them).
          {"Elu", {0.7f}},   {"Swish", {0.7f}}, {"QuickGelu", {1.702f}}, {"Abs", {}},
          {"Softplus", {}},  {"Mish", {}},      {"Softsign", {}}};
}

inline void set_activation(Node& node, const ActivationCase& a) {
  node.attributes.set_string("activation", a.kind);
  if (!a.params.empty()) node.attributes.set_floats("activation_params", a.params);
}

// A Conv's attributes, per spatial dim.
struct ConvParams {
  Shape strides, dilations, pads_begin, pads_end;  // per spatial dim
  int64_t group = 1;
};

// Direct convolution over 1..3 spatial dims (missing leading dims are size 1).
inline std::vector<float> reference_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvParams& p,
                                  const Shape& y_shape) {
  const size_t sd = x.rank() - 2, pad = 3 - sd;
  auto dims3 = [&](const Shape& s, size_t from, int64_t fill) {
    Shape r(pad, fill);
    r.insert(r.end(), s.begin() + from, s.begin() + from + sd);
    return r;
  };
  const Shape in = dims3(x.shape(), 2, 1), k = dims3(w.shape(), 2, 1), out = dims3(y_shape, 2, 1);
  const Shape st = dims3(p.strides, 0, 1), dl = dims3(p.dilations, 0, 1), pb = dims3(p.pads_begin, 0, 0);
  const int64_t n_batch = x.shape()[0], c_in = x.shape()[1], m = w.shape()[0];
  const int64_t cg = c_in / p.group, mg = m / p.group;
  const float* xp = x.data_as<float>();
  const float* wp = w.data_as<float>();
  std::vector<float> y;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b ? b->data_as<float>()[oc] : 0;
            const int64_t g = oc / mg;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                    const int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                    const int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t c = g * cg + ic;
                    acc += double(xp[(((n * c_in + c) * in[0] + i0) * in[1] + i1) * in[2] + i2]) *
                           wp[(((oc * cg + ic) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
            y.push_back(static_cast<float>(acc));
          }
  return y;
}

inline Node conv_node(const ConvParams& p, bool bias, const std::string& auto_pad = "NOTSET") {
  Node node = make_node("Conv", bias ? 3 : 2);
  node.attributes.set_ints("strides", p.strides);
  node.attributes.set_ints("dilations", p.dilations);
  if (auto_pad == "NOTSET") {
    Shape pads = p.pads_begin;
    pads.insert(pads.end(), p.pads_end.begin(), p.pads_end.end());
    node.attributes.set_ints("pads", pads);
  } else {
    node.attributes.set_string("auto_pad", auto_pad);
  }
  node.attributes.set_int("group", p.group);
  return node;
}

// An N x C x D.. float32 tensor in the CPU's blocked layout N x C/b x D.. x b.
inline Tensor blocked(const Tensor& plain, int64_t b) {
  const Shape& s = plain.shape();
  const int64_t plane = shape_numel(s) / (s[0] * s[1]);
  Shape shape{s[0], s[1] / b};
  shape.insert(shape.end(), s.begin() + 2, s.end());
  shape.push_back(b);
  Tensor t(DType::Float32, shape);
  for (int64_t n = 0, at = 0; n < s[0]; ++n)
    for (int64_t g = 0; g < s[1] / b; ++g)
      for (int64_t i = 0; i < plane; ++i)
        for (int64_t k = 0; k < b; ++k, ++at)
          t.data_as<float>()[at] = plain.data_as<float>()[(n * s[1] + g * b + k) * plane + i];
  return t;
}

}  // namespace ember::test
