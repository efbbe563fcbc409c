#include "engine/src/planner.h"

#include "engine/src/memory_plan.h"
#include "engine/src/plan_builder.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "ops/value_ops.h"

#include <ember/core/error.h>

#include <algorithm>
#include <atomic>
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

uint64_t new_plan_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

size_t Plan::arena_size(Device device) const {
  for (const auto& [d, bytes] : arena_bytes)
    if (d == device) return bytes;
  return 0;
}

Plan::Work Plan::work() const {
  Work w;
  const auto touch = [&](int id) {
    if (id < 0) return;
    const TensorType& t = values[id].type;
    if (t.dtype != DType::Undefined) w.bytes += dtype_bytes(t.dtype, shape_numel(t.shape));
  };
  for (const PlannedStep& step : steps) {
    w.flops += step.flops;
    for (int id : step.inputs) touch(id);
    for (int id : step.outputs) touch(id);
    for (const PlannedStep::Subplan& sub : step.subplans) {
      if (!sub.plan) continue;
      const Work inner = sub.plan->work();
      w.flops += inner.flops;
      w.bytes += inner.bytes;
    }
  }
  return w;
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

PlanBuilder::PlanBuilder(const Graph& graph, std::span<Backend* const> backends, WeightCache& weights,
                         const PlannerOptions& options, NodeDecisions* decisions)
    : graph_(graph),
      backends_(backends),
      weights_(weights),
      options_(options),
      plan_(std::make_unique<Plan>()),
      decisions_(decisions) {
  ids_.reserve(2 * graph.nodes.size() + graph.initializers.size());
}

std::unique_ptr<Plan> PlanBuilder::build(std::span<const Shape> input_shapes) {
  plan_->input_shapes.assign(input_shapes.begin(), input_shapes.end());
  plan_->input_devices = options_.input_devices;
  plan_->input_devices.resize(graph_.inputs.size());
  plan_->output_devices = options_.output_devices;
  plan_->output_devices.resize(graph_.outputs.size());
  plan_->num_threads = options_.num_threads;
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
std::unique_ptr<Plan> PlanBuilder::build_branch(std::span<const OuterValue> outer, std::span<const OuterValue> own) {
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

Backend& PlanBuilder::cpu() const {
  for (Backend* b : backends_)
    if (b->device().kind == DeviceKind::Cpu) return *b;
  throw Error("internal: no CPU backend");
}

int PlanBuilder::new_value(const std::string& name, TensorType type, Device device, Storage storage) {
  PlannedValue v;
  v.name = name;
  v.type = std::move(type);
  v.device = device;
  v.storage = storage;
  plan_->values.push_back(std::move(v));
  return static_cast<int>(plan_->values.size()) - 1;
}

int PlanBuilder::root(int id) const {
  while (plan_->values[id].alias_of >= 0) id = plan_->values[id].alias_of;
  return id;
}

void PlanBuilder::add_graph_inputs(std::span<const Shape> shapes) {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const ValueInfo& in = graph_.inputs[i];
    // A sequence, an optional or a string tensor: only the eager tail reads it.
    if (!in.is_tensor() || in.dtype == DType::String) {
      plan_->input_values.push_back(-1);
      eager_values_.insert(in.name);
      continue;
    }
    const Device device = plan_->input_devices[i];
    backend_for(device);  // raises for a device this session does not run on
    int id = new_value(in.name, {in.dtype, shapes[i]}, device, Storage::Input);
    plan_->values[id].io_index = static_cast<int>(i);
    plan_->input_values.push_back(id);
    ids_[in.name] = id;
  }
}

// The graph's initializer `name`, or one of an inlined If branch's; nullptr if none.
const Tensor* PlanBuilder::find_initializer(const std::string& name) const {
  auto it = graph_.initializers.find(name);
  if (it != graph_.initializers.end()) return &it->second;
  for (const Graph* branch : inlined_)
    if (auto b = branch->initializers.find(name); b != branch->initializers.end()) return &b->second;
  return nullptr;
}

// The value id for a name, adding initializers on first use.
int PlanBuilder::lookup(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const Tensor* init = find_initializer(name);
  if (!init) throw Error("internal: value '" + name + "' has no producer in the sorted graph");
  int id = new_value(name, {init->dtype(), init->shape()}, Device{}, Storage::Constant);
  plan_->values[id].constant = init;
  ids_[name] = id;
  return id;
}

const Tensor* PlanBuilder::known_value(int id) const {
  const PlannedValue& v = plan_->values[id];
  return v.storage == Storage::Constant && v.device.kind == DeviceKind::Cpu ? v.constant : nullptr;
}

void PlanBuilder::add_node(const Node& node) {
  const int64_t opset = graph_.opset(node.domain);
  if (!plan_->eager.empty()) return add_eager(node, opset);
  const bool value_node = decisions_ && is_top_level(node) ? decisions_->is_value_node(node) : is_value_node(node);
  if (value_node || (!eager_values_.empty() && touches_values(node, eager_values_))) {
    plan_->notes.push_back(node.label() + " and the nodes after it run eagerly: it reads or makes a sequence, an optional or a map");
    return add_eager(node, opset);
  }
  if (node.domain.empty() && node.op_type == "If" && plan_if(node, opset)) return;
  if (node.domain.empty() && (node.op_type == "Loop" || node.op_type == "Scan") && plan_loop(node, opset)) return;
  std::vector<int> in_ids;
  in_ids.reserve(node.inputs.size());
  for (const auto& name : node.inputs) in_ids.push_back(name.empty() ? -1 : lookup(name));
  NodeSignature signature;
  const bool remembered = decisions_ && is_top_level(node) && sign(node, in_ids, signature);
  if (remembered)
    if (std::shared_ptr<const NodeDecision> decision = decisions_->find(signature.key()))
      return apply(node, decision, in_ids);
  std::vector<TensorType> types;
  std::vector<const Tensor*> values;
  bool all_known = true;
  for (int id : in_ids) {
    types.push_back(id < 0 ? TensorType{} : plan_->values[id].type);
    values.push_back(id < 0 ? nullptr : known_value(id));
    all_known = all_known && (id < 0 || values.back());
  }
  std::vector<TensorType> out_types;
  try {
    out_types = infer_node(node, opset, types, values);
  } catch (const DataDependentShape& e) {
    plan_->notes.push_back(node.label() + " and the nodes after it run eagerly: " + e.what());
    return add_eager(node, opset);
  }

  // String tensors hold std::string objects, which no arena or device can: every node
  // that reads or makes one runs eagerly, on the host (core/include/ember/core/tensor.h).
  const auto is_string = [](const TensorType& t) { return t.dtype == DType::String; };
  if (std::ranges::any_of(types, is_string) || std::ranges::any_of(out_types, is_string)) {
    plan_->notes.push_back(node.label() + " and the nodes after it run eagerly: it reads or makes string tensors");
    return add_eager(node, opset);
  }
  std::vector<std::shared_ptr<const Tensor>> folded;
  if (fold(node, opset, types, values, out_types, all_known, folded)) {
    if (remembered) {
      auto decision = std::make_shared<NodeDecision>();
      decision->out_types = out_types;
      decision->folded = std::move(folded);
      remember(signature.key(), std::move(decision));
    }
    return;
  }
  std::vector<Device> in_devices;
  for (int id : in_ids)
    if (id >= 0) in_devices.push_back(plan_->values[id].device);
  Choice choice = choose_kernel(node, opset, types, values, out_types, in_devices);
  if (!choice.backend) {
    // A fused node no kernel can take (a residual that broadcasts, a device without
    // the fused op) runs as the nodes it was fused from.
    const Attribute* parts = node.attributes.find(kDecompositionAttribute);
    if (parts && parts->g) {
      plan_->notes.push_back(node.label() + " runs as the nodes it was fused from (" + choice.reasons + ")");
      for (const Node& part : parts->g->nodes) add_node(part);
      return;
    }
    // An op ember runs as standard nodes (a context-dependent function body).
    const Schema* schema = find_schema(node.domain, node.op_type);
    if (!schema || !schema->expand) throw Error(node.label() + ": no kernel can run it (" + choice.reasons + ")");
    std::shared_ptr<const Graph> expansion = schema->expand(InferContext{node, opset, types, values});
    plan_->expansions.push_back(expansion);
    inlined_.push_back(expansion.get());
    for (const Node& part : expansion->nodes) add_node(part);
    return;
  }
  if (remembered) {
    auto decision = std::make_shared<NodeDecision>();
    decision->out_types = out_types;
    decision->backend = choice.backend;
    decision->entry = choice.entry;
    decision->kernel = choice.kernel;
    decision->workspace = choice.workspace;
    decision->flops = choice.flops;
    decision->note = choice.note;
    for (const Tensor* v : values)
      for (const auto& folded_value : plan_->folded)
        if (v && folded_value.get() == v) decision->kernel_inputs.push_back(folded_value);
    remember(signature.key(), std::move(decision));
  }
  place(node, std::move(choice), in_ids, out_types);
}

// A node of the graph itself, not of a fused node's decomposition or an expansion,
// whose nodes may be made again per plan (at addresses a later node may take).
bool PlanBuilder::is_top_level(const Node& node) const {
  return !graph_.nodes.empty() && &node >= &graph_.nodes.front() && &node <= &graph_.nodes.back();
}

// The node's signature from its inputs' values in this plan; false if it makes none.
bool PlanBuilder::sign(const Node& node, const std::vector<int>& in_ids, NodeSignature& signature) const {
  signature.start(node, options_.num_threads);
  for (size_t i = 0; i < in_ids.size(); ++i) {
    if (in_ids[i] < 0) {
      signature.add_absent();
      continue;
    }
    const PlannedValue& v = plan_->values[in_ids[i]];
    const Tensor* known = known_value(in_ids[i]);
    if (!signature.add(v.type, v.device, known, known && known == find_initializer(node.inputs[i]))) return false;
  }
  return true;
}

void PlanBuilder::remember(const std::string& key, std::shared_ptr<NodeDecision> decision) {
  ++plan_->nodes_decided;
  decisions_->add(key, decision);
  plan_->decisions.push_back(std::move(decision));
}

// What an earlier plan decided for the node at these very inputs: its folded values,
// or its kernel, placed anew in this plan.
void PlanBuilder::apply(const Node& node, const std::shared_ptr<const NodeDecision>& decision,
                        const std::vector<int>& in_ids) {
  ++plan_->nodes_reused;
  plan_->decisions.push_back(decision);
  if (!decision->folded.empty()) {
    for (size_t i = 0; i < node.outputs.size() && i < decision->folded.size(); ++i)
      if (!node.outputs[i].empty() && !decision->folded[i]->empty()) add_folded(node.outputs[i], decision->folded[i]);
    return;
  }
  if (!decision->note.empty()) plan_->notes.push_back(decision->note);
  place(node,
        Choice{decision->backend, "", "", decision->entry, decision->kernel, decision->workspace, decision->flops},
        in_ids, decision->out_types);
}

// From here on nodes run eagerly on the host; the planned values they read stay
// alive to the end of the steps.
void PlanBuilder::add_eager(const Node& node, int64_t opset) {
  plan_->eager.push_back({&node, opset});
  for (const auto& name : node.inputs) read_eagerly(name);
  for (const auto& [_, a] : node.attributes.all()) {
    if (a.g) read_subgraph_eagerly(*a.g);
    for (const auto& sub : a.graphs) read_subgraph_eagerly(*sub);
  }
  for (const auto& name : node.outputs)
    if (!name.empty()) eager_values_.insert(name);
}

void PlanBuilder::read_subgraph_eagerly(const Graph& g) {
  for (const Node& n : g.nodes) {
    for (const auto& name : n.inputs) read_eagerly(name);
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g) read_subgraph_eagerly(*a.g);
      for (const auto& sub : a.graphs) read_subgraph_eagerly(*sub);
    }
  }
  for (const auto& o : g.outputs) read_eagerly(o.name);
}

