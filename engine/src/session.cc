#include <ember/core/error.h>
#include <ember/session.h>

#include "engine/src/cuda_module.h"
#include "engine/src/device_select.h"
#include "engine/src/executor.h"
#include "engine/src/planner.h"
#include "graph/passes/convert_float16.h"
#include "graph/passes/passes.h"
#include "graph/schema.h"
#include "loader/onnx_loader.h"
#include "ops/cpu/activation_in_primitive.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <functional>
#include <iostream>
#include <mutex>
#include <shared_mutex>

namespace ember {

struct Session::Impl {
  SessionOptions options;
  Graph graph;
  std::vector<std::unique_ptr<Backend>> owned_backends;
  std::vector<Backend*> backends;
  WeightCache weights;
  std::vector<ValueDesc> input_descs, output_descs;

  std::shared_mutex plans_mutex;
  std::vector<std::unique_ptr<Plan>> plans;

  std::mutex contexts_mutex;
  std::vector<std::unique_ptr<RunContext>> idle_contexts;

  const Plan& plan_for(std::span<const Tensor> inputs, std::span<const Tensor> outputs = {});
  void check_inputs(std::span<const Tensor> inputs) const;
  bool runs_on(Device device) const;
  void upload_weights();
  void convert_to_half();
  Float16Summary float16;  // what --precision fp16 converted
  void warn_if_mostly_on_host(const Plan& plan) const;
};

namespace {

ValueDesc describe(const ValueInfo& v) {
  ValueDesc d{v.name, v.dtype, {}};
  for (const Dim& dim : v.dims)
    d.dims.push_back(dim.known() ? std::to_string(dim.value) : dim.symbol.empty() ? "?" : dim.symbol);
  return d;
}

// Host outputs when the caller passes none (make_outputs, explain).
Device output_device(std::span<const Tensor> outputs, size_t i) {
  return i < outputs.size() ? outputs[i].device() : Device{};
}

bool same_signature(const Plan& plan, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (plan.input_shapes[i] != inputs[i].shape() || !(plan.input_devices[i] == inputs[i].device())) return false;
  for (size_t i = 0; i < plan.output_devices.size(); ++i)
    if (!(plan.output_devices[i] == output_device(outputs, i))) return false;
  return true;
}

}  // namespace

void Session::Impl::check_inputs(std::span<const Tensor> inputs) const {
  if (inputs.size() != graph.inputs.size())
    throw Error("the model takes " + std::to_string(graph.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& want = graph.inputs[i];
    const Tensor& got = inputs[i];
    if (!runs_on(got.device()))
      throw Error("input '" + want.name + "' is on " + got.device().to_string() +
                  ", a device this session does not run on (device option '" + options.device + "')");
    if (want.dtype != DType::Undefined && got.dtype() != want.dtype)
      throw Error("input '" + want.name + "' must be " + dtype_name(want.dtype) + ", got " +
                  dtype_name(got.dtype()));
    if (!want.has_shape) continue;
    bool fits = got.rank() == static_cast<int64_t>(want.dims.size());
    size_t bad_dim = 0;
    // The first (batch) dimension may differ from a fixed one in the file: models are
    // often exported at batch 1, and the planner reports any node it does not fit.
    for (size_t k = 1; fits && k < want.dims.size(); ++k)
      if (want.dims[k].known() && want.dims[k].value != got.shape()[k]) fits = false, bad_dim = k;
    if (fits) continue;
    const ValueDesc d = describe(want);
    std::string expected = "[";
    for (size_t k = 0; k < d.dims.size(); ++k) expected += (k ? ", " : "") + d.dims[k];
    expected += "]";
    throw Error("input '" + want.name + "' must have shape " + expected + ", got " +
                shape_to_string(got.shape()) +
                (got.rank() == static_cast<int64_t>(want.dims.size())
                     ? " (dimension " + std::to_string(bad_dim) + ")" : ""));
  }
}

// After the fusion passes (they match float32 constants). On a GPU session, ops the
// GPU has no kernel for stay float32 on the CPU, behind Casts.
void Session::Impl::convert_to_half() {
  const Backend* preferred = backends.front();
  std::function<bool(const Node&)> keep_float32;
  if (preferred->device().kind != DeviceKind::Cpu) {
    const DeviceKind kind = preferred->device().kind;
    const Graph* g = &graph;
    keep_float32 = [kind, g](const Node& node) {
      return find_kernels(node.domain, node.op_type, g->opset(node.domain), kind).empty();
    };
  }
  float16 = convert_to_float16(graph, keep_float32);
}

// Weights go to each device once, when the session is made: every float initializer
// read by an op the device has kernels for. (A weight whose node the device's kernel
// later declines stays uploaded but unused; weights found missing at plan time are
// uploaded then, still once.)
void Session::Impl::upload_weights() {
  for (Backend* b : backends) {
    if (b->device().kind == DeviceKind::Cpu) continue;
    for (const Node& node : graph.nodes) {
      if (find_kernels(node.domain, node.op_type, graph.opset(node.domain), b->device().kind).empty()) continue;
      for (const std::string& name : node.inputs) {
        auto it = name.empty() ? graph.initializers.end() : graph.initializers.find(name);
        if (it == graph.initializers.end()) continue;
        const DType t = it->second.dtype();
        if (t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16) weights.get(name, it->second, *b);
      }
    }
  }
}

bool Session::Impl::runs_on(Device device) const {
  for (const Backend* b : backends)
    if (b->device() == device) return true;
  return false;
}

// A GPU session whose nodes mostly land on the CPU is slow for a reason the user
// should hear about without asking.
void Session::Impl::warn_if_mostly_on_host(const Plan& plan) const {
  if (backends.front()->device().kind == DeviceKind::Cpu) return;
  const size_t total = plan.node_steps(), on_host = plan.node_steps_on(Device{});
  if (total == 0 || on_host * 2 <= total) return;
  std::cerr << "ember: warning: " << on_host << " of " << total << " nodes run on the CPU, not on "
            << backends.front()->device().to_string() << " (--explain, or Session::explain, says why)\n";
}

// Plans are cached per signature (input shapes, where inputs and outputs live); the
// lookup compares in place so that a steady-state run allocates nothing.
const Plan& Session::Impl::plan_for(std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  {
    std::shared_lock lock(plans_mutex);
    for (const auto& p : plans)
      if (same_signature(*p, inputs, outputs)) return *p;
  }
  std::unique_lock lock(plans_mutex);
  for (const auto& p : plans)
    if (same_signature(*p, inputs, outputs)) return *p;
  std::vector<Shape> shapes;
  PlannerOptions planner_options;
  planner_options.num_threads = options.num_threads;
  if (options.precision == "bf16") planner_options.dense_math = DenseMath::BFloat16;
  for (const Tensor& t : inputs) {
    shapes.push_back(t.shape());
    planner_options.input_devices.push_back(t.device());
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const Device d = output_device(outputs, i);
    if (!runs_on(d))
      throw Error("output '" + graph.outputs[i].name + "' is on " + d.to_string() +
                  ", a device this session does not run on (device option '" + options.device + "')");
    planner_options.output_devices.push_back(d);
  }
  plans.push_back(build_plan(graph, shapes, backends, weights, planner_options));
  warn_if_mostly_on_host(*plans.back());
  return *plans.back();
}

Session::Session(const std::string& model_path, SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  // Resolved once: kernels are built for the count they run with (oneDNN fixes its
  // thread split when a primitive is created), so 0 must not reach them as "one".
  impl_->options.num_threads = resolve_thread_count(options.num_threads);
  if (options.precision != "fp32" && options.precision != "fp16" && options.precision != "bf16")
    throw Error("precision '" + options.precision + "' is not valid: expected fp32, fp16 or bf16");
  impl_->owned_backends = select_backends(options.device);
  for (auto& b : impl_->owned_backends) impl_->backends.push_back(b.get());
  if (options.precision == "bf16") check_bf16_supported(impl_->backends.front()->device());
  impl_->graph = load_model(model_path);
  check_supported(impl_->graph, impl_->backends);
  // Channels-last layouts and strided matmul operands are the CPU kernels' (the CUDA
  // ones pick their own), on float32 values (bf16 math converts inside the kernel).
  const bool for_cpu = impl_->backends.front()->device().kind == DeviceKind::Cpu && options.precision != "fp16";
  if (options.optimize) optimize_graph(impl_->graph, cpu_node_evaluator(), for_cpu);
  // bf16 convolutions read bfloat16 anyway: between two of them the value stays so,
  // instead of a float32 write and a reorder back at the reader.
  if (options.optimize && for_cpu && options.precision == "bf16") keep_bf16_between_convs(impl_->graph, activation_in_primitive);
  if (options.precision == "fp16") impl_->convert_to_half();
  bind_attributes(impl_->graph);  // after every pass: each kernel reads the final nodes
  impl_->upload_weights();
  for (const auto& v : impl_->graph.inputs) impl_->input_descs.push_back(describe(v));
  for (const auto& v : impl_->graph.outputs) impl_->output_descs.push_back(describe(v));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::vector<std::string> list_operators(const std::string& device) {
  if (device == "cpu") return registered_ops(DeviceKind::Cpu);
  if (device.rfind("cuda", 0) == 0) {
    // The CUDA kernels register themselves when the CUDA module loads.
    std::string problem;
    if (!cuda_module(&problem)) throw Error("no CUDA operators: " + problem);
    return registered_ops(DeviceKind::Cuda);
  }
  throw Error("device '" + device + "' is not valid: expected cpu, cuda or cuda:N");
}

const std::vector<ValueDesc>& Session::inputs() const { return impl_->input_descs; }
const std::vector<ValueDesc>& Session::outputs() const { return impl_->output_descs; }

std::vector<Tensor> Session::make_outputs(std::span<const Tensor> inputs) {
  impl_->check_inputs(inputs);
  const Plan& plan = impl_->plan_for(inputs);
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan.output_values.size(); ++i) {  // data-dependent shapes come back from run()
    const int id = plan.output_values[i];
    outputs.push_back(id < 0 ? Tensor() : Tensor(plan.values[id].type.dtype, plan.values[id].type.shape));
  }
  return outputs;
}

std::string Session::explain(std::span<const Tensor> inputs) {
  impl_->check_inputs(inputs);
  std::string text = explain_plan(impl_->plan_for(inputs));
  if (impl_->options.precision == "fp16") {
    const Float16Summary& f = impl_->float16;
    text += "fp16: " + std::to_string(f.converted_nodes) + " nodes in float16, " + std::to_string(f.kept_nodes) +
            " kept in float32, " + std::to_string(f.casts_inserted) + " casts inserted, " +
            std::to_string(f.converted_weights) + " weight values converted (" +
            std::to_string(f.overflowed_weights) + " beyond the float16 range, saturated)\n";
  }
  for (const DeviceMemory& m : memory())
    if (m.weight_bytes)
      text += "weights on " + m.device + ": " + std::to_string(m.weight_bytes) + " bytes, uploaded once\n";
  return text;
}

std::vector<Tensor> Session::run(const std::vector<std::pair<std::string, Tensor>>& named,
                                 const RunOptions& run_options) {
  std::vector<Tensor> ordered(impl_->graph.inputs.size());
  std::vector<bool> given(ordered.size(), false);
  for (const auto& [name, tensor] : named) {
    size_t i = 0;
    while (i < impl_->graph.inputs.size() && impl_->graph.inputs[i].name != name) ++i;
    if (i == impl_->graph.inputs.size()) {
      std::string names;
      for (const auto& in : impl_->graph.inputs) names += (names.empty() ? "" : ", ") + in.name;
      throw Error("the model has no input named '" + name + "' (its inputs: " + names + ")");
    }
    if (given[i]) throw Error("input '" + name + "' is given twice");
    ordered[i] = tensor;
    given[i] = true;
  }
  for (size_t i = 0; i < given.size(); ++i)
    if (!given[i]) throw Error("input '" + impl_->graph.inputs[i].name + "' is missing");

  std::vector<Tensor> outputs = make_outputs(ordered);
  run(ordered, outputs, run_options);
  return outputs;
}

void Session::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                  const RunOptions& run_options) {
  impl_->check_inputs(inputs);
  if (outputs.size() != impl_->graph.outputs.size())
    throw Error("the model has " + std::to_string(impl_->graph.outputs.size()) + " outputs, got " +
                std::to_string(outputs.size()) + " output tensors");
  const Plan& plan = impl_->plan_for(inputs, outputs);
  if (outputs.size() != plan.output_values.size())
    throw Error("the model has " + std::to_string(plan.output_values.size()) + " outputs, got " +
                std::to_string(outputs.size()) + " output tensors");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (plan.output_values[i] < 0) continue;  // replaced by the run: its shape depends on data
    const TensorType& t = plan.values[plan.output_values[i]].type;
    if (outputs[i].dtype() != t.dtype || outputs[i].shape() != t.shape)
      throw Error("output '" + impl_->graph.outputs[i].name + "' must be " + dtype_name(t.dtype) +
                  " " + shape_to_string(t.shape) + ", got " + dtype_name(outputs[i].dtype()) + " " +
                  shape_to_string(outputs[i].shape()));
  }

  std::unique_ptr<RunContext> context;
  {
    std::lock_guard lock(impl_->contexts_mutex);
    if (!impl_->idle_contexts.empty()) {
      context = std::move(impl_->idle_contexts.back());
      impl_->idle_contexts.pop_back();
    }
  }
  if (!context) context = std::make_unique<RunContext>(impl_->backends);
  const ThreadCountScope threads(impl_->options.num_threads);
  RunSettings settings;
  settings.num_threads = impl_->options.num_threads;
  settings.profile = run_options.profile;
  settings.capture_graphs = impl_->options.cuda_graph;
  context->run(plan, inputs, outputs, settings);
  std::lock_guard lock(impl_->contexts_mutex);
  impl_->idle_contexts.push_back(std::move(context));
}

std::vector<DeviceMemory> Session::memory() const {
  std::vector<DeviceMemory> result;
  for (const Backend* b : impl_->backends) {
    const MemoryUse use = b->memory_use();
    result.push_back({b->device().to_string(), use.weight_bytes, use.in_use_bytes, use.peak_bytes, use.allocations});
  }
  return result;
}

}  // namespace ember
