// How the planner plans control flow (PlanBuilder's If, Loop and Scan members; the
// core is in planner.cc). An If is planned like any node when it can be: a condition
// known while planning inlines the branch it takes into the plan; otherwise both
// branches become sub-plans of one step (PlannedIf), made for the enclosing plan's
// shapes on the host, if they plan completely and agree on their outputs. A branch
// that cannot run at these shapes keeps its error, raised only if a run takes it. A
// Scan, and a Loop whose iteration count is known while planning and that cannot stop
// early, run as one step (PlannedLoop) over their body planned once for the
// per-iteration shapes, when the body plans completely and keeps its carried values'
// types. Anything else runs eagerly, with a note in the plan saying why.

#include "engine/src/plan_builder.h"
#include "engine/src/planned_if.h"
#include "engine/src/planned_loop.h"

#include <ember/core/error.h>

#include <algorithm>
#include <set>

namespace ember {

namespace {

void branches_agree(const Node& node, const Plan& a, const Plan& b, std::string* why) {
  if (a.output_values.size() != node.outputs.size() || b.output_values.size() != node.outputs.size()) {
    *why = "its branches do not have one output per If output";
    return;
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const TensorType& x = a.values[a.output_values[i]].type;
    const TensorType& y = b.values[b.output_values[i]].type;
    if (!(x == y)) {
      *why = "its branches' output " + std::to_string(i) + " differ (" + dtype_name(x.dtype) + " " +
             shape_to_string(x.shape) + " and " + dtype_name(y.dtype) + " " + shape_to_string(y.shape) + ")";
      return;
    }
  }
}

const Tensor& known_true() {
  static const Tensor t = [] {
    Tensor yes(DType::Bool, {});
    *yes.data_as<uint8_t>() = 1;
    return yes;
  }();
  return t;
}

int64_t normalized_axis(const Node& node, int64_t axis, size_t rank, const char* attribute) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    throw Error(node.label() + ": " + attribute + " has " + std::to_string(axis) + " for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

// Whether a sub-plan's output `i` is the constant true: a constant output is copied
// into place by the plan's last steps (bind_graph_outputs).
bool is_known_true(const Plan& plan, size_t i) {
  const int out = plan.output_values[i];
  for (const PlannedStep& s : plan.steps) {
    if (s.op_type != "Copy" || s.outputs[0] != out) continue;
    const PlannedValue& v = plan.values[s.inputs[0]];
    return v.storage == Storage::Constant && v.constant->numel() == 1 &&
           *static_cast<const uint8_t*>(v.constant->data()) != 0;
  }
  return false;
}

}  // namespace

// An If is planned like any node when it can be: a condition known now inlines the
// branch it takes; otherwise both branches become sub-plans of one step, if they
// plan completely and agree on their outputs. Returns false to run it eagerly.
bool PlanBuilder::plan_if(const Node& node, int64_t opset) {
  if (node.inputs.empty() || node.inputs[0].empty()) throw Error(node.label() + ": its condition input is missing");
  const int cond = lookup(node.inputs[0]);
  if (const Tensor* known = known_value(cond)) {
    if (known->numel() != 1) throw Error(node.label() + ": the condition must hold one element");
    inline_branch(node, opset, *static_cast<const uint8_t*>(known->data()) != 0);
    return true;
  }
  return plan_branches(node);
}

void PlanBuilder::inline_branch(const Node& node, int64_t opset, bool condition) {
  const Graph& branch = node.attributes.get_graph(condition ? "then_branch" : "else_branch");
  if (branch.outputs.size() != node.outputs.size())
    throw Error(node.label() + ": its branch has " + std::to_string(branch.outputs.size()) + " outputs, the If " +
                std::to_string(node.outputs.size()));
  inlined_.push_back(&branch);
  for (const Node& part : branch.nodes) add_node(part);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const std::string& inner = branch.outputs[i].name;
    if (node.outputs[i].empty()) continue;
    if (!eager_values_.count(inner)) {
      ids_[node.outputs[i]] = lookup(inner);
      continue;
    }
    // The branch went eager: the If's output is a rename the eager run makes.
    auto rename = std::make_unique<Node>();
    rename->name = node.name + "/output" + std::to_string(i);
    rename->op_type = "Identity";
    rename->inputs = {inner};
    rename->outputs = {node.outputs[i]};
    plan_->made_nodes.push_back(std::move(rename));
    add_eager(*plan_->made_nodes.back(), opset);
  }
}

std::vector<OuterValue> PlanBuilder::outer_values(std::initializer_list<const Graph*> bodies,
                                                   std::vector<int>& run_time) {
  std::set<std::string> names;
  for (const Graph* g : bodies)
    for (const std::string& name : outer_names(*g))
      if (ids_.count(name) || find_initializer(name)) names.insert(name);
  std::vector<OuterValue> outer;
  for (const std::string& name : names) {
    const int id = lookup(name);
    outer.push_back({name, plan_->values[id].type, known_value(id)});
    if (!outer.back().known) run_time.push_back(id);
  }
  return outer;
}

bool PlanBuilder::plan_branches(const Node& node) {
  const Graph& then_graph = node.attributes.get_graph("then_branch");
  const Graph& else_graph = node.attributes.get_graph("else_branch");
  std::vector<int> run_time;  // the outer values the step passes in
  const std::vector<OuterValue> outer = outer_values({&then_graph, &else_graph}, run_time);
  PlannedBranch then_branch = plan_branch(then_graph, outer), else_branch = plan_branch(else_graph, outer);
  std::string why = !then_branch.plan && !else_branch.plan ? "neither branch can be planned: " + then_branch.error
                    : then_branch.data_dependent ? then_branch.error
                    : else_branch.data_dependent ? else_branch.error
                                                 : "";
  if (why.empty() && then_branch.plan && else_branch.plan)
    branches_agree(node, *then_branch.plan, *else_branch.plan, &why);
  if (!why.empty()) {
    plan_->notes.push_back(node.label() + " runs eagerly: " + why);
    return false;
  }
  auto kernel = std::make_unique<PlannedIf>(std::move(then_branch), std::move(else_branch));
  PlannedStep step;
  step.node_label = node.label();
  step.node_name = node.name.empty() ? "If#" + std::to_string(plan_->steps.size()) : node.name;
  step.op_type = node.op_type;
  step.kernel = "If (both branches planned)";
  step.device = Device{};
  step.inputs.push_back(on_device(lookup(node.inputs[0]), Device{}));
  for (int id : run_time) step.inputs.push_back(on_device(id, Device{}));
  const Plan& taken = kernel->planned_branch();
  if (taken.output_values.size() < node.outputs.size())  // fuzzing: read past the branch's outputs (UBSan)
    throw Error(node.label() + ": has " + std::to_string(node.outputs.size()) + " outputs but its branch yields " +
                std::to_string(taken.output_values.size()));
  for (size_t i = 0; i < node.outputs.size(); ++i) {  // an unused output still gets bytes to be written to
    const std::string& name = node.outputs[i];
    const int id = new_value(name.empty() ? step.node_name + "/unused" + std::to_string(i) : name,
                             taken.values[taken.output_values[i]].type, Device{}, Storage::Arena);
    if (!name.empty()) ids_[name] = id;
    step.outputs.push_back(id);
  }
  step.workspace_bytes = kernel->workspace_bytes();
  for (bool condition : {true, false})
    step.subplans.push_back({condition ? "then_branch" : "else_branch", kernel->branch(condition).plan.get(),
                             kernel->branch(condition).error});
  step.kernel_impl = std::move(kernel);
  plan_->steps.push_back(std::move(step));
  return true;
}

// A branch planned for these shapes. One that cannot run at them (its nodes reject the
// shapes: an If on the sample rate whose other branch expects other sizes) keeps
// its error, raised only if the run takes it; one whose shapes depend on data
// leaves the If to run eagerly.
PlannedBranch PlanBuilder::plan_branch(const Graph& branch, std::span<const OuterValue> outer,
                                       std::span<const OuterValue> own) {
  Backend* host[] = {&cpu()};
  PlannerOptions host_options = options_;
  host_options.input_devices.clear();
  host_options.output_devices.clear();
  PlannedBranch result;
  try {
    result.plan = PlanBuilder(branch, host, weights_, host_options).build_branch(outer, own);
  } catch (const Error& e) {
    result.error = e.what();
    return result;
  }
  if (!result.plan->eager.empty()) {
    result.data_dependent = true;
    result.error = "branch '" + branch.name + "' has nodes whose output shapes depend on data";
  }
  return result;
}

// A Loop or Scan whose iteration count is known while planning runs as one step over
// its body planned once for the per-iteration shapes, when the body plans completely
// and keeps its carried values' types. Returns false to run it eagerly (with a note).
bool PlanBuilder::plan_loop(const Node& node, int64_t opset) {
  LoopBody loop;
  std::vector<OuterValue> own;
  std::vector<int> inputs;  // the step's: initial states, full scan inputs
  std::string why = node.op_type == "Loop" ? loop_trips(node, loop, own, inputs)
                                           : scan_trips(node, opset, loop, own, inputs);
  std::vector<TensorType> out_types;
  if (why.empty()) why = plan_body(node, loop, own, inputs, out_types);
  // Without a condition input a Loop ignores the condition its body computes.
  const bool has_condition = node.op_type == "Loop" && node.inputs.size() > 1 && !node.inputs[1].empty();
  if (why.empty() && has_condition && !is_known_true(*loop.plan, 0))
    why = "its body's condition is known only at run time, so it may stop early";
  if (!why.empty()) {
    plan_->notes.push_back(node.label() + " runs eagerly: " + why);
    return false;
  }
  add_loop_step(node, std::move(loop), inputs, out_types);
  return true;
}

// Loop: runs M times when M is known and nothing can stop it early (no condition
// input, or a known one; the body's condition is then checked once planned). Its
// body reads the iteration number, the condition (true), the carried values.
std::string PlanBuilder::loop_trips(const Node& node, LoopBody& loop, std::vector<OuterValue>& own,
                                    std::vector<int>& inputs) {
  auto input = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty() ? lookup(node.inputs[i]) : -1; };
  const int trips = input(0), cond = input(1);
  const Tensor* m = trips >= 0 ? known_value(trips) : nullptr;
  if (trips < 0) return "it has no trip count, only its condition ends it";
  if (!m) return "its trip count is known only at run time";
  if (m->dtype() != DType::Int64 || m->numel() != 1) throw Error(node.label() + ": the trip count must be one int64");
  if (cond >= 0 && !known_value(cond)) return "its condition input is known only at run time";
  if (cond >= 0 && known_value(cond)->numel() != 1) throw Error(node.label() + ": the condition must hold one element");
  const bool runs = cond < 0 || *static_cast<const uint8_t*>(known_value(cond)->data()) != 0;
  loop.trips = runs ? std::max<int64_t>(*m->data_as<int64_t>(), 0) : 0;  // a negative M runs none
  loop.counts_iterations = true;
  loop.skipped_outputs = 1;
  own.push_back({"", {DType::Int64, {}}});
  own.push_back({"", {DType::Bool, {}}, cond >= 0 ? known_value(cond) : &known_true()});
  for (size_t i = 2; i < node.inputs.size(); ++i) {
    const int id = input(i);
    if (id < 0) return "a carried value is absent";
    own.push_back({"", plan_->values[id].type});
    inputs.push_back(id);
  }
  loop.states = inputs.size();
  return "";
}