void PlanBuilder::read_eagerly(const std::string& name) {
  if (name.empty() || eager_values_.count(name) || pinned_.count(name)) return;
  if (!ids_.count(name) && !find_initializer(name)) return;  // a subgraph's own value
  const int id = on_device(lookup(name), Device{});
  pinned_.insert(name);
  plan_->eager_reads.emplace_back(name, id);
}

// Evaluates now, on the host, a node whose result is already determined: its inputs
// are constants, or it only reads shapes (Shape, Size). This is what turns the
// Shape->Gather->Concat->Reshape chains of exported models into constants.
bool PlanBuilder::fold(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                       const std::vector<const Tensor*>& values, const std::vector<TensorType>& out_types,
                       bool all_known, std::vector<std::shared_ptr<const Tensor>>& folded) {
  const bool reads_only_shape =
      node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size");
  if (!(all_known || reads_only_shape) || !can_fold(node)) return false;
  std::vector<Tensor> shape_only;
  std::vector<const Tensor*> inputs = values;
  if (reads_only_shape) {
    shape_only.push_back(Tensor::view(types[0].dtype, types[0].shape, nullptr));
    inputs[0] = &shape_only[0];
  }
  std::vector<Tensor> outputs = evaluate_inferred_node(node, opset, inputs, out_types);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    folded.push_back(std::make_shared<const Tensor>(std::move(outputs[i])));
    if (!node.outputs[i].empty() && !folded.back()->empty()) add_folded(node.outputs[i], folded.back());
  }
  return true;
}

