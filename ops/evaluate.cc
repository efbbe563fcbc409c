#include "ops/evaluate.h"

#include "graph/passes/passes.h"
#include "ops/registry.h"
#include "ops/string_movement.h"

#include <ember/core/error.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>

namespace ember {

namespace {

uint64_t physical_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                 : std::numeric_limits<uint64_t>::max();
  }();
  return bytes;
}

// An output no allocation could hold (its size overflows, or exceeds this machine's
// memory) is refused here, naming the node, before a kernel sizes tables with its dims
// or the allocator fails (fuzzing found a Tile with repeats of 2^32 + 2 whose kernel
// asked for a 32 GiB index table).
void check_output_sizes(const Node& node, const std::vector<TensorType>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorType& t = outputs[i];
    if (!t.present()) continue;
    const auto what = [&] {
      return node.label() + ": output " + std::to_string(i) + " would be " + dtype_name(t.dtype) + " " +
             shape_to_string(t.shape);
    };
    uint64_t bits = static_cast<uint64_t>(std::max(dtype_bits(t.dtype), 1));
    bool overflow = false;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error(what() + ", with a negative dimension");
      overflow = overflow || __builtin_mul_overflow(bits, static_cast<uint64_t>(d), &bits);
    }
    const uint64_t limit = physical_memory_bytes();
    if (overflow || bits / 8 > limit)
      throw Error(what() + ", " + (overflow ? "too large to address" : std::to_string(bits / 8) + " bytes") +
                  ", more than this machine's memory (" + std::to_string(limit) + " bytes)");
  }
}

}  // namespace

std::vector<TensorType> infer_node(const Node& node, int64_t opset,
                                   const std::vector<TensorType>& input_types,
                                   const std::vector<const Tensor*>& input_values) {
  const Schema* schema = find_schema(node.domain, node.op_type);
  if (!schema) throw Error(node.label() + ": ember does not support this operator");
  InferContext ctx{node, opset, input_types, input_values};
  std::vector<TensorType> out;
  try {
    out = schema->infer(ctx);
  } catch (const DataDependentShape&) {
    throw;
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(node.label(), 0) == 0) throw;
    throw Error(node.label() + ": " + msg);
  }
  out.resize(node.outputs.size());
  check_output_sizes(node, out);
  return out;
}

namespace {

// A fused node no CPU kernel takes (ember's fused attention has none on purpose) is
// evaluated as the nodes it was fused from, as the planner would run it.
std::vector<Tensor> evaluate_decomposition(const Node& node, const Graph& parts,
                                           const std::vector<const Tensor*>& inputs, int num_threads,
                                           const std::unordered_map<std::string, Tensor>* scope,
                                           const RunStop* stop) {
  std::unordered_map<std::string, Tensor> env;
  for (size_t i = 0; i < node.inputs.size() && i < inputs.size(); ++i)
    if (inputs[i] && !node.inputs[i].empty()) env[node.inputs[i]] = *inputs[i];
  for (const auto& [name, t] : parts.initializers) env[name] = t;
  for (const Node& part : parts.nodes) {
    std::vector<const Tensor*> part_inputs;
    for (const auto& name : part.inputs) {
      auto it = name.empty() ? env.end() : env.find(name);
      part_inputs.push_back(it != env.end() ? &it->second : nullptr);
    }
    std::vector<Tensor> results = evaluate_node(part, parts.opset(part.domain), part_inputs, num_threads, scope, stop);
    for (size_t k = 0; k < part.outputs.size(); ++k)
      if (!part.outputs[k].empty()) env[part.outputs[k]] = std::move(results[k]);
  }
  std::vector<Tensor> outputs;
  for (const auto& name : node.outputs) {
    auto it = name.empty() ? env.end() : env.find(name);
    outputs.push_back(it != env.end() ? it->second : Tensor());
  }
  return outputs;
}

}  // namespace

namespace {

// evaluate_node, with the output types given when `output_types` is not nullptr.
std::vector<Tensor> evaluate(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                             int num_threads, const std::unordered_map<std::string, Tensor>* scope,
                             const RunStop* stop, const std::vector<TensorType>* output_types) {
  if (moves_strings(node, inputs)) return move_strings(node, opset, inputs, num_threads, stop);
  std::vector<TensorType> types(node.inputs.size());
  std::vector<const Tensor*> values(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size() && i < inputs.size(); ++i)
    if (inputs[i]) {
      types[i] = {inputs[i]->dtype(), inputs[i]->shape()};
      values[i] = inputs[i];
    }
  const auto entries = find_kernels(node.domain, node.op_type, opset, DeviceKind::Cpu);
  const bool sizes_own_outputs = !entries.empty() && entries[0]->flags.sizes_own_outputs;
  KernelInit init{node, opset, Device{}, types, values,
                  sizes_own_outputs ? std::vector<TensorType>(node.outputs.size())
                  : output_types    ? *output_types
                                    : infer_node(node, opset, types, values)};
  init.num_threads = num_threads;

  std::string reasons;
  std::unique_ptr<Kernel> kernel;
  const KernelEntry* entry = nullptr;
  for (const KernelEntry* e : entries) {
    std::string why;
    kernel = e->factory(init, &why);
    if (kernel) {
      entry = e;
      break;
    }
    reasons += (reasons.empty() ? "" : "; ") + why;
  }
  if (!kernel) {
    const Attribute* parts = node.attributes.find(kDecompositionAttribute);
    if (parts && parts->g) return evaluate_decomposition(node, *parts->g, inputs, num_threads, scope, stop);
    throw Error(node.label() + ": no CPU kernel" + (reasons.empty() ? "" : " (" + reasons + ")"));
  }

  std::vector<Tensor> outputs;
  for (const auto& t : init.outputs) outputs.emplace_back(t.present() ? Tensor(t.dtype, t.shape) : Tensor());
  if (entry->flags.output_aliases_input0) {
    outputs[0] = inputs[0]->clone();
    outputs[0].set_shape(init.outputs[0].shape);
    return outputs;
  }
  std::vector<Tensor*> out_ptrs;
  for (size_t i = 0; i < outputs.size(); ++i)
    out_ptrs.push_back(node.outputs[i].empty() || (outputs[i].empty() && !sizes_own_outputs) ? nullptr
                                                                                             : &outputs[i]);
  std::unique_ptr<void, decltype(&std::free)> workspace(
      init.workspace_bytes ? std::aligned_alloc(64, (init.workspace_bytes + 63) / 64 * 64) : nullptr,
      std::free);
  RunArgs args{inputs, out_ptrs, workspace.get(), num_threads, nullptr, scope};
  args.stop = stop;
  kernel->run(args);
  return outputs;
}

}  // namespace

std::vector<Tensor> evaluate_node(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                  int num_threads, const std::unordered_map<std::string, Tensor>* scope,
                                  const RunStop* stop) {
  return evaluate(node, opset, inputs, num_threads, scope, stop, nullptr);
}

std::vector<Tensor> evaluate_inferred_node(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                           const std::vector<TensorType>& output_types) {
  return evaluate(node, opset, inputs, 1, nullptr, nullptr, &output_types);
}

NodeEvaluator cpu_node_evaluator() {
  return [](const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
    return evaluate_node(node, opset, inputs);
  };
}

}  // namespace ember
