// A Loop or Scan whose iteration count is known while planning, planned ahead: its body
// is one sub-plan made for the per-iteration shapes (on the host), and the step runs
// it once per iteration inside its own workspace. Carried values (Loop) or states
// (Scan) ping-pong between two workspace buffers, the first iteration reading the
// step's inputs and the last writing the step's outputs; scan slices are read from
// and written to the full tensors in place when their axis is the outermost one, else
// through a workspace slice. Nothing is allocated per run or per iteration.
#pragma once

#include "engine/src/plan.h"
#include "ops/kernel.h"

#include <memory>
#include <vector>

namespace ember {

// One scan input or output: the full tensor's shape, the axis it is sliced along
// (normalized) and whether the iterations walk it from the end.
struct ScanAxis {
  Shape full;
  int64_t axis = 0;
  bool reverse = false;
};

// What the planner knows about the loop. The body's run-time inputs are, in order:
// the iteration number (if `counts_iterations`), the states, the scan slices, then the
// enclosing values it reads; its outputs: `skipped_outputs` it computes but the step
// does not return (Loop's condition, known true), the states, the scan slices.
struct LoopBody {
  std::unique_ptr<Plan> plan;
  int64_t trips = 0;
  bool counts_iterations = false;
  size_t skipped_outputs = 0;
  size_t states = 0;
  std::vector<ScanAxis> scan_inputs, scan_outputs;
};

class PlannedLoop final : public Kernel {
 public:
  // The step's inputs are the initial states, the full scan inputs, then the enclosing
  // values the body reads; its outputs the final states, then the full scan outputs.
  explicit PlannedLoop(LoopBody body);
  ~PlannedLoop() override;

  void run(const RunArgs& args) const override;
  std::unique_ptr<KernelState> make_state() const override;

  const Plan& body() const { return *body_.plan; }
  // The body's arena, then the iteration number, the skipped outputs, two buffers per
  // state and the slices of scan tensors not sliced along their outermost axis.
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  struct Layout;
  class State;

  LoopBody body_;
  std::unique_ptr<Layout> layout_;
  size_t workspace_bytes_ = 0;
};

}  // namespace ember