// Scan (opset 9 on): runs once per slice of its scan inputs; its body reads the
// states, then one slice of each scan input (its scan axis removed).
std::string PlanBuilder::scan_trips(const Node& node, int64_t opset, LoopBody& loop, std::vector<OuterValue>& own,
                                    std::vector<int>& inputs) {
  if (opset < 9) return "Scan-8 (a batch axis and sequence lengths) is not planned";
  const Attributes& a = node.attributes;
  const int64_t n_scan = a.get_int("num_scan_inputs");
  if (n_scan < 1) return "it has no scan inputs to count its iterations";
  if (n_scan > static_cast<int64_t>(node.inputs.size()))
    throw Error(node.label() + ": num_scan_inputs is " + std::to_string(n_scan) + ", with " +
                std::to_string(node.inputs.size()) + " inputs");
  const std::vector<int64_t> axes = a.get_ints_or("scan_input_axes", {}), dirs = a.get_ints_or("scan_input_directions", {});
  loop.states = node.inputs.size() - n_scan;
  loop.trips = -1;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int id = lookup(node.inputs[i]);
    inputs.push_back(id);
    const TensorType& t = plan_->values[id].type;
    if (i < loop.states) {
      own.push_back({"", t});
      continue;
    }
    const size_t k = i - loop.states;
    ScanAxis s{t.shape, k < axes.size() ? axes[k] : 0, k < dirs.size() && dirs[k] != 0};
    s.axis = normalized_axis(node, s.axis, t.shape.size(), "scan_input_axes");
    if (loop.trips >= 0 && t.shape[s.axis] != loop.trips) throw Error(node.label() + ": scan inputs differ in length");
    loop.trips = t.shape[s.axis];
    Shape slice = t.shape;
    slice.erase(slice.begin() + s.axis);
    own.push_back({"", {t.dtype, slice}});
    loop.scan_inputs.push_back(std::move(s));
  }
  return "";
}

