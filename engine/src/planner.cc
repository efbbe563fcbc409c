#include "engine/src/planner.h"

#include "engine/src/memory_plan.h"
#include "engine/src/planned_if.h"
#include "engine/src/planned_loop.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace ember {

const Tensor* WeightCache::get(const std::string& name, const Tensor& host, Backend& backend) {
  if (backend.device().kind == DeviceKind::Cpu) return &host;
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(name, backend.device().to_string());
  auto it = uploaded_.find(key);
  if (it == uploaded_.end()) it = uploaded_.emplace(key, backend.upload(host, name)).first;
  return &it->second;
}

size_t Plan::arena_size(Device device) const {
  for (const auto& [d, bytes] : arena_bytes)
    if (d == device) return bytes;
  return 0;
}

size_t Plan::node_steps_on(Device device) const {
  size_t n = 0;
  for (const PlannedStep& step : steps) n += step.op_type != "Copy" && step.device == device;
  return n;
}

size_t Plan::node_steps() const {
  size_t n = 0;
  for (const PlannedStep& step : steps) n += step.op_type != "Copy";
  return n;
}

namespace {

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
  PlanBuilder(const Graph& graph, std::span<Backend* const> backends, WeightCache& weights,
              const PlannerOptions& options)
      : graph_(graph), backends_(backends), weights_(weights), options_(options),
        plan_(std::make_unique<Plan>()) {
    count_readers();
  }

  std::unique_ptr<Plan> build(std::span<const Shape> input_shapes) {
    plan_->input_shapes.assign(input_shapes.begin(), input_shapes.end());
    plan_->input_devices = options_.input_devices;
    plan_->input_devices.resize(graph_.inputs.size());
    plan_->output_devices = options_.output_devices;
    plan_->output_devices.resize(graph_.outputs.size());
    add_graph_inputs(input_shapes);
    for (const Node& node : graph_.nodes) add_node(node);
    bind_graph_outputs();
    lay_out_arenas();
    for (Backend* b : backends_) b->finish_planning();
    return std::move(plan_);
  }

  // A plan of an If branch or a Loop or Scan body: `own` describes the body's graph
  // inputs in order (their names are the graph's), `outer` the enclosing values it
  // reads; the run-time ones among them, in that order, are its inputs. Its outputs
  // are the graph's. It runs in its step's workspace on the host.
  std::unique_ptr<Plan> build_branch(std::span<const OuterValue> outer, std::span<const OuterValue> own = {}) {
    if (own.size() != graph_.inputs.size())
      throw Error("body '" + graph_.name + "' has " + std::to_string(graph_.inputs.size()) + " inputs, " +
                  std::to_string(own.size()) + " are given");
    plan_->output_devices.assign(graph_.outputs.size(), Device{});
    int next_input = 0;
    std::vector<OuterValue> all(own.begin(), own.end());
    for (size_t i = 0; i < own.size(); ++i) all[i].name = graph_.inputs[i].name;
    all.insert(all.end(), outer.begin(), outer.end());
    for (const OuterValue& o : all) {
      const int id = new_value(o.name, o.type, Device{}, o.known ? Storage::Constant : Storage::Input);
      if (o.known) plan_->values[id].constant = o.known;
      else plan_->values[id].io_index = next_input++;
      ids_[o.name] = id;
    }
    for (const Node& node : graph_.nodes) add_node(node);
    bind_graph_outputs();
    lay_out_arenas();
    return std::move(plan_);
  }

 private:
  Backend& cpu() const {
    for (Backend* b : backends_)
      if (b->device().kind == DeviceKind::Cpu) return *b;
    throw Error("internal: no CPU backend");
  }

  int new_value(const std::string& name, TensorType type, Device device, Storage storage) {
    PlannedValue v;
    v.name = name;
    v.type = std::move(type);
    v.device = device;
    v.storage = storage;
    plan_->values.push_back(std::move(v));
    return static_cast<int>(plan_->values.size()) - 1;
  }

  int root(int id) const {
    while (plan_->values[id].alias_of >= 0) id = plan_->values[id].alias_of;
    return id;
  }

