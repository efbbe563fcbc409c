#include "engine/src/planned_if.h"

#include "engine/src/plan_binding.h"

#include <ember/profile.h>

#include <ember/core/error.h>

#include <algorithm>

namespace ember {

namespace {

// The branches bound over one run context's workspace for this step, made on the
// context's first run of each branch and kept while its arena stays where it is.
struct BranchBindings final : KernelState {
  void* workspace = nullptr;
  std::unique_ptr<PlanBinding> bound[2];  // else, then
};

}  // namespace

PlannedIf::PlannedIf(PlannedBranch then_branch, PlannedBranch else_branch)
    : branches_{std::move(else_branch), std::move(then_branch)} {}

PlannedIf::~PlannedIf() = default;

const Plan& PlannedIf::planned_branch() const {
  return branches_[1].plan ? *branches_[1].plan : *branches_[0].plan;
}

size_t PlannedIf::workspace_bytes() const {
  size_t bytes = 0;
  for (const PlannedBranch& b : branches_)
    if (b.plan) bytes = std::max(bytes, b.plan->arena_size(Device{}));
  return bytes;
}

std::unique_ptr<KernelState> PlannedIf::make_state() const { return std::make_unique<BranchBindings>(); }

void PlannedIf::run(const RunArgs& args) const {
  const Tensor& condition = *args.inputs[0];
  if (condition.numel() != 1) throw Error("the condition must hold one element");
  const bool taken = *static_cast<const uint8_t*>(condition.data()) != 0;
  auto& bindings = *static_cast<BranchBindings*>(args.state);
  if (bindings.workspace != args.workspace) {
    bindings.bound[0].reset();
    bindings.bound[1].reset();
    bindings.workspace = args.workspace;
  }
  const PlannedBranch& branch = branches_[taken];
  if (!branch.plan) throw Error(branch.error);
  std::unique_ptr<PlanBinding>& bound = bindings.bound[taken];
  if (!bound) {
    bound = PlanBinding::on_host(*branch.plan, args.workspace);
  }
  bound->bind_io(args.inputs.subspan(1), args.outputs);
  bound->run_all(args.num_threads, args.profile, args.profile_origin_ns, args.stop);
}

}  // namespace ember
