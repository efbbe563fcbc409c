// An If whose condition is known only at run time, planned ahead: each branch is a
// sub-plan made for the enclosing plan's shapes (on the host), and the step runs the
// one the condition picks in its own workspace. The planner makes one only when both
// branches plan completely and agree on their outputs' types and shapes, so the If
// does not end the static plan. (An If whose condition is known while planning is
// not a step at all: the planner inlines the branch it takes.)
#pragma once

#include "engine/src/plan.h"
#include "ops/kernel.h"

#include <memory>
#include <string>

namespace ember {

// A branch planned for the enclosing plan's shapes, or the error planning it raised
// (a branch that cannot run at these shapes raises it only if a run takes it).
struct PlannedBranch {
  std::unique_ptr<Plan> plan;
  std::string error;
  bool data_dependent = false;  // planned, but with nodes only a run can size
};

class PlannedIf final : public Kernel {
 public:
  // The step's inputs are the condition, then the sub-plans' inputs (the enclosing
  // values the branches read); its outputs are the sub-plans' outputs. At least one
  // branch has a plan.
  PlannedIf(PlannedBranch then_branch, PlannedBranch else_branch);
  ~PlannedIf() override;

  void run(const RunArgs& args) const override;
  std::unique_ptr<KernelState> make_state() const override;

  const PlannedBranch& branch(bool condition) const { return branches_[condition]; }
  // A branch with a plan (the then branch if both have one): the outputs' types.
  const Plan& planned_branch() const;
  // The larger branch's host arena: the step's workspace.
  size_t workspace_bytes() const;

 private:
  PlannedBranch branches_[2];  // else, then
};

}  // namespace ember