// Plans the body into `loop` and sets the step's output types: the states', then
// each scan output's slices stacked along its axis. Returns why it cannot be.
std::string PlanBuilder::plan_body(const Node& node, LoopBody& loop, std::span<const OuterValue> own,
                                   std::vector<int>& inputs, std::vector<TensorType>& out_types) {
  const Graph& body = node.attributes.get_graph("body");
  const std::vector<OuterValue> outer = outer_values({&body}, inputs);
  PlannedBranch planned = plan_branch(body, outer, own);
  if (!planned.plan) return "its body cannot be planned: " + planned.error;
  if (planned.data_dependent) return planned.error;
  const Plan& plan = *planned.plan;
  if (plan.output_values.size() != loop.skipped_outputs + node.outputs.size())
    return "its body has " + std::to_string(plan.output_values.size()) + " outputs";
  const size_t first_state = loop.counts_iterations ? 2 : 0;
  for (size_t k = 0; k < loop.states; ++k) {
    const TensorType& in = own[first_state + k].type;
    const TensorType& out = plan.values[plan.output_values[loop.skipped_outputs + k]].type;
    if (!(in == out))
      return "its body turns carried value " + std::to_string(k) + " from " + dtype_name(in.dtype) + " " +
             shape_to_string(in.shape) + " into " + dtype_name(out.dtype) + " " + shape_to_string(out.shape);
    out_types.push_back(in);
  }
  const std::vector<int64_t> axes = node.attributes.get_ints_or("scan_output_axes", {}),
                             dirs = node.attributes.get_ints_or("scan_output_directions", {});
  for (size_t k = 0; loop.skipped_outputs + loop.states + k < plan.output_values.size(); ++k) {
    const TensorType& slice = plan.values[plan.output_values[loop.skipped_outputs + loop.states + k]].type;
    ScanAxis s{slice.shape, k < axes.size() ? axes[k] : 0, k < dirs.size() && dirs[k] != 0};
    s.axis = normalized_axis(node, s.axis, slice.shape.size() + 1, "scan_output_axes");
    s.full.insert(s.full.begin() + s.axis, loop.trips);
    out_types.push_back({slice.dtype, s.full});
    loop.scan_outputs.push_back(std::move(s));
  }
  loop.plan = std::move(planned.plan);
  return "";
}

