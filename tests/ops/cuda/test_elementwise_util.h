// Helpers for the CUDA elementwise tests: the shapes every op runs on, a tensor with
// edge values, and what the CUDA factory says about a node (no GPU needed: the
// family's factories decide before touching the device).
#pragma once

#include "cuda_harness.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ember::test {

// Odd sizes so that every vector width leaves a tail (and 1 takes the scalar path).
inline const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> shapes = {{1}, {7}, {33, 17}, {2, 3, 257}, {4099}};
  return shapes;
}

// Tolerances for one elementwise op. float32: CUDA's libm is within a few ulp of
// glibc's (atol for results near 0); float16: the output's rounding (2^-11 relative);
// bfloat16: the output's rounding (8 mantissa bits: 2^-9 relative, up to 2^-8 = 3.9e-3
// between neighbours), twice that for margin.
inline double ew_rtol(DType dtype) {
  return dtype == DType::Float16 ? 2e-3 : dtype == DType::BFloat16 ? 8e-3 : 1e-5;
}
inline double ew_atol(DType dtype) {
  return dtype == DType::Float16 ? 1e-4 : dtype == DType::BFloat16 ? 1e-3 : 1e-6;
}

// "" when a CUDA kernel takes the node (inputs in `plan_time` are known), else the
// reasons the factories gave.
inline std::string cuda_refusal(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                                const std::vector<const Tensor*>& values = {}) {
  std::vector<const Tensor*> known = values;
  known.resize(types.size(), nullptr);
  const std::vector<TensorType> outputs = infer_node(node, opset, types, known);
  const auto entries = find_kernels(node.domain, node.op_type, opset, DeviceKind::Cuda);
  if (entries.empty()) return "no CUDA kernel registered";
  std::string reasons;
  for (const KernelEntry* entry : entries) {
    KernelInit init{node, opset, Device{DeviceKind::Cuda, 0}, types, known, outputs};
    std::string why;
    if (entry->factory(init, &why)) return "";
    reasons += why;
  }
  return reasons.empty() ? "refused without a reason" : reasons;
}

// A one-element tensor holding v (converted as Cast does).
inline Tensor scalar_of(DType dtype, double v, const Shape& shape = {}) {
  Tensor wide(DType::Float64, shape);
  for (int64_t i = 0; i < wide.numel(); ++i) wide.data_as<double>()[i] = v;
  return cast_to(wide, dtype);
}

// Random values in [lo, hi] with NaN, +-Inf, +-0 and halves (rounding ties) mixed in.
inline Tensor edge_tensor(DType dtype, const Shape& shape, double lo, double hi, std::mt19937& rng) {
  Tensor wide = random_tensor(DType::Float32, shape, lo, hi, rng);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.f, -0.f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f};
  float* v = wide.data_as<float>();
  for (int64_t i = 0; i < wide.numel(); i += 3) v[i] = specials[(i / 3) % 10];
  return cast_to(wide, dtype);
}

}  // namespace ember::test
