// A Plan bound to one run context's memory: every planned value as a tensor over the
// context's arenas, each step's argument arrays, and the kernels' per-context state.
// Built once per (context, plan); a run only points the inputs and outputs at the
// caller's tensors and calls the steps, allocating nothing. The executor binds whole
// plans over its arenas; a step that runs a sub-plan (a planned If body) binds it over
// that step's workspace.
#pragma once

#include "engine/src/backend.h"
#include "engine/src/plan.h"
#include "ops/run_stop.h"

#include <ember/profile.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace ember {

// What a profile says of one step that ran from start_ns for duration_ns.
NodeTiming node_timing(const Plan& plan, const PlannedStep& step, int64_t start_ns, int64_t duration_ns);
// The steady clock in ns, the origin of profile times.
int64_t steady_now_ns();

class PlanBinding {
 public:
  // `arena_base(device)` is where the plan's arena on `device` starts; `stream(device)`
  // is the context's stream there.
  PlanBinding(const Plan& plan, const std::function<void*(Device)>& arena_base,
              const std::function<DeviceStream*(Device)>& stream);

  // A host-only plan (a planned If branch, a Loop or Scan body) bound over `arena`: the
  // workspace of the step that runs it.
  static std::unique_ptr<PlanBinding> on_host(const Plan& plan, void* arena);

  // Points the plan's Input and Output values at the caller's tensors' bytes.
  void bind_io(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs);
  void bind_io(std::span<const Tensor> inputs, std::span<Tensor> outputs);

  // Runs step `s`; an error names the node and its device (a RunStopped passes as it
  // is). `profile` (with the run's start on the steady clock, ns) reaches steps that
  // record steps of their own; `stop` steps with long loops of their own.
  void run_step(size_t s, int num_threads, Profile* profile = nullptr, int64_t origin_ns = 0,
                const RunStop* stop = nullptr);
  // Runs every step, checking `stop` after each; with a `profile`, timing each on the
  // host clock (a host plan: a planned If's branch, a Loop or Scan body) except those
  // that record their own steps.
  void run_all(int num_threads, Profile* profile = nullptr, int64_t origin_ns = 0, const RunStop* stop = nullptr);

  const Plan& plan() const { return plan_; }
  Tensor& tensor(int value) { return tensors_[value]; }
  DeviceStream* stream(size_t s) const { return stream_[s]; }

 private:
  // Points every Input and Output value at input_data(io_index) / output_data(io_index).
  template <class InputData, class OutputData>
  void point_io(const InputData& input_data, const OutputData& output_data);

  const Plan& plan_;
  std::vector<Tensor> tensors_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
  std::vector<size_t> input_begin_, output_begin_;  // per step, into the arrays above
  std::vector<void*> workspace_;                     // per step
  std::vector<DeviceStream*> stream_;                // per step
  std::vector<std::unique_ptr<KernelState>> state_;  // per step
  std::vector<int> io_values_;  // the Input and Output values, which bind_io points
};

}  // namespace ember
