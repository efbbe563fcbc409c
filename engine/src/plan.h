// A Plan: the graph compiled for one set of input shapes. Immutable once built;
// shared by every run with those shapes.
#pragma once

#include "graph/graph.h"
#include "graph/schema.h"
#include "ops/kernel.h"

#include <ember/core/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

// Where a value's bytes live during a run.
enum class Storage {
  Arena,     // an offset in the run's arena of `device`
  Constant,  // a weight or a plan-time folded value (owned by the session or plan)
  Input,     // the caller's input tensor
  Output,    // the caller's output tensor
};

struct PlannedValue {
  std::string name;
  TensorType type;
  Device device;
  Storage storage = Storage::Arena;
  size_t offset = 0;              // Arena: bytes from the arena's start
  const Tensor* constant = nullptr;  // Constant
  int io_index = -1;              // Input/Output: position in the graph's list
  int alias_of = -1;              // shares the bytes of this value (Reshape & co)
};

struct Plan;
struct NodeDecision;  // engine/src/node_decisions.h

struct PlannedStep {
  std::string node_label;  // "Conv 'conv1'" or "copy 'x' cpu->cuda:0"
  std::string node_name;
  std::string op_type;
  std::string kernel;      // what runs it, for --explain
  Device device;
  std::shared_ptr<const Kernel> kernel_impl;  // shared with later plans (NodeDecisions)
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids; -1 for an unused optional output
  size_t workspace_offset = 0;  // in the arena of `device`
  size_t workspace_bytes = 0;
  double flops = 0;  // per run, where the kernel knows them (KernelInit::flops)
  // Plans the step runs inside its workspace (a planned If's branches), for --explain;
  // owned by kernel_impl. A branch that cannot run at these shapes has no plan but
  // the error it raises if taken.
  struct Subplan {
    std::string name;
    const Plan* plan = nullptr;
    std::string error;
  };
  std::vector<Subplan> subplans;
};

// A number no other plan of this process has had.
uint64_t new_plan_id();

struct Plan {
  // What run contexts key their bindings by (a freed plan's address may be reused).
  uint64_t id = new_plan_id();
  // The signature this plan is for: input shapes, and where inputs and outputs live.
  std::vector<Shape> input_shapes;
  std::vector<Device> input_devices, output_devices;
  std::vector<PlannedValue> values;
  std::vector<PlannedStep> steps;
  std::vector<int> input_values;    // value id per graph input
  std::vector<int> output_values;   // value id per graph output
  std::vector<std::pair<Device, size_t>> arena_bytes;  // per device
  std::vector<std::shared_ptr<const Tensor>> folded;  // values computed at plan time
  // What this plan decided per node, shared with the plans made after it for the same
  // node inputs (engine/src/node_decisions.h); it holds their kernels and folded values.
  std::vector<std::shared_ptr<const NodeDecision>> decisions;
  size_t nodes_reused = 0;   // nodes planned from an earlier plan's decision
  size_t nodes_decided = 0;  // nodes whose decision this plan made (and shares)
  // Folded values a device reads, copied there for this plan alone: they depend on the
  // input shapes, so unlike weights they cannot be shared by name across plans.
  std::vector<std::unique_ptr<Tensor>> device_constants;
  // Host heap its kernels took when it was made (oneDNN primitives, the code they
  // generate, descriptors), measured around planning: tensors are counted above.
  size_t kernel_bytes = 0;

  // Nodes from the first one whose output shape depends on input data (NonZero, Loop,
  // a Reshape of a computed shape) onwards: the executor runs them one by one on the
  // host after the steps, allocating as it goes.
  struct EagerNode {
    const Node* node;
    int64_t opset;
  };
  std::vector<EagerNode> eager;
  std::vector<std::pair<std::string, int>> eager_reads;  // planned values they read
  std::vector<std::unique_ptr<Node>> made_nodes;  // eager nodes the planner wrote (renames)
  // Expansions of nodes no kernel runs (Schema::expand): their nodes and constants,
  // which the steps and values refer to for the plan's life.
  std::vector<std::shared_ptr<const Graph>> expansions;
  std::vector<bool> output_is_eager;  // per graph output: produced by an eager node
  std::vector<std::string> output_names;
  std::vector<std::string> notes;  // placement fallbacks, for --explain
  // The intra-op threads its kernels were made for and run on: the session's, or one
  // for a plan too small to pay for a second thread (engine/src/session.cc).
  int num_threads = 1;

  size_t arena_size(Device device) const;
  // What one run does, its branches and loop bodies counted once: the floating-point
  // operations its kernels report, and the bytes its steps read and write (each value
  // once per step), for the work of the kernels that report none.
  struct Work {
    double flops = 0;
    size_t bytes = 0;
  };
  Work work() const;
  // Node steps (not copies) placed on `device`, and in all.
  size_t node_steps_on(Device device) const;
  size_t node_steps() const;
};

}  // namespace ember
