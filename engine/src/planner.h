// The Planner compiles a Graph for one set of input shapes: it infers every shape,
// folds what is known before the run, places each node on the first backend that has
// a kernel for it, inserts the copies between devices, and lays out each device's
// arena by liveness.
#pragma once

#include "engine/src/backend.h"
#include "engine/src/plan.h"
#include "graph/graph.h"
#include "ops/packed_weights.h"

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace ember {

// Weights uploaded to devices, and their packed forms, once per session, shared by
// every plan.
class WeightCache {
 public:
  const Tensor* get(const std::string& name, const Tensor& host, Backend& backend);
  PackedWeights& packed() { return packed_; }
  const PackedWeights& packed() const { return packed_; }

 private:
  PackedWeights packed_;
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, Tensor> uploaded_;
};

struct PlannerOptions {
  int num_threads = 1;
  DenseMath dense_math = DenseMath::Float32;  // given to every kernel
  // Where the caller's inputs are and where it wants the outputs; empty: on the host.
  std::vector<Device> input_devices, output_devices;
};

class NodeDecisions;

// `backends` in order of preference; the CPU backend must be among them. `decisions`,
// when given, are reused where a node's inputs are those of an earlier plan's node,
// and get this plan's (engine/src/node_decisions.h).
std::unique_ptr<Plan> build_plan(const Graph& graph, std::span<const Shape> input_shapes,
                                 std::span<Backend* const> backends, WeightCache& weights,
                                 const PlannerOptions& options, NodeDecisions* decisions = nullptr);

// Raises one ember::Error listing every node whose operator has no kernel on any of
// `backends` (at the graph's opset), so a user sees them all at once.
void check_supported(const Graph& graph, std::span<Backend* const> backends);

// The plan as text: per step its device, kernel, output shapes and arena offsets;
// the copies; the peak arena bytes per device.
std::string explain_plan(const Plan& plan);

}  // namespace ember