void PlanBuilder::add_folded(const std::string& name, const std::shared_ptr<const Tensor>& t) {
  plan_->folded.push_back(t);
  int id = new_value(name, {t->dtype(), t->shape()}, Device{}, Storage::Constant);
  plan_->values[id].constant = t.get();
  ids_[name] = id;
}

namespace {

// Small integer tensors read from the host and written for it (the shape
// computations exported models are full of) stay there: on a device each would cost
// a copy up and a wait for the copy back.
bool is_shape_arithmetic(const std::vector<Device>& in_devices, const std::vector<TensorType>& types,
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

}  // namespace

PlanBuilder::Choice PlanBuilder::choose_kernel(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                                               const std::vector<const Tensor*>& values,
                                               const std::vector<TensorType>& out_types,
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
      init.packed_weights = &weights_.packed();
      for (size_t i = 0; i < values.size(); ++i)
        init.weights.push_back(values[i] && i < node.inputs.size() && values[i] == find_initializer(node.inputs[i]));
      std::string why;
      std::unique_ptr<Kernel> kernel;
      try {
        kernel = entry->factory(init, &why);
      } catch (const Error& e) {  // a device library failing at plan time
        const std::string what = e.what();
        throw Error(what.rfind(node.label(), 0) == 0 ? what : node.label() + " on " + device.to_string() + ": " + what);
      }
      if (kernel) {
        std::string note = reasons.empty() ? "" : node.label() + " runs on " + device.to_string() + " (" + reasons + ")";
        if (!note.empty()) plan_->notes.push_back(note);
        return {backend, "", std::move(note), entry, std::move(kernel), init.workspace_bytes, init.flops};
      }
      reasons += (reasons.empty() ? "" : "; ") + device.to_string() + ": " + why;
    }
  }
  Choice none;
  none.reasons = reasons;
  return none;
}

