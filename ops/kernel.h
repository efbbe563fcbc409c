// Kernels: built once per node at plan time (where they read attributes, pick
// algorithms and ask for workspace), then run many times without allocating.
#pragma once

#include "graph/graph.h"
#include "graph/schema.h"
#include "ops/packed_weights.h"

#include <ember/core/tensor.h>

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

struct Profile;  // <ember/profile.h>: only the engine's kernels that run sub-plans write it
struct RunStop;  // ops/run_stop.h: only kernels with long loops of their own read it

// A device's stream and library handles as its kernels see them: each device derives
// its own (cuda::StreamContext on CUDA) and only that device's kernels look inside.
// The host has none (nullptr).
struct KernelStream {};

// How the dense kernels (convolutions, matrix products) compute on float32 values:
// exactly, or with operands rounded to bfloat16 and float32 accumulation (the CPU's
// --precision bf16; values between ops stay float32).
enum class DenseMath { Float32, BFloat16 };

// Everything a kernel may look at while it is built.
struct KernelInit {
  const Node& node;
  int64_t opset;
  Device device;
  std::vector<TensorType> inputs;      // concrete types; absent optionals are !present()
  std::vector<const Tensor*> values;   // input values known at plan time, else nullptr
  std::vector<TensorType> outputs;     // as inferred by the schema
  int num_threads = 1;                 // the session's intra-op threads
  DenseMath dense_math = DenseMath::Float32;
  // The device's plan-time stream (the stream and library handles to pick algorithms
  // with); nullptr on the host.
  const KernelStream* device_context = nullptr;

  // Per input: true when values[i] is a weight of the session (it lives as long as the
  // session), whose packed forms `packed_weights` keeps and shares between plans. A
  // value folded for this plan alone is packed by the kernel for itself.
  std::vector<bool> weights = {};
  PackedWeights* packed_weights = nullptr;
  bool is_weight(size_t input) const { return packed_weights && input < weights.size() && weights[input]; }

  // Set by the kernel's factory: scratch bytes its run needs (given in RunArgs).
  size_t workspace_bytes = 0;
  // Set by the factories of kernels whose work is arithmetic (convolutions, matrix
  // products, recurrences): floating-point operations per run. The session tells a
  // plan too small for a second thread by them (engine/src/session.cc).
  double flops = 0;

  [[noreturn]] void fail(const std::string& message) const;  // "<node label>: message"

  // The node's typed attributes, as its schema parsed them (graph/schema.h).
  template <class T>
  std::shared_ptr<const T> attributes() const {
    return attributes_of<T>(node, opset);
  }
};

// The InferContext a kernel factory's node has (same node, opset, inputs and values),
// for the shape-rule helpers (graph/schemas/shape_util.h) its schema also uses.
inline InferContext infer_context(const KernelInit& init) {
  return InferContext{init.node, init.opset, init.inputs, init.values};
}

// What one run context keeps for one kernel between runs (a kernel that runs a
// sub-plan binds it to the context's arena once); made by Kernel::make_state.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

struct RunArgs {
  std::span<const Tensor* const> inputs;  // nullptr for absent optional inputs
  std::span<Tensor* const> outputs;       // preallocated, shapes already set
  void* workspace = nullptr;              // workspace_bytes, 64-byte aligned
  int num_threads = 1;
  // The run context's device stream; nullptr on the host.
  KernelStream* stream = nullptr;
  // Values by name visible to subgraphs (If/Loop/Scan bodies read the enclosing
  // scope); set when the node runs eagerly, else nullptr.
  const std::unordered_map<std::string, Tensor>* scope = nullptr;
  // This run context's state for the kernel (Kernel::make_state); nullptr if it has none.
  KernelState* state = nullptr;
  // When the run is profiled: its profile and start (steady clock, ns). A kernel that
  // runs steps of its own (a planned If's branch) records their times there.
  Profile* profile = nullptr;
  int64_t profile_origin_ns = 0;
  // The run's cancel token and deadline; kernels that loop for long (Loop, Scan,
  // recurrences) check it between iterations. nullptr outside a run.
  const RunStop* stop = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must not allocate, must be safe to call from several threads at once.
  virtual void run(const RunArgs& args) const = 0;
  // State a run context keeps for this kernel, made when the context first binds the
  // plan (not in steady state); most kernels need none.
  virtual std::unique_ptr<KernelState> make_state() const { return nullptr; }
  // Which of the op's implementations on this device the factory chose, where it has
  // several (--explain prints it); nullptr for the op's one or usual implementation.
  virtual const char* variant() const { return nullptr; }
};

// A kernel that is a plain function of its arguments.
class FunctionKernel final : public Kernel {
 public:
  using Fn = void (*)(const RunArgs&);
  explicit FunctionKernel(Fn fn) : fn_(fn) {}
  void run(const RunArgs& args) const override { fn_(args); }

 private:
  Fn fn_;
};

// A factory returns nullptr and sets *why_not when it cannot handle this node (a dtype
// or an attribute value it lacks); the planner then tries the next device.
using KernelFactory = std::unique_ptr<Kernel> (*)(KernelInit& init, std::string* why_not);

}  // namespace ember
