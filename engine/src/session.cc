#include <ember/core/error.h>
#include <ember/session.h>

#include "engine/src/device_select.h"
#include "engine/src/executor.h"
#include "engine/src/log.h"
#include "engine/src/planner.h"
#include "graph/passes/convert_float16.h"
#include "graph/passes/passes.h"
#include "graph/schema.h"
#include "loader/onnx_loader.h"
#include "ops/cpu/activation_in_primitive.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "ops/run_stop.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string_view>

namespace ember {

struct Session::Impl {
  SessionOptions options;
  Logger log;
  Graph graph;
  ModelMetadata metadata;
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
  void optimize();
  void log_plan(const Plan& plan, double milliseconds) const;
  // Session::run, past the checks of its arguments, stopping as `stop` says.
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs, const RunOptions& run_options,
           const RunStop& stop);

  // Checks the options, picks the backends, then loads the graph with `load` and
  // readies it to plan: what both the path and the bytes constructors do.
  static std::unique_ptr<Impl> make(const SessionOptions& options, const std::function<Graph()>& load);
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

// A run's stop, from the time it begins.
RunStop stop_for(const RunOptions& run_options) {
  RunStop stop;
  stop.cancel = run_options.cancel;
  stop.deadline = run_options.deadline;
  stop.start = RunStop::Clock::now();
  return stop;
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
  log.warning(std::to_string(on_host) + " of " + std::to_string(total) + " nodes run on the CPU, not on " +
              backends.front()->device().to_string() + " (--explain, or Session::explain, says why)");
}

// One debug line per plan, with what decided its cost; its notes (placement
// fallbacks) and its eager tail each on a line of their own.
void Session::Impl::log_plan(const Plan& plan, double milliseconds) const {
  if (!log.enabled(LogLevel::Debug)) return;
  std::string line = "planned inputs";
  for (const Shape& s : plan.input_shapes) (line += ' ') += shape_to_string(s);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f", milliseconds);
  line += " in " + std::string(ms) + " ms: " + std::to_string(plan.steps.size()) + " steps";
  for (const auto& [device, bytes] : plan.arena_bytes)
    line += ", " + device.to_string() + " arena " + std::to_string(bytes) + " bytes (" +
            std::to_string(plan.node_steps_on(device)) + " nodes)";
  log.debug(line);
  for (const std::string& note : plan.notes) log.debug("plan note: " + note);
  if (!plan.eager.empty())
    log.debug("eager tail of " + std::to_string(plan.eager.size()) + (plan.eager.size() == 1 ? " node" : " nodes") +
              " from " + plan.eager.front().node->label() +
              " on: an output shape there depends on input data, so they run one by one on the CPU");
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
  const auto start = std::chrono::steady_clock::now();
  plans.push_back(build_plan(graph, shapes, backends, weights, planner_options));
  log_plan(*plans.back(), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  warn_if_mostly_on_host(*plans.back());
  return *plans.back();
}

// The graph passes the options ask for. Channels-last layouts and strided matmul
// operands are the CPU kernels' (the CUDA ones pick their own), on float32 values
// (bf16 math converts inside the kernel).
void Session::Impl::optimize() {
  if (options.optimization == GraphOptimization::None) return;
  const size_t before = graph.nodes.size();
  const auto start = std::chrono::steady_clock::now();
  const bool for_cpu = backends.front()->device().kind == DeviceKind::Cpu && options.precision != "fp16";
  if (options.optimization == GraphOptimization::Basic) {
    fold_constants(graph, cpu_node_evaluator());
    eliminate_dead_code(graph);
  } else {
    optimize_graph(graph, cpu_node_evaluator(), for_cpu);
    // bf16 convolutions read bfloat16 anyway: between two of them the value stays so,
    // instead of a float32 write and a reorder back at the reader.
    if (for_cpu && options.precision == "bf16") keep_bf16_between_convs(graph, activation_in_primitive);
  }
  if (log.enabled(LogLevel::Info)) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    log.info(std::string("graph passes (") + (options.optimization == GraphOptimization::Basic ? "basic" : "all") +
             "): " + std::to_string(before) + " nodes -> " + std::to_string(graph.nodes.size()) + " in " + ms + " ms");
  }
}

namespace {

ModelMetadata metadata_of(const Graph& g) {
  ModelMetadata m;
  m.opset_imports = g.opset_imports;
  m.ir_version = g.model.ir_version;
  m.producer_name = g.model.producer_name;
  m.producer_version = g.model.producer_version;
  m.domain = g.model.domain;
  m.model_version = g.model.model_version;
  m.doc_string = g.model.doc_string;
  m.graph_name = g.name;
  m.graph_doc_string = g.doc_string;
  m.metadata_props = g.model.metadata_props;
  return m;
}

}  // namespace

std::unique_ptr<Session::Impl> Session::Impl::make(const SessionOptions& options, const std::function<Graph()>& load) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->log = Logger(options.log_level, options.log_sink);
  // Resolved once: kernels are built for the count they run with (oneDNN fixes its
  // thread split when a primitive is created), so 0 must not reach them as "one".
  impl->options.num_threads = resolve_thread_count(options.num_threads);
  if (options.precision != "fp32" && options.precision != "fp16" && options.precision != "bf16")
    throw Error("precision '" + options.precision + "' is not valid: expected fp32, fp16 or bf16");
  impl->owned_backends = select_backends(options.device);
  for (auto& b : impl->owned_backends) impl->backends.push_back(b.get());
  if (options.precision == "bf16") check_bf16_supported(impl->backends.front()->device());
  impl->graph = load();
  impl->metadata = metadata_of(impl->graph);
  impl->log.info("loaded " + impl->graph.source + ": " + std::to_string(impl->graph.nodes.size()) + " nodes, " +
                 std::to_string(impl->graph.initializers.size()) + " initializers, " +
                 std::to_string(impl->backends.size()) + " devices (" + impl->backends.front()->device().to_string() +
                 " first)");
  check_supported(impl->graph, impl->backends);
  impl->optimize();
  if (options.precision == "fp16") impl->convert_to_half();
  bind_attributes(impl->graph);  // after every pass: each kernel reads the final nodes
  impl->upload_weights();
  for (const auto& v : impl->graph.inputs) impl->input_descs.push_back(describe(v));
  for (const auto& v : impl->graph.outputs) impl->output_descs.push_back(describe(v));
  return impl;
}

