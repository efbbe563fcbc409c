// Internal to the planner (not used outside engine/src/planner.cc,
// plan_control_flow.cc): PlanBuilder, which builds one Plan from a Graph. Its core
// (values, placement, copies, the eager tail, output binding, arena layout) is in
// planner.cc; the planning of If, Loop and Scan as sub-plans in plan_control_flow.cc.
#pragma once

#include "engine/src/backend.h"
#include "engine/src/node_decisions.h"
#include "engine/src/plan.h"
#include "engine/src/planned_if.h"
#include "engine/src/planned_loop.h"
#include "engine/src/planner.h"
#include "graph/graph.h"
#include "ops/registry.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ember {

// A value a sub-plan (an If branch, a Loop or Scan body) reads: one of its own graph
// inputs or a value of the enclosing plan; known while planning (a constant), or else
// the sub-plan's next run-time input.
struct OuterValue {
  std::string name;
  TensorType type;
  const Tensor* known = nullptr;
};

class PlanBuilder {
 public:
  // `decisions`, when given, are the session's earlier plans' decisions per node, which
  // this plan reuses where a node's inputs are the same and adds to.
  PlanBuilder(const Graph& graph, std::span<Backend* const> backends, WeightCache& weights,
              const PlannerOptions& options, NodeDecisions* decisions = nullptr);

  // The whole graph's plan for these input shapes (build_plan), or a sub-plan: an If
  // branch or a Loop or Scan body (plan_control_flow.cc).
  std::unique_ptr<Plan> build(std::span<const Shape> input_shapes);
  std::unique_ptr<Plan> build_branch(std::span<const OuterValue> outer, std::span<const OuterValue> own = {});

 private:
  // The plan's values: backends by device, new values, aliases, graph inputs, names to ids.
  Backend& cpu() const;
  Backend& backend_for(Device device) const;
  int new_value(const std::string& name, TensorType type, Device device, Storage storage);
  int root(int id) const;
  void add_graph_inputs(std::span<const Shape> shapes);
  const Tensor* find_initializer(const std::string& name) const;
  int lookup(const std::string& name);
  const Tensor* known_value(int id) const;

  // One node: folded now, placed on the first backend with a kernel for it, or its
  // decomposition.
  void add_node(const Node& node);
  // Folds the node when its outputs are known now; `folded` gets them (each output,
  // empty where absent).
  bool fold(const Node& node, int64_t opset, const std::vector<TensorType>& types,
            const std::vector<const Tensor*>& values, const std::vector<TensorType>& out_types, bool all_known,
            std::vector<std::shared_ptr<const Tensor>>& folded);
  void add_folded(const std::string& name, const std::shared_ptr<const Tensor>& t);
  struct Choice {
    Backend* backend = nullptr;  // nullptr: nothing can run the node, see `reasons`
    std::string reasons;
    std::string note;  // why the kernel is on the device it is, for --explain
    const KernelEntry* entry = nullptr;
    std::shared_ptr<const Kernel> kernel;
    size_t workspace = 0;
    double flops = 0;
  };
  // Decisions kept across plans (engine/src/node_decisions.h).
  bool is_top_level(const Node& node) const;
  bool sign(const Node& node, const std::vector<int>& in_ids, NodeSignature& signature) const;
  void remember(const std::string& key, std::shared_ptr<NodeDecision> decision);
  void apply(const Node& node, const std::shared_ptr<const NodeDecision>& decision, const std::vector<int>& in_ids);
  Choice choose_kernel(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                       const std::vector<const Tensor*>& values, const std::vector<TensorType>& out_types,
                       const std::vector<Device>& in_devices);
  void place(const Node& node, Choice choice, std::vector<int> in_ids,
             const std::vector<TensorType>& out_types);

  // Copies between devices: one per (value, device).
  int on_device(int id, Device device);
  void add_copy(std::string label, Backend& copier, int from, int to);

  // The eager tail: the nodes from the first data-dependent shape on, and what they read.
  void add_eager(const Node& node, int64_t opset);
  void read_subgraph_eagerly(const Graph& g);
  void read_eagerly(const std::string& name);

  // If, Loop and Scan planned as sub-plans (plan_control_flow.cc), or left to run eagerly.
  bool plan_if(const Node& node, int64_t opset);
  void inline_branch(const Node& node, int64_t opset, bool condition);
  bool plan_branches(const Node& node);
  // The values of this plan that `bodies` read (sorted, once each); the ids of those
  // known only at run time are appended to `run_time`, in that order.
  std::vector<OuterValue> outer_values(std::initializer_list<const Graph*> bodies, std::vector<int>& run_time);
  PlannedBranch plan_branch(const Graph& branch, std::span<const OuterValue> outer,
                            std::span<const OuterValue> own = {});
  bool plan_loop(const Node& node, int64_t opset);
  std::string loop_trips(const Node& node, LoopBody& loop, std::vector<OuterValue>& own, std::vector<int>& inputs);
  std::string scan_trips(const Node& node, int64_t opset, LoopBody& loop, std::vector<OuterValue>& own,
                         std::vector<int>& inputs);
  std::string plan_body(const Node& node, LoopBody& loop, std::span<const OuterValue> own, std::vector<int>& inputs,
                        std::vector<TensorType>& out_types);
  void add_loop_step(const Node& node, LoopBody loop, const std::vector<int>& inputs,
                     const std::vector<TensorType>& out_types);

  // Readers and overwrites: when a node's output may take its input's bytes.
  void count_readers();
  bool can_overwrite(const Node& node, size_t k, int in, const std::vector<int>& out_ids);
  // The inputs whose bytes a kernel with these flags may write its output 0 over.
  static std::vector<size_t> overwritable_inputs(const KernelFlags& flags, size_t inputs);
  void set_alias(int id, int of);  // value `id` takes the bytes of value `of`
  bool is_graph_output(const std::string& name) const;

  // Finishing the plan: binding the graph's outputs, laying out each device's arena.
  void bind_graph_outputs();
  void lay_out_arenas();

  // What is planned, for whom, with what.
  const Graph& graph_;
  std::span<Backend* const> backends_;
  WeightCache& weights_;
  PlannerOptions options_;
  std::unique_ptr<Plan> plan_;
  // Names to value ids; each value's copies on other devices, keyed (id, device).
  std::unordered_map<std::string, int> ids_;
  std::map<std::pair<int, std::string>, int> moved_;
  // Values the eager tail makes, and the planned values it reads.
  std::unordered_set<std::string> eager_values_, pinned_;
  // How many node inputs read each value, counted when first needed (count_readers:
  // only kernels that may overwrite an input ask); in a graph with subgraphs, unknown.
  std::unordered_map<std::string, int> readers_;
  // How many node inputs read each value in the steps placed so far.
  std::unordered_map<std::string, int> placed_reads_;
  enum class ReaderCount { NotYet, Known, Unknown } reader_count_ = ReaderCount::NotYet;
  std::unordered_set<int> aliased_;  // values another value aliases (set_alias)
  std::unordered_set<int> overwrote_;  // outputs that took a dead input's bytes (can_overwrite)
  std::vector<const Graph*> inlined_;  // If branches inlined into this plan
  NodeDecisions* decisions_ = nullptr;
};

}  // namespace ember
