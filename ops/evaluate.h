// Runs one node on the CPU, outside any plan: for constant folding, plan-time
// evaluation of shape arithmetic, and kernel tests.
#pragma once

#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "graph/schema.h"

#include <ember/core/tensor.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

struct RunStop;  // ops/run_stop.h

// Infers the output types with the op's schema, builds its CPU kernel, allocates the
// outputs and runs it. `inputs` holds nullptr for absent optional inputs. Raises
// ember::Error naming the node when the op is unknown or the inputs do not fit.
// `scope` holds the values of the enclosing graphs, for nodes with subgraphs; `stop`
// (ops/run_stop.h) the run's cancel token and deadline, when it runs inside a run.
std::vector<Tensor> evaluate_node(const Node& node, int64_t opset,
                                  const std::vector<const Tensor*>& inputs, int num_threads = 1,
                                  const std::unordered_map<std::string, Tensor>* scope = nullptr,
                                  const RunStop* stop = nullptr);

// evaluate_node for a caller that has inferred the node's output types already (the
// planner folding a node): they are not inferred again.
std::vector<Tensor> evaluate_inferred_node(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                           const std::vector<TensorType>& output_types);

// Output types of a node for these input types/values, by the op's schema.
std::vector<TensorType> infer_node(const Node& node, int64_t opset,
                                   const std::vector<TensorType>& input_types,
                                   const std::vector<const Tensor*>& input_values);

// evaluate_node on one thread, in the form graph passes take it (constant folding).
NodeEvaluator cpu_node_evaluator();

}  // namespace ember