Session::Session(const std::string& model_path, SessionOptions options)
    : impl_(Impl::make(options, [&] { return load_model(model_path); })) {}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Errors name the bytes "model bytes" where a file's would name the file.
Session Session::from_bytes(std::span<const std::byte> model, SessionOptions options,
                            const std::string& external_data_dir) {
  const std::string_view bytes(reinterpret_cast<const char*>(model.data()), model.size());
  return Session(Impl::make(options, [&] { return load_model_from_bytes(bytes, "model bytes", external_data_dir); }));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::vector<std::string> list_operators(const std::string& device) {
  if (device == "cpu") return registered_ops(DeviceKind::Cpu);
  if (device.rfind("cuda", 0) == 0) return registered_ops(DeviceKind::Cuda);
  throw Error("device '" + device + "' is not valid: expected cpu, cuda or cuda:N");
}

const std::vector<ValueDesc>& Session::inputs() const { return impl_->input_descs; }
const std::vector<ValueDesc>& Session::outputs() const { return impl_->output_descs; }
const ModelMetadata& Session::metadata() const { return impl_->metadata; }

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

  const RunStop stop = stop_for(run_options);
  impl_->check_inputs(ordered);
  stop.check();  // before planning: a run past its deadline does no work at all
  std::vector<Tensor> outputs = make_outputs(ordered);
  impl_->run(ordered, outputs, run_options, stop);
  return outputs;
}

void Session::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                  const RunOptions& run_options) {
  const RunStop stop = stop_for(run_options);
  impl_->check_inputs(inputs);
  stop.check();
  impl_->run(inputs, outputs, run_options, stop);
}

void Session::Impl::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                        const RunOptions& run_options, const RunStop& stop) {
  if (outputs.size() != graph.outputs.size())
    throw Error("the model has " + std::to_string(graph.outputs.size()) + " outputs, got " +
                std::to_string(outputs.size()) + " output tensors");
  const Plan& plan = plan_for(inputs, outputs);
  if (outputs.size() != plan.output_values.size())
    throw Error("the model has " + std::to_string(plan.output_values.size()) + " outputs, got " +
                std::to_string(outputs.size()) + " output tensors");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (plan.output_values[i] < 0) continue;  // replaced by the run: its shape depends on data
    const TensorType& t = plan.values[plan.output_values[i]].type;
    if (outputs[i].dtype() != t.dtype || outputs[i].shape() != t.shape)
      throw Error("output '" + graph.outputs[i].name + "' must be " + dtype_name(t.dtype) +
                  " " + shape_to_string(t.shape) + ", got " + dtype_name(outputs[i].dtype()) + " " +
                  shape_to_string(outputs[i].shape()));
  }

  std::unique_ptr<RunContext> context;
  {
    std::lock_guard lock(contexts_mutex);
    if (!idle_contexts.empty()) {
      context = std::move(idle_contexts.back());
      idle_contexts.pop_back();
    }
  }
  if (!context) context = std::make_unique<RunContext>(backends);
  const ThreadCountScope threads(options.num_threads);
  RunSettings settings;
  settings.num_threads = options.num_threads;
  settings.profile = run_options.profile;
  settings.capture_graphs = options.cuda_graph;
  settings.stop = &stop;
  auto give_back = [&] {
    std::lock_guard lock(contexts_mutex);
    idle_contexts.push_back(std::move(context));
  };
  try {
    context->run(plan, inputs, outputs, settings);
  } catch (const RunStopped&) {
    // A stop comes between steps or iterations, after the executor left the streams
    // idle: the context's arenas and bindings stay valid, and the next run rewrites
    // whatever this one left half done. (After other errors the context is dropped.)
    give_back();
    throw;
  }
  give_back();
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