// The id of `id`'s value on `device`, inserting one copy per (value, device).
int PlanBuilder::on_device(int id, Device device) {
  if (plan_->values[id].device == device) return id;
  const PlannedValue v = plan_->values[id];  // a copy: new_value() grows the vector
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
void PlanBuilder::add_copy(std::string label, Backend& copier, int from, int to) {
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

Backend& PlanBuilder::backend_for(Device device) const {
  for (Backend* b : backends_)
    if (b->device() == device) return *b;
  throw Error("internal: no backend for " + device.to_string());
}

void PlanBuilder::place(const Node& node, Choice choice, std::vector<int> in_ids,
                        const std::vector<TensorType>& out_types) {
  const Device device = choice.backend->device();
  for (int& id : in_ids)
    if (id >= 0) id = on_device(id, device);

  const KernelFlags& flags = choice.entry->flags;
  const bool alias = in_ids[0] >= 0 && !is_graph_output(node.outputs[0]) &&
                     (flags.output_aliases_input0 ||
                      (flags.aliases_input0_of_its_type && out_types[0] == plan_->values[in_ids[0]].type));
  std::vector<int> out_ids;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty() || !out_types[i].present()) {
      out_ids.push_back(-1);
      continue;
    }
    int id = new_value(node.outputs[i], out_types[i], device, Storage::Arena);
    if (alias && i == 0) set_alias(id, in_ids[0]);
    ids_[node.outputs[i]] = id;
    out_ids.push_back(id);
  }
  if (alias) return;  // no step: the output is the input's bytes, reinterpreted
  for (size_t k : overwritable_inputs(choice.entry->flags, in_ids.size()))
    if (can_overwrite(node, k, in_ids[k], out_ids)) {
      set_alias(out_ids[0], in_ids[k]);
      overwrote_.insert(out_ids[0]);
      break;
    }
  for (const std::string& name : node.inputs)
    if (!name.empty()) ++placed_reads_[name];

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
  step.flops = choice.flops;
  plan_->steps.push_back(std::move(step));
}