  void add_graph_inputs(std::span<const Shape> shapes) {
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const ValueInfo& in = graph_.inputs[i];
      const Device device = plan_->input_devices[i];
      backend_for(device);  // raises for a device this session does not run on
      int id = new_value(in.name, {in.dtype, shapes[i]}, device, Storage::Input);
      plan_->values[id].io_index = static_cast<int>(i);
      plan_->input_values.push_back(id);
      ids_[in.name] = id;
    }
  }

  // The graph's initializer `name`, or one of an inlined If branch's; nullptr if none.
  const Tensor* find_initializer(const std::string& name) const {
    auto it = graph_.initializers.find(name);
    if (it != graph_.initializers.end()) return &it->second;
    for (const Graph* branch : inlined_)
      if (auto b = branch->initializers.find(name); b != branch->initializers.end()) return &b->second;
    return nullptr;
  }

  // The value id for a name, adding initializers on first use.
  int lookup(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const Tensor* init = find_initializer(name);
    if (!init) throw Error("internal: value '" + name + "' has no producer in the sorted graph");
    int id = new_value(name, {init->dtype(), init->shape()}, Device{}, Storage::Constant);
    plan_->values[id].constant = init;
    ids_[name] = id;
    return id;
  }

  const Tensor* known_value(int id) const {
    const PlannedValue& v = plan_->values[id];
    return v.storage == Storage::Constant && v.device.kind == DeviceKind::Cpu ? v.constant : nullptr;
  }

  void add_node(const Node& node) {
    const int64_t opset = graph_.opset(node.domain);
    if (!plan_->eager.empty()) return add_eager(node, opset);
    if (node.domain.empty() && node.op_type == "If" && plan_if(node, opset)) return;
    if (node.domain.empty() && (node.op_type == "Loop" || node.op_type == "Scan") && plan_loop(node, opset)) return;
    std::vector<int> in_ids;
    std::vector<TensorType> types;
    std::vector<const Tensor*> values;
    bool all_known = true;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        in_ids.push_back(-1);
        types.emplace_back();
        values.push_back(nullptr);
        continue;
      }
      int id = lookup(name);
      in_ids.push_back(id);
      types.push_back(plan_->values[id].type);
      values.push_back(known_value(id));
      all_known = all_known && values.back();
    }
    std::vector<TensorType> out_types;
    try {
      out_types = infer_node(node, opset, types, values);
    } catch (const DataDependentShape& e) {
      plan_->notes.push_back(node.label() + " and the nodes after it run eagerly: " + e.what());
      return add_eager(node, opset);
    }

    if (fold(node, opset, in_ids, types, values, all_known)) return;
    std::vector<Device> in_devices;
    for (int id : in_ids)
      if (id >= 0) in_devices.push_back(plan_->values[id].device);
    Choice choice = choose_kernel(node, opset, types, values, out_types, in_devices);
    if (!choice.backend) {
      // A fused node no kernel can take (a residual that broadcasts, a device without
      // the fused op) runs as the nodes it was fused from.
      const Attribute* parts = node.attributes.find(kDecompositionAttribute);
      if (!parts || !parts->g) throw Error(node.label() + ": no kernel can run it (" + choice.reasons + ")");
      for (const Node& part : parts->g->nodes) add_node(part);
      return;
    }
    place(node, std::move(choice), in_ids, out_types);
  }

  // From here on nodes run eagerly on the host; the planned values they read stay
  // alive to the end of the steps.
  void add_eager(const Node& node, int64_t opset) {
    plan_->eager.push_back({&node, opset});
    for (const auto& name : node.inputs) read_eagerly(name);
    for (const auto& [_, a] : node.attributes.all()) {
      if (a.g) read_subgraph_eagerly(*a.g);
      for (const auto& sub : a.graphs) read_subgraph_eagerly(*sub);
    }
    for (const auto& name : node.outputs)
      if (!name.empty()) eager_values_.insert(name);
  }

  void read_subgraph_eagerly(const Graph& g) {
    for (const Node& n : g.nodes) {
      for (const auto& name : n.inputs) read_eagerly(name);
      for (const auto& [_, a] : n.attributes.all()) {
        if (a.g) read_subgraph_eagerly(*a.g);
        for (const auto& sub : a.graphs) read_subgraph_eagerly(*sub);
      }
    }
    for (const auto& o : g.outputs) read_eagerly(o.name);
  }

  void read_eagerly(const std::string& name) {
    if (name.empty() || eager_values_.count(name) || pinned_.count(name)) return;
    if (!ids_.count(name) && !find_initializer(name)) return;  // a subgraph's own value
    const int id = on_device(lookup(name), Device{});
    pinned_.insert(name);
    plan_->eager_reads.emplace_back(name, id);
  }

  // An If is planned like any node when it can be: a condition known now inlines the
  // branch it takes; otherwise both branches become sub-plans of one step, if they
  // plan completely and agree on their outputs. Returns false to run it eagerly.
  bool plan_if(const Node& node, int64_t opset) {
    const int cond = lookup(node.inputs[0]);
    if (const Tensor* known = known_value(cond)) {
      if (known->numel() != 1) throw Error(node.label() + ": the condition must hold one element");
      inline_branch(node, opset, *static_cast<const uint8_t*>(known->data()) != 0);
      return true;
    }
    return plan_branches(node);
  }

  void inline_branch(const Node& node, int64_t opset, bool condition) {
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

  bool plan_branches(const Node& node) {
    const Graph& then_graph = node.attributes.get_graph("then_branch");
    const Graph& else_graph = node.attributes.get_graph("else_branch");
    std::set<std::string> names;
    for (const Graph* g : {&then_graph, &else_graph})
      for (const std::string& name : outer_names(*g))
        if (ids_.count(name) || find_initializer(name)) names.insert(name);
    std::vector<OuterValue> outer;
    std::vector<int> run_time;  // the outer values the step passes in
    for (const std::string& name : names) {
      const int id = lookup(name);
      outer.push_back({name, plan_->values[id].type, known_value(id)});
      if (!outer.back().known) run_time.push_back(id);
    }
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
  PlannedBranch plan_branch(const Graph& branch, std::span<const OuterValue> outer,
                            std::span<const OuterValue> own = {}) {
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

  static void branches_agree(const Node& node, const Plan& a, const Plan& b, std::string* why) {
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

  // A Loop or Scan whose iteration count is known while planning runs as one step over
  // its body planned once for the per-iteration shapes, when the body plans completely
  // and keeps its carried values' types. Returns false to run it eagerly (with a note).
  bool plan_loop(const Node& node, int64_t opset) {
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
  std::string loop_trips(const Node& node, LoopBody& loop, std::vector<OuterValue>& own, std::vector<int>& inputs) {
    auto input = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty() ? lookup(node.inputs[i]) : -1; };
    const int trips = input(0), cond = input(1);
    const Tensor* m = trips >= 0 ? known_value(trips) : nullptr;
    if (trips < 0) return "it has no trip count, only its condition ends it";
    if (!m) return "its trip count is known only at run time";
    if (m->dtype() != DType::Int64 || m->numel() != 1) throw Error(node.label() + ": the trip count must be one int64");
    if (cond >= 0 && !known_value(cond)) return "its condition input is known only at run time";
    if (*m->data_as<int64_t>() < 0) return "its trip count is negative";
    const bool runs = cond < 0 || *static_cast<const uint8_t*>(known_value(cond)->data()) != 0;
    loop.trips = runs ? *m->data_as<int64_t>() : 0;
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

  static const Tensor& known_true() {
    static const Tensor t = [] {
      Tensor yes(DType::Bool, {});
      *yes.data_as<uint8_t>() = 1;
      return yes;
    }();
    return t;
  }

  // Scan (opset 9 on): runs once per slice of its scan inputs; its body reads the
  // states, then one slice of each scan input (its scan axis removed).
  std::string scan_trips(const Node& node, int64_t opset, LoopBody& loop, std::vector<OuterValue>& own,
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

  static int64_t normalized_axis(const Node& node, int64_t axis, size_t rank, const char* attribute) {
    const int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
      throw Error(node.label() + ": " + attribute + " has " + std::to_string(axis) + " for rank " + std::to_string(rank));
    return axis < 0 ? axis + r : axis;
  }

  // Plans the body into `loop` and sets the step's output types: the states', then
  // each scan output's slices stacked along its axis. Returns why it cannot be.
  std::string plan_body(const Node& node, LoopBody& loop, std::span<const OuterValue> own, std::vector<int>& inputs,
                        std::vector<TensorType>& out_types) {
    const Graph& body = node.attributes.get_graph("body");
    std::vector<OuterValue> outer;
    for (const std::string& name : outer_names(body)) {
      if (!ids_.count(name) && !find_initializer(name)) continue;
      const int id = lookup(name);
      outer.push_back({name, plan_->values[id].type, known_value(id)});
      if (!outer.back().known) inputs.push_back(id);
    }
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

  // Whether a sub-plan's output `i` is the constant true: a constant output is copied
  // into place by the plan's last steps (bind_graph_outputs).
  static bool is_known_true(const Plan& plan, size_t i) {
    const int out = plan.output_values[i];
    for (const PlannedStep& s : plan.steps) {
      if (s.op_type != "Copy" || s.outputs[0] != out) continue;
      const PlannedValue& v = plan.values[s.inputs[0]];
      return v.storage == Storage::Constant && v.constant->numel() == 1 &&
             *static_cast<const uint8_t*>(v.constant->data()) != 0;
    }
    return false;
  }

  void add_loop_step(const Node& node, LoopBody loop, const std::vector<int>& inputs,
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

  // Evaluates now, on the host, a node whose result is already determined: its inputs
  // are constants, or it only reads shapes (Shape, Size). This is what turns the
  // Shape->Gather->Concat->Reshape chains of exported models into constants.
  bool fold(const Node& node, int64_t opset, const std::vector<int>& in_ids,
            const std::vector<TensorType>& types, const std::vector<const Tensor*>& values,
            bool all_known) {
    const bool reads_only_shape =
        node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size");
    if (!(all_known || reads_only_shape) || !can_fold(node)) return false;
    std::vector<Tensor> shape_only;
    std::vector<const Tensor*> inputs = values;
    if (reads_only_shape) {
      shape_only.push_back(Tensor::view(types[0].dtype, types[0].shape, nullptr));
      inputs[0] = &shape_only[0];
    }
    std::vector<Tensor> outputs = evaluate_node(node, opset, inputs, 1);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || outputs[i].empty()) continue;
      plan_->folded.push_back(std::make_unique<Tensor>(std::move(outputs[i])));
      const Tensor* t = plan_->folded.back().get();
      int id = new_value(node.outputs[i], {t->dtype(), t->shape()}, Device{}, Storage::Constant);
      plan_->values[id].constant = t;
      ids_[node.outputs[i]] = id;
    }
    return true;
  }

  struct Choice {
    Backend* backend = nullptr;  // nullptr: nothing can run the node, see `reasons`
    std::string reasons;
    const KernelEntry* entry = nullptr;
    std::unique_ptr<Kernel> kernel;
    size_t workspace = 0;
  };

  // Small integer tensors read from the host and written for it (the shape
  // computations exported models are full of) stay there: on a device each would cost
  // a copy up and a wait for the copy back.
  static bool is_shape_arithmetic(const std::vector<Device>& in_devices, const std::vector<TensorType>& types,
                                  const std::vector<TensorType>& out_types) {
    constexpr int64_t kSmall = 1024;
    auto small_integers = [](const TensorType& t) {
      return !t.present() || ((t.dtype == DType::Int64 || t.dtype == DType::Int32 || t.dtype == DType::Bool) &&
                              shape_numel(t.shape) <= kSmall);
    };
    for (const Device& d : in_devices)
      if (d.kind != DeviceKind::Cpu) return false;
    for (const auto* list : {&types, &out_types})
      for (const TensorType& t : *list)
        if (!small_integers(t)) return false;
    return true;
  }

  Choice choose_kernel(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                       const std::vector<const Tensor*>& values, const std::vector<TensorType>& out_types,
                       const std::vector<Device>& in_devices) {
    std::string reasons;
    const bool shape_arithmetic = is_shape_arithmetic(in_devices, types, out_types);
    for (Backend* backend : backends_) {
      const Device device = backend->device();
      if (shape_arithmetic && device.kind != DeviceKind::Cpu) {
        reasons += (reasons.empty() ? "" : "; ") + device.to_string() +
                   ": shape arithmetic stays on the host";
        continue;
      }
      auto entries = find_kernels(node.domain, node.op_type, opset, device.kind);
      if (entries.empty()) {
        reasons += (reasons.empty() ? "" : "; ") + device.to_string() + ": no kernel for " +
                   node.op_type + " at opset " + std::to_string(opset);
        continue;
      }
      for (const KernelEntry* entry : entries) {
        KernelInit init{node, opset, device, types, values, out_types};
        init.num_threads = options_.num_threads;
        init.dense_math = options_.dense_math;
        init.device_context = backend->plan_context();
        std::string why;
        std::unique_ptr<Kernel> kernel;
        try {
          kernel = entry->factory(init, &why);
        } catch (const Error& e) {  // a device library failing at plan time
          const std::string what = e.what();
          throw Error(what.rfind(node.label(), 0) == 0 ? what : node.label() + " on " + device.to_string() + ": " + what);
        }
        if (kernel) {
          if (!reasons.empty())
            plan_->notes.push_back(node.label() + " runs on " + device.to_string() + " (" +
                                   reasons + ")");
          return {backend, "", entry, std::move(kernel), init.workspace_bytes};
        }
        reasons += (reasons.empty() ? "" : "; ") + device.to_string() + ": " + why;
      }
    }
    Choice none;
    none.reasons = reasons;
    return none;
  }

  // The id of `id`'s value on `device`, inserting one copy per (value, device).
  int on_device(int id, Device device) {
    const PlannedValue v = plan_->values[id];  // a copy: new_value() grows the vector
    if (v.device == device) return id;
    auto key = std::make_pair(id, device.to_string());
    auto it = moved_.find(key);
    if (it != moved_.end()) return it->second;
    Backend& target = backend_for(device);
    int moved;
    if (v.storage == Storage::Constant) {
      const Tensor* host = v.constant;
      moved = new_value(v.name, v.type, device, Storage::Constant);
      auto init = graph_.initializers.find(v.name);
      if (init != graph_.initializers.end() && &init->second == host) {
        plan_->values[moved].constant = weights_.get(v.name, *host, target);
      } else {  // folded from this plan's shapes: the weight cache would hand a later plan this one's
        plan_->device_constants.push_back(std::make_unique<Tensor>(target.upload(*host, v.name)));
        plan_->values[moved].constant = plan_->device_constants.back().get();
      }
    } else {
      Backend& remote = device.kind == DeviceKind::Cpu ? backend_for(v.device) : target;
      moved = new_value(v.name, v.type, device, Storage::Arena);
      add_copy("copy '" + v.name + "' " + v.device.to_string() + "->" + device.to_string(), remote, id, moved);
    }
    moved_[key] = moved;
    return moved;
  }

  // A step on `copier` copying value `from` to value `to` (their devices from the plan).
  void add_copy(std::string label, Backend& copier, int from, int to) {
    PlannedStep step;
    step.node_label = std::move(label);
    step.node_name = step.node_label;
    step.op_type = "Copy";
    step.kernel = "copy";
    step.device = copier.device();
    step.kernel_impl = copier.make_copy(plan_->values[from].device, plan_->values[to].device);
    step.inputs = {from};
    step.outputs = {to};
    plan_->steps.push_back(std::move(step));
  }

  Backend& backend_for(Device device) const {
    for (Backend* b : backends_)
      if (b->device() == device) return *b;
    throw Error("internal: no backend for " + device.to_string());
  }

  void place(const Node& node, Choice choice, std::vector<int> in_ids,
             const std::vector<TensorType>& out_types) {
    const Device device = choice.backend->device();
    for (int& id : in_ids)
      if (id >= 0) id = on_device(id, device);

    const bool alias = choice.entry->flags.output_aliases_input0 && in_ids[0] >= 0 &&
                       !is_graph_output(node.outputs[0]);
    std::vector<int> out_ids;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || !out_types[i].present()) {
        out_ids.push_back(-1);
        continue;
      }
      int id = new_value(node.outputs[i], out_types[i], device, Storage::Arena);
      if (alias && i == 0) plan_->values[id].alias_of = in_ids[0];
      ids_[node.outputs[i]] = id;
      out_ids.push_back(id);
    }
    if (alias) return;  // no step: the output is the input's bytes, reinterpreted
    const int over = choice.entry->flags.overwrites_input;
    if (over >= 0 && static_cast<size_t>(over) < in_ids.size() && can_overwrite(node, over, in_ids[over], out_ids))
      plan_->values[out_ids[0]].alias_of = in_ids[over];

    PlannedStep step;
    step.node_label = node.label();
    step.node_name = node.name.empty() ? node.op_type + "#" + std::to_string(plan_->steps.size())
                                       : node.name;
    step.op_type = node.op_type;
    step.kernel = (node.domain.empty() ? "" : node.domain + "::") + node.op_type;
    step.device = device;
    step.kernel_impl = std::move(choice.kernel);
    step.inputs = std::move(in_ids);
    step.outputs = std::move(out_ids);
    step.workspace_bytes = choice.workspace;
    plan_->steps.push_back(std::move(step));
  }

  // How many node inputs read each value; in a graph with subgraphs (which read the
  // enclosing scope by name; a fused node's decomposition reads only its own inputs)
  // none is counted and nothing is overwritten.
  void count_readers() {
    for (const Node& node : graph_.nodes)
      for (const auto& [name, a] : node.attributes.all())
        if (name != kDecompositionAttribute && (a.g || !a.graphs.empty())) return;
    for (const Node& node : graph_.nodes)
      for (const std::string& name : node.inputs)
        if (!name.empty()) ++readers_[name];
    readers_counted_ = true;
  }

  // Output 0 of `node` may take the bytes of its input `k` (value `in`): the node is its
  // only reader, it is an arena value of its own (no view, not the caller's input or a
  // graph output), and it has the output's type.
  bool can_overwrite(const Node& node, size_t k, int in, const std::vector<int>& out_ids) const {
    if (!readers_counted_ || in < 0 || out_ids.empty() || out_ids[0] < 0) return false;
    auto it = readers_.find(node.inputs[k]);
    if (it == readers_.end() || it->second != 1 || is_graph_output(node.inputs[k]) || is_graph_output(node.outputs[0]))
      return false;
    const PlannedValue& v = plan_->values[in];
    const PlannedValue& y = plan_->values[out_ids[0]];
    if (v.storage != Storage::Arena || v.alias_of >= 0 || !(v.device == y.device) || v.type.dtype != y.type.dtype ||
        v.type.shape != y.type.shape)
      return false;
    for (const PlannedValue& other : plan_->values)
      if (other.alias_of == in) return false;  // a view of it lives on
    return true;
  }

  bool is_graph_output(const std::string& name) const {
    for (const auto& o : graph_.outputs)
      if (o.name == name) return true;
    return false;
  }

  // Graph outputs are written straight into the caller's tensors when a step on the
  // output's device produces them; anything else (a constant, an input, a value on
  // another device, a repeat) is copied there by one final step.
  void bind_graph_outputs() {
    std::unordered_set<int> bound;
    std::vector<int> producer_step(plan_->values.size(), -1);
    for (size_t s = 0; s < plan_->steps.size(); ++s)
      for (int id : plan_->steps[s].outputs)
        if (id >= 0) producer_step[id] = static_cast<int>(s);
    plan_->output_is_eager.assign(graph_.outputs.size(), false);
    for (const auto& o : graph_.outputs) plan_->output_names.push_back(o.name);
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      if (eager_values_.count(graph_.outputs[i].name)) {
        plan_->output_is_eager[i] = true;
        plan_->output_values.push_back(-1);
        continue;
      }
      const Device target = plan_->output_devices[i];
      int id = lookup(graph_.outputs[i].name);
      PlannedValue& v = plan_->values[id];
      if (v.storage == Storage::Arena && v.alias_of < 0 && v.device == target && producer_step[id] >= 0 &&
          !bound.count(id)) {
        v.storage = Storage::Output;
        v.io_index = static_cast<int>(i);
        bound.insert(id);
        plan_->output_values.push_back(id);
        continue;
      }
      // Copy from the target device's copy of the value when one exists, else from
      // wherever it is.
      auto moved = moved_.find({id, target.to_string()});
      const int src = plan_->values[id].device == target ? id : moved != moved_.end() ? moved->second : id;
      const Device from = plan_->values[src].device;
      int out = new_value(plan_->values[id].name, plan_->values[id].type, target, Storage::Output);
      plan_->values[out].io_index = static_cast<int>(i);
      Backend& copier = from.kind != DeviceKind::Cpu ? backend_for(from) : backend_for(target);
      add_copy("copy '" + plan_->values[id].name + "' " + from.to_string() + "->output on " + target.to_string(),
               copier, src, out);
      plan_->output_values.push_back(out);
    }
  }

  void lay_out_arenas() {
    const size_t n = plan_->values.size();
    std::vector<int> first(n, -1), last(n, -1);
    for (size_t s = 0; s < plan_->steps.size(); ++s) {
      const int step = static_cast<int>(s);
      for (int id : plan_->steps[s].outputs)
        if (id >= 0 && first[root(id)] < 0) first[root(id)] = step;
      for (int id : plan_->steps[s].inputs)
        if (id >= 0) last[root(id)] = step;
    }
    const int end = static_cast<int>(plan_->steps.size());
    for (const auto& [_, id] : plan_->eager_reads) last[root(id)] = end;
    std::vector<Device> devices;
    for (Backend* b : backends_) devices.push_back(b->device());
    for (const Device& device : devices) {
      std::vector<Lifetime> lifetimes;
      std::vector<std::pair<bool, size_t>> owners;  // (is workspace, value id or step)
      for (size_t id = 0; id < n; ++id) {
        const PlannedValue& v = plan_->values[id];
        if (v.storage != Storage::Arena || v.alias_of >= 0 || !(v.device == device)) continue;
        if (first[id] < 0) continue;  // never written: an unused output
        lifetimes.push_back({v.type.dtype == DType::Undefined ? 0 : dtype_bytes(v.type.dtype, shape_numel(v.type.shape)),
                             first[id], std::max(first[id], last[id])});
        owners.emplace_back(false, id);
      }
      for (size_t s = 0; s < plan_->steps.size(); ++s) {
        const PlannedStep& step = plan_->steps[s];
        if (!(step.device == device) || step.workspace_bytes == 0) continue;
        lifetimes.push_back({step.workspace_bytes, static_cast<int>(s), static_cast<int>(s)});
        owners.emplace_back(true, s);
      }
      ArenaLayout layout = plan_arena(lifetimes);
      for (size_t k = 0; k < owners.size(); ++k) {
        if (owners[k].first)
          plan_->steps[owners[k].second].workspace_offset = layout.offsets[k];
        else
          plan_->values[owners[k].second].offset = layout.offsets[k];
      }
      plan_->arena_bytes.emplace_back(device, layout.peak_bytes);
    }
    // Aliases and unused outputs take their root's place.
    for (size_t id = 0; id < n; ++id) {
      PlannedValue& v = plan_->values[id];
      if (v.alias_of < 0) continue;
      const PlannedValue& r = plan_->values[root(static_cast<int>(id))];
      v.storage = r.storage;
      v.offset = r.offset;
      v.constant = r.constant;
      v.io_index = r.io_index;
      v.device = r.device;
    }
  }

  const Graph& graph_;
  std::span<Backend* const> backends_;
  WeightCache& weights_;
  PlannerOptions options_;
  std::unique_ptr<Plan> plan_;
  std::unordered_map<std::string, int> ids_;
  std::map<std::pair<int, std::string>, int> moved_;
  std::unordered_set<std::string> eager_values_, pinned_;
  std::unordered_map<std::string, int> readers_;
  bool readers_counted_ = false;
  std::vector<const Graph*> inlined_;  // If branches inlined into this plan
};

}  // namespace

std::unique_ptr<Plan> build_plan(const Graph& graph, std::span<const Shape> input_shapes,
                                 std::span<Backend* const> backends, WeightCache& weights,
                                 const PlannerOptions& options) {
  return PlanBuilder(graph, backends, weights, options).build(input_shapes);
}

namespace {

std::string where(const Plan& plan, int id) {
  if (id < 0) return "-";
  const PlannedValue& v = plan.values[id];
  std::string s = v.name + shape_to_string(v.type.shape) + "@";
  switch (v.storage) {
    case Storage::Arena: return s + v.device.to_string() + "+" + std::to_string(v.offset);
    case Storage::Constant: return s + "const";
    case Storage::Input: return s + "input" + std::to_string(v.io_index);
    case Storage::Output: return s + "output" + std::to_string(v.io_index);
  }
  return s;
}

std::string format_bytes(size_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  if (bytes >= (1u << 20)) os << bytes / 1048576.0 << " MiB";
  else if (bytes >= 1024) os << bytes / 1024.0 << " KiB";
  else os << bytes << " B";
  return os.str();
}

}  // namespace

namespace {

void explain_steps(std::ostringstream& os, const Plan& plan, const std::string& indent) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlannedStep& step = plan.steps[s];
    os << indent << "#" << s << " " << step.device.to_string() << " " << step.node_label << " [" << step.kernel
       << "]\n" << indent << "    in:";
    for (int id : step.inputs) os << " " << where(plan, id);
    os << "\n" << indent << "    out:";
    for (int id : step.outputs) os << " " << where(plan, id);
    if (step.workspace_bytes)
      os << "\n" << indent << "    workspace: " << step.workspace_bytes << " B at +" << step.workspace_offset;
    os << "\n";
    for (const auto& [name, sub, error] : step.subplans) {
      if (!sub) {
        os << indent << "    " << name << ": cannot run at these shapes (raises if taken): " << error << "\n";
        continue;
      }
      os << indent << "    " << name << ": " << sub->steps.size() << " steps, " << sub->folded.size()
         << " values folded, arena " << format_bytes(sub->arena_size(Device{})) << " in the workspace\n";
      explain_steps(os, *sub, indent + "      ");
      for (const auto& note : sub->notes) os << indent << "      note: " << note << "\n";
    }
  }
}

}  // namespace