void PlanBuilder::add_loop_step(const Node& node, LoopBody loop, const std::vector<int>& inputs,
                                const std::vector<TensorType>& out_types) {
  const int64_t trips = loop.trips;
  auto kernel = std::make_unique<PlannedLoop>(std::move(loop));
  PlannedStep step;
  step.node_label = node.label();
  step.node_name = node.name.empty() ? node.op_type + "#" + std::to_string(plan_->steps.size()) : node.name;
  step.op_type = node.op_type;
  step.kernel = node.op_type + " (body planned, " + std::to_string(trips) + " iterations)";
  step.device = Device{};
  for (int id : inputs) step.inputs.push_back(on_device(id, Device{}));
  for (size_t i = 0; i < node.outputs.size(); ++i) {  // an unused output still gets bytes to be written to
    const std::string& name = node.outputs[i];
    const int id = new_value(name.empty() ? step.node_name + "/unused" + std::to_string(i) : name, out_types[i],
                             Device{}, Storage::Arena);
    if (!name.empty()) ids_[name] = id;
    step.outputs.push_back(id);
  }
  step.workspace_bytes = kernel->workspace_bytes();
  step.subplans.push_back({"body", &kernel->body(), ""});
  step.kernel_impl = std::move(kernel);
  plan_->steps.push_back(std::move(step));
}

}  // namespace ember