// How many node inputs read each value; in a graph with subgraphs (which read the
// enclosing scope by name; a fused node's decomposition reads only its own inputs)
// none is counted and nothing is overwritten.
void PlanBuilder::count_readers() {
  reader_count_ = ReaderCount::Unknown;
  for (const Node& node : graph_.nodes)
    for (const auto& [name, a] : node.attributes.all())
      if (name != kDecompositionAttribute && (a.g || !a.graphs.empty())) return;
  for (const Node& node : graph_.nodes)
    for (const std::string& name : node.inputs)
      if (!name.empty()) ++readers_[name];
  reader_count_ = ReaderCount::Known;
}

std::vector<size_t> PlanBuilder::overwritable_inputs(const KernelFlags& flags, size_t inputs) {
  std::vector<size_t> k;
  if (flags.overwrites_any_input)
    for (size_t i = 0; i < inputs; ++i) k.push_back(i);
  else if (flags.overwrites_input >= 0 && static_cast<size_t>(flags.overwrites_input) < inputs)
    k.push_back(static_cast<size_t>(flags.overwrites_input));
  return k;
}

// Output 0 of `node` may take the bytes of its input `k` (value `in`): the node reads it
// once and is its last reader (every other node that reads it has its step before this
// one, and steps run in order: ResNet's residual, read by the block's first conv and
// by the sum fused into its last), no copy of it went to another device (where the
// copy may still be in flight), it is an arena value of its own (no view, not the
// caller's input or a graph output), and it has the output's type.
bool PlanBuilder::can_overwrite(const Node& node, size_t k, int in, const std::vector<int>& out_ids) {
  if (reader_count_ == ReaderCount::NotYet) count_readers();
  if (reader_count_ != ReaderCount::Known || in < 0 || out_ids.empty() || out_ids[0] < 0) return false;
  const std::string& name = node.inputs[k];
  auto it = readers_.find(name);
  auto placed = placed_reads_.find(name);
  const int earlier = placed == placed_reads_.end() ? 0 : placed->second;
  if (it == readers_.end() || it->second - earlier != 1 || is_graph_output(name) || is_graph_output(node.outputs[0]))
    return false;
  auto copy = moved_.lower_bound({in, std::string()});
  if (copy != moved_.end() && copy->first.first == in) return false;
  const PlannedValue& v = plan_->values[in];
  const PlannedValue& y = plan_->values[out_ids[0]];
  // A value that took a dead value's bytes this way is a value of its own (the next
  // residual block's sum takes its bytes in turn); a view of a live value is not.
  const bool own_bytes = v.alias_of < 0 || overwrote_.count(in);
  if (v.storage != Storage::Arena || !own_bytes || !(v.device == y.device) || v.type.dtype != y.type.dtype ||
      v.type.shape != y.type.shape)
    return false;
  return !aliased_.count(in);  // else a view of it lives on
}

void PlanBuilder::set_alias(int id, int of) {
  plan_->values[id].alias_of = of;
  aliased_.insert(of);
}

bool PlanBuilder::is_graph_output(const std::string& name) const {
  for (const auto& o : graph_.outputs)
    if (o.name == name) return true;
  return false;
}

// Graph outputs are written straight into the caller's tensors when a step on the
// output's device produces them; anything else (a constant, an input, a value on
// another device, a repeat) is copied there by one final step.
void PlanBuilder::bind_graph_outputs() {
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

void PlanBuilder::lay_out_arenas() {
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

std::unique_ptr<Plan> build_plan(const Graph& graph, std::span<const Shape> input_shapes,
                                 std::span<Backend* const> backends, WeightCache& weights,
                                 const PlannerOptions& options, NodeDecisions* decisions) {
  return PlanBuilder(graph, backends, weights, options, decisions).build(input_shapes);
}

void check_supported(const Graph& graph, std::span<Backend* const> backends) {
  std::string missing;
  int count = 0;
  for (const Node& node : graph.nodes) {
    const int64_t opset = graph.opset(node.domain);
    bool found = false;
    for (Backend* b : backends)
      found = found || !find_kernels(node.domain, node.op_type, opset, b->device().kind).empty();
    const Schema* schema = find_schema(node.domain, node.op_type);
    found = (found && schema) || (schema && schema->expand);  // an expansion runs on the kernels of its nodes
    if (found || find_value_op(node.domain, node.op_type)) continue;
    if (count++ < 50) missing += "\n  " + node.label() + (node.domain.empty() ? "" : " (domain " + node.domain + ")") +
                             " at opset " + std::to_string(opset);
  }
  if (count)
    throw Error(graph.source + ": " + std::to_string(count) + " node(s) use operators ember does not support:" +
                missing + (count > 50 ? "\n  ..." : ""));
}

}  // namespace ember