std::string explain_plan(const Plan& plan) {
  std::ostringstream os;
  os << "plan for inputs";
  for (const auto& s : plan.input_shapes) os << " " << shape_to_string(s);
  os << ": " << plan.steps.size() << " steps, " << plan.folded.size()
     << " values folded before the run\n";
  explain_steps(os, plan, "  ");
  int copies = 0;
  for (const PlannedStep& step : plan.steps) copies += step.op_type == "Copy";
  for (const auto& e : plan.eager) os << "  eager " << e.node->label() << "\n";
  for (const auto& note : plan.notes) os << "  note: " << note << "\n";
  os << "copies inserted: " << copies << "\n";
  std::vector<Device> devices;
  for (const auto& [device, _] : plan.arena_bytes) devices.push_back(device);
  os << "nodes per device:";
  for (const Device& d : devices) os << " " << d.to_string() << " " << plan.node_steps_on(d);
  os << " (of " << plan.node_steps() << ")\n";
  for (const auto& [device, bytes] : plan.arena_bytes)
    os << "peak arena on " << device.to_string() << ": " << format_bytes(bytes) << "\n";
  return os.str();
}

}  // namespace ember

namespace ember {

void check_supported(const Graph& graph, std::span<Backend* const> backends) {
  std::string missing;
  int count = 0;
  for (const Node& node : graph.nodes) {
    const int64_t opset = graph.opset(node.domain);
    bool found = false;
    for (Backend* b : backends)
      found = found || !find_kernels(node.domain, node.op_type, opset, b->device().kind).empty();
    found = found && find_schema(node.domain, node.op_type);
    if (found) continue;
    if (count++ < 50) missing += "\n  " + node.label() + (node.domain.empty() ? "" : " (domain " + node.domain + ")") +
                             " at opset " + std::to_string(opset);
  }
  if (count)
    throw Error(graph.source + ": " + std::to_string(count) + " node(s) use operators ember does not support:" +
                missing + (count > 50 ? "\n  ..." : ""));
}

}  // namespace ember
