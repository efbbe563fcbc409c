#include "ops/string_movement.h"

#include "ops/evaluate.h"

#include <ember/core/error.h>

#include <numeric>
#include <set>
#include <string>

namespace ember {

namespace {

// Ops whose outputs are only elements of their string inputs, placed by the other
// inputs (shapes, indices, conditions). Pad is not here: it makes elements ("" for
// strings, 0 for the numbers), and Where's condition stays a bool tensor.
bool is_movement_op(const Node& node) {
  static const std::set<std::string> ops = {
      "Identity", "Reshape",  "Flatten",       "Squeeze",      "Unsqueeze",    "Concat",
      "Gather",   "GatherElements", "GatherND", "Slice",       "Transpose",    "Expand",
      "Tile",     "Split",    "Where",         "Compress",     "ReverseSequence", "ScatterElements",
      "ScatterND", "DepthToSpace", "SpaceToDepth"};
  return node.domain.empty() && ops.count(node.op_type);
}

}  // namespace

bool moves_strings(const Node& node, const std::vector<const Tensor*>& inputs) {
  if (!is_movement_op(node)) return false;
  for (const Tensor* t : inputs)
    if (t && t->dtype() == DType::String) return true;
  return false;
}

std::vector<Tensor> move_strings(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                 int num_threads, const RunStop* stop) {
  std::vector<TensorType> types;
  for (const Tensor* t : inputs) types.push_back(t ? TensorType{t->dtype(), t->shape()} : TensorType{});
  const std::vector<TensorType> out_types = infer_node(node, opset, types, inputs);  // raises on mixed dtypes

  // Element k of the string inputs, all numbered in a row, is pool[k].
  std::vector<const std::string*> pool;
  std::vector<Tensor> numbers;
  numbers.reserve(inputs.size());  // stand_ins points into it
  std::vector<const Tensor*> stand_ins;
  for (const Tensor* t : inputs) {
    if (!t || t->dtype() != DType::String) {
      stand_ins.push_back(t);
      continue;
    }
    Tensor& n = numbers.emplace_back(DType::Int64, t->shape());
    std::iota(n.data_as<int64_t>(), n.data_as<int64_t>() + n.numel(), static_cast<int64_t>(pool.size()));
    for (int64_t i = 0; i < t->numel(); ++i) pool.push_back(t->data_as<std::string>() + i);
    stand_ins.push_back(&n);
  }
  std::vector<Tensor> moved = evaluate_node(node, opset, stand_ins, num_threads, nullptr, stop);
  for (size_t k = 0; k < moved.size() && k < out_types.size(); ++k) {
    if (out_types[k].dtype != DType::String || moved[k].empty()) continue;
    Tensor strings(DType::String, moved[k].shape());
    const int64_t* from = moved[k].data_as<int64_t>();
    for (int64_t i = 0; i < strings.numel(); ++i) {
      if (from[i] < 0 || from[i] >= static_cast<int64_t>(pool.size()))
        throw Error(node.label() + ": internal: moved element number " + std::to_string(from[i]) + " is not one of " +
                    std::to_string(pool.size()) + " strings");
      strings.data_as<std::string>()[i] = *pool[from[i]];
    }
    moved[k] = std::move(strings);
  }
  return moved;
}

}  // namespace ember
