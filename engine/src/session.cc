#include <ember/core/error.h>
#include <ember/session.h>

#include "core/src/host_memory.h"
#include "engine/src/cuda_module.h"
#include "engine/src/device_select.h"
#include "engine/src/executor.h"
#include "engine/src/log.h"
#include "engine/src/node_decisions.h"
#include "engine/src/plan_cache.h"
#include "engine/src/planner.h"
#include "graph/passes/convert_float16.h"
#include "graph/passes/passes.h"
#include "graph/schema.h"
#include "loader/onnx_loader.h"
#include "ops/cpu/activation_in_primitive.h"
#include "ops/cpu/blocked_layouts.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "ops/run_stop.h"
#include "ops/value_ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

namespace ember {

struct Session::Impl {
  SessionOptions options;
  Logger log;
  Graph graph;
  ModelMetadata metadata;
  std::vector<std::unique_ptr<Backend>> owned_backends;
  std::vector<Backend*> backends;
  WeightCache weights;
  NodeDecisions node_decisions;  // what the cached plans decided per node, for the next plan
  uint64_t evicted_bytes_trimmed = 0;  // plans->evicted_bytes() when the heap was last trimmed
  // The heap a plan's kernels take, per decision it made: measured around planning,
  // except after a plan made mostly of earlier decisions (see plan_for).
  double kernel_bytes_per_decision = 0;
  bool last_plan_mostly_reused = false;
  std::vector<ValueDesc> input_descs, output_descs;

  std::unique_ptr<PlanCache> plans;
  std::mutex planning_mutex;  // one plan made at a time; runs of cached plans go on

  std::mutex contexts_mutex;
  std::vector<std::unique_ptr<RunContext>> idle_contexts;

  std::shared_ptr<const Plan> plan_for(std::span<const Tensor> inputs, std::span<const Tensor> outputs = {});
  std::unique_ptr<RunContext> take_context();
  void return_context(std::unique_ptr<RunContext> context, uint64_t evictions_seen);
  void check_inputs(std::span<const Tensor> inputs) const;
  bool runs_on(Device device) const;
  void upload_weights();
  // The 16-bit type the whole graph converts to: Float16 for fp16, BFloat16 for bf16 on
  // a GPU (bf16 on the CPU keeps the graph float32: only its convolutions and matrix
  // products take bfloat16 operands); Undefined otherwise.
  DType half_type() const;
  void convert_to_half();
  Float16Summary float16;  // what --precision fp16 (or bf16 on a GPU) converted
  void warn_if_mostly_on_host(const Plan& plan) const;
  void give_back_packed_originals(const Plan& plan);
  bool originals_checked = false;
  // Bytes of the host weights that still hold their data, for memory_report(): it may
  // run beside the first plan, which gives originals back (rewrites graph.initializers).
  std::atomic<size_t> host_weight_bytes{0};
  void optimize();
  void log_plan(const Plan& plan, double milliseconds) const;
  // Session::run, past the checks of its arguments, stopping as `stop` says.
  // `value_inputs` and `value_outputs`: the sequences and optionals of run_values.
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs, const RunOptions& run_options,
           const RunStop& stop, const std::unordered_map<std::string, Value>* value_inputs = nullptr,
           std::vector<Value>* value_outputs = nullptr);

  // Checks the options, picks the backends, then loads the graph with `load` and
  // readies it to plan: what both the path and the bytes constructors do.
  static std::unique_ptr<Impl> make(const SessionOptions& options, const std::function<Graph()>& load);
};

namespace {

// An evicted plan frees thousands of small blocks (kernels, descriptors, JIT code); glibc
// keeps freed heap pages mapped, up to a threshold it raises after every large free, so
// a service cycling through shapes held megabytes it no longer used. Trimming walks the
// whole heap (half a millisecond and more), so it waits until evicted plans add up to
// kTrimAfterEvictedBytes: a decoder's generation loop evicts a small plan per token.
// Plan-time only.
constexpr uint64_t kTrimAfterEvictedBytes = uint64_t{16} << 20;

void give_back_free_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// "seq(tensor(float32))", "seq(map(string,tensor(float32)))": ONNX's spelling with
// ember's dtype names.
std::string type_string(const ValueInfo& v) {
  std::string type = std::string("tensor(") + dtype_name(v.dtype) + ")";
  for (auto c = v.containers.rbegin(); c != v.containers.rend(); ++c)
    type = *c == ValueContainer::Map      ? std::string("map(") + dtype_name(v.map_key) + "," + type + ")"
           : *c == ValueContainer::Sequence ? "seq(" + type + ")"
                                            : "optional(" + type + ")";
  return type;
}

ValueDesc describe(const ValueInfo& v) {
  ValueDesc d{v.name, v.dtype, type_string(v), {}};
  for (const Dim& dim : v.dims)
    d.dims.push_back(dim.known() ? std::to_string(dim.value) : dim.symbol.empty() ? "?" : dim.symbol);
  return d;
}

// Graph inputs that index a constant table directly (Gather's indices, as token ids
// index an embedding): the table's size along the gathered axis, the least over uses.
std::map<std::string, int64_t> gathered_index_bounds(const Graph& graph) {
  std::map<std::string, int64_t> bounds;
  for (const ValueInfo& input : graph.inputs) {
    if (input.dtype != DType::Int64 && input.dtype != DType::Int32) continue;  // Gather's index types
    for (const Node& node : graph.nodes) {
      if (node.op_type != "Gather" || !node.domain.empty() || node.inputs.size() < 2 || node.inputs[1] != input.name)
        continue;
      auto table = graph.initializers.find(node.inputs[0]);
      if (table == graph.initializers.end() || table->second.rank() == 0) continue;
      int64_t axis = node.attributes.get_int_or("axis", 0);
      if (axis < 0) axis += table->second.rank();
      if (axis < 0 || axis >= table->second.rank()) continue;
      const int64_t size = table->second.shape()[axis];
      auto [it, added] = bounds.emplace(input.name, size);
      if (!added) it->second = std::min(it->second, size);
    }
  }
  return bounds;
}

// A run's stop, from the time it begins.
RunStop stop_for(const RunOptions& run_options) {
  RunStop stop;
  stop.cancel = run_options.cancel;
  stop.deadline = run_options.deadline;
  stop.start = RunStop::Clock::now();
  return stop;
}

}  // namespace

void Session::Impl::check_inputs(std::span<const Tensor> inputs) const {
  if (inputs.size() != graph.inputs.size())
    throw Error("the model takes " + std::to_string(graph.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& want = graph.inputs[i];
    const Tensor& got = inputs[i];
    if (!want.is_tensor()) {
      if (got.empty()) continue;  // run_values passes it beside the tensors
      throw Error("input '" + want.name + "' is a " + type_string(want) +
                  ", not a tensor: run the model with Session::run_values");
    }
    if (got.dtype() == DType::String && got.device().kind != DeviceKind::Cpu)
      throw Error("input '" + want.name + "': string tensors live on the host, this one is on " +
                  got.device().to_string());
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

DType Session::Impl::half_type() const {
  if (options.precision == "fp16") return DType::Float16;
  if (options.precision == "bf16" && backends.front()->device().kind != DeviceKind::Cpu) return DType::BFloat16;
  return DType::Undefined;
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
  float16 = convert_to_reduced_float(graph, half_type(), keep_float32);
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
  if (plan.nodes_reused)
    line += ", " + std::to_string(plan.nodes_reused) + " of " + std::to_string(plan.nodes_reused + plan.nodes_decided) +
            " nodes as earlier plans decided";
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

// Weights held once: a MatMul or Gemm weight that every reader reads packed (input 1,
// made into oneDNN's layout at plan time) gives its original bytes back once the first
// plan has packed it; a later plan that wants another layout reorders a packed form
// (ops/cpu/dnnl_util.cc). Only on the CPU, in float32 or bf16 math (a GPU uploads the
// original, a float16 session converts it), and not without graph optimizations, which
// keep the model as it was read.
void Session::Impl::give_back_packed_originals(const Plan& plan) {
  // Only with the first plan, which no run can be using yet.
  if (std::exchange(originals_checked, true)) return;
  if (options.optimization != GraphOptimization::All || backends.size() != 1 || options.precision == "fp16" || !plan.eager.empty()) return;
  std::map<std::string, bool> only_packed;  // initializer -> every reader packs it
  auto read = [&](const std::string& name, bool packs) {
    if (!graph.is_initializer(name)) return;
    auto [it, first] = only_packed.try_emplace(name, packs);
    it->second = it->second && packs;
  };
  for (const Node& node : graph.nodes) {
    const bool dense = (node.domain.empty() && (node.op_type == "MatMul" || node.op_type == "Gemm")) ||
                       (node.domain == "com.ember" && (node.op_type == "FusedMatMul" || node.op_type == "FusedGemm"));
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (!node.inputs[i].empty()) read(node.inputs[i], dense && i == 1 && !graph.is_initializer(node.inputs[0]));
    for (const auto& [name, attribute] : node.attributes.all()) {
      std::vector<const Graph*> bodies;
      if (attribute.g) bodies.push_back(attribute.g.get());
      for (const auto& g : attribute.graphs) bodies.push_back(g.get());
      for (const Graph* body : bodies)
        for (const std::string& outer : outer_names(*body)) read(outer, false);
    }
  }
  for (const ValueInfo& out : graph.outputs) read(out.name, false);
  for (const auto& [name, packed_only] : only_packed) {
    Tensor& weight = graph.initializers.at(name);
    if (!packed_only || weight.dtype() != DType::Float32 || weight.rank() != 2 ||
        weights.packed().forms_of(weight).empty())
      continue;
    const void* bytes = weight.data();
    host_weight_bytes.fetch_sub(weight.nbytes(), std::memory_order_relaxed);
    weight = Tensor::view(weight.dtype(), weight.shape(), nullptr);
    // A fused node's decomposition holds its own copy of the weight, sharing the bytes.
    for (const Node& node : graph.nodes)
      if (const Attribute* parts = node.attributes.find(kDecompositionAttribute); parts && parts->g)
        for (auto& [part_name, copy] : parts->g->initializers)
          if (copy.data() == bytes) copy = Tensor::view(copy.dtype(), copy.shape(), nullptr);
  }
}

namespace {

// Whether a plan runs faster on the calling thread alone than on the session's threads:
// a host plan of little arithmetic that touches little memory. Each parallel region
// wakes the other threads, and between regions (or over a small model's serial steps)
// they sleep again. Silero VAD (1.1 MFLOP, 1.3 MB touched a run) ran p50 0.09-0.15 ms
// on 2 threads and 0.035 on one; the default model at batch 1 (32x32 images, 473 KB
// touched, more than 4 MFLOP) 0.062 on 2 threads and 0.080 on one (an Intel Xeon,
// `infer --repeat 2000`). The first plan made on the session's threads shows the work;
// a small one is made again on one.
bool too_small_for_threads(const Plan& plan, const Plan::Work& work) {
  constexpr double kThreadsFromFlops = 4e6;
  constexpr size_t kThreadsFromBytes = size_t{2} << 20;
  if (!plan.eager.empty()) return false;  // work the plan cannot see
  for (const PlannedStep& step : plan.steps)
    if (step.device.kind != DeviceKind::Cpu) return false;
  return work.flops < kThreadsFromFlops && work.bytes < kThreadsFromBytes;
}

}  // namespace

// Plans are cached per signature (input shapes, where inputs and outputs live); a
// steady-state lookup allocates nothing. Plans are made one at a time, outside the
// cache's lock, so runs of cached shapes go on meanwhile.
std::shared_ptr<const Plan> Session::Impl::plan_for(std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  if (auto plan = plans->find(inputs, outputs)) return plan;
  std::lock_guard planning(planning_mutex);
  if (auto plan = plans->find(inputs, outputs)) return plan;  // made while this thread waited
  std::vector<Shape> shapes;
  PlannerOptions planner_options;
  planner_options.num_threads = options.num_threads;
  // CPU bf16 sessions; a GPU one has converted its graph, and leaves what falls back to
  // the CPU in the math its dtypes say.
  if (options.precision == "bf16" && half_type() == DType::Undefined) planner_options.dense_math = DenseMath::BFloat16;
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
  // The plan's kernels: what the heap grew by, less the weights packed meanwhile (which
  // the session keeps, and reports apart). Measuring walks the whole heap, a millisecond
  // in a long-running process, more than the plan itself when it is made mostly of
  // earlier plans' decisions (a generation loop's next token): after such a plan, the
  // next is charged the bytes per decision last measured for each decision it makes.
  auto heap_less_packed = [&] {
    return static_cast<int64_t>(heap_bytes_besides_blocks()) - static_cast<int64_t>(weights.packed().bytes());
  };
  const bool measure = !last_plan_mostly_reused;
  const int64_t heap_before = measure ? heap_less_packed() : 0;
  std::unique_ptr<Plan> plan = build_plan(graph, shapes, backends, weights, planner_options, &node_decisions);
  if (const Plan::Work work = plan->work(); planner_options.num_threads > 1 && too_small_for_threads(*plan, work)) {
    planner_options.num_threads = 1;
    plan = build_plan(graph, shapes, backends, weights, planner_options, &node_decisions);
    char note[160];
    std::snprintf(note, sizeof note, "runs on one thread: %.1f MFLOP and %zu KiB touched a run, too little to pay for waking another",
                  work.flops / 1e6, work.bytes >> 10);
    plan->notes.push_back(note);
  }
  if (measure) {
    plan->kernel_bytes = static_cast<size_t>(std::max<int64_t>(heap_less_packed() - heap_before, 0));
    kernel_bytes_per_decision =
        static_cast<double>(plan->kernel_bytes) / static_cast<double>(std::max<size_t>(plan->nodes_decided, 1));
  } else {
    plan->kernel_bytes = static_cast<size_t>(kernel_bytes_per_decision * static_cast<double>(plan->nodes_decided));
  }
  last_plan_mostly_reused = plan->nodes_reused > plan->nodes_decided;
  log_plan(*plan, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  warn_if_mostly_on_host(*plan);
  give_back_packed_originals(*plan);
  const uint64_t evictions = plans->evictions();
  std::shared_ptr<const Plan> added = plans->add(std::move(plan));
  if (plans->evictions() != evictions) {  // idle contexts let go of what the evicted plans held
    {
      std::lock_guard lock(contexts_mutex);
      for (auto& context : idle_contexts) context->release_unused([&](uint64_t id) { return plans->contains(id); });
    }
    node_decisions.forget_unused();
    if (plans->evicted_bytes() - evicted_bytes_trimmed >= kTrimAfterEvictedBytes) {
      evicted_bytes_trimmed = plans->evicted_bytes();
      give_back_free_heap();
    }
  }
  return added;
}

std::unique_ptr<RunContext> Session::Impl::take_context() {
  std::unique_ptr<RunContext> context;
  {
    std::lock_guard lock(contexts_mutex);
    if (!idle_contexts.empty()) {
      context = std::move(idle_contexts.back());
      idle_contexts.pop_back();
    }
  }
  if (!context) context = std::make_unique<RunContext>(backends);
  return context;
}

// A context that ran while plans were evicted may still hold them: it lets go first.
void Session::Impl::return_context(std::unique_ptr<RunContext> context, uint64_t evictions_seen) {
  if (plans->evictions() != evictions_seen)
    context->release_unused([&](uint64_t id) { return plans->contains(id); });
  std::lock_guard lock(contexts_mutex);
  idle_contexts.push_back(std::move(context));
}

// The graph passes the options ask for. Channels-last layouts are for the CPU's float32
// and bf16 convolutions and CUDA's float16 and bfloat16 ones (cuDNN's tensor cores read
// NHWC), blocked ones for the CPU's float32 convolutions where they pay
// (graph/passes/channels_last.cc; bf16 sessions keep bfloat16 between NHWC convs);
// strided matmul operands are the CPU kernels' (the CUDA ones pick their own).
void Session::Impl::optimize() {
  if (options.optimization == GraphOptimization::None) return;
  const size_t before = graph.nodes.size();
  const auto start = std::chrono::steady_clock::now();
  const bool for_cpu = backends.front()->device().kind == DeviceKind::Cpu && options.precision != "fp16";
  const bool cuda_half = backends.front()->device().kind == DeviceKind::Cuda && half_type() != DType::Undefined;
  if (options.optimization == GraphOptimization::Basic) {
    fold_constants(graph, cpu_node_evaluator());
    eliminate_dead_code(graph);
  } else {
    // EMBER_CPU_LAYOUT=channels-last: the float32 layouts of before the blocked one, to
    // compare against or to work around it.
    const char* layout = std::getenv("EMBER_CPU_LAYOUT");
    std::optional<BlockedLayouts> blocked;
    if (for_cpu && options.precision != "bf16" && !(layout && std::string(layout) == "channels-last"))
      blocked = blocked_layouts_for_this_cpu();
    optimize_graph(graph, cpu_node_evaluator(), for_cpu, cuda_half, blocked);
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
  impl->plans = std::make_unique<PlanCache>(PlanCacheLimits{options.plan_cache_max_plans, options.plan_cache_max_bytes});
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
  lower_string_class_labels(impl->graph);
  const std::map<std::string, int64_t> index_bounds = gathered_index_bounds(impl->graph);
  impl->optimize();
  if (impl->half_type() != DType::Undefined) impl->convert_to_half();
  bind_attributes(impl->graph);  // after every pass: each kernel reads the final nodes
  impl->upload_weights();
  for (const auto& [name, weight] : impl->graph.initializers)
    if (weight.data()) impl->host_weight_bytes += weight.nbytes();
  for (const auto& v : impl->graph.inputs) {
    impl->input_descs.push_back(describe(v));
    if (auto it = index_bounds.find(v.name); it != index_bounds.end()) impl->input_descs.back().index_bound = it->second;
  }
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
  if (device == "cpu") {  // the sequence and optional ops run on the host
    std::vector<std::string> ops = registered_ops(DeviceKind::Cpu);
    for (std::string& op : registered_value_ops()) ops.push_back(std::move(op));
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
    return ops;
  }
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
const ModelMetadata& Session::metadata() const { return impl_->metadata; }

std::vector<Tensor> Session::make_outputs(std::span<const Tensor> inputs) {
  impl_->check_inputs(inputs);
  const std::shared_ptr<const Plan> planned = impl_->plan_for(inputs);
  const Plan& plan = *planned;
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan.output_values.size(); ++i) {  // data-dependent shapes come back from run()
    const int id = plan.output_values[i];
    outputs.push_back(id < 0 ? Tensor() : Tensor(plan.values[id].type.dtype, plan.values[id].type.shape));
  }
  return outputs;
}

std::string Session::explain(std::span<const Tensor> inputs) {
  impl_->check_inputs(inputs);
  std::string text = explain_plan(*impl_->plan_for(inputs));
  if (const DType half = impl_->half_type(); half != DType::Undefined) {
    const Float16Summary& f = impl_->float16;
    const std::string type = dtype_name(half);
    text += impl_->options.precision + ": " + std::to_string(f.converted_nodes) + " nodes in " + type + ", " +
            std::to_string(f.kept_nodes) + " kept in float32, " + std::to_string(f.casts_inserted) +
            " casts inserted, " + std::to_string(f.converted_weights) + " weight values converted (" +
            std::to_string(f.overflowed_weights) + " beyond the " + type + " range, saturated)\n";
  }
  for (const DeviceMemory& m : memory())
    if (m.weight_bytes)
      text += "weights on " + m.device + ": " + std::to_string(m.weight_bytes) + " bytes, uploaded once\n";
  return text;
}

namespace {

// The values of `named` in the graph's input order; raises on an unknown, repeated or
// missing name.
template <class T>
std::vector<T> in_graph_order(const Graph& graph, const std::vector<std::pair<std::string, T>>& named) {
  std::vector<T> ordered(graph.inputs.size());
  std::vector<bool> given(ordered.size(), false);
  for (const auto& [name, value] : named) {
    size_t i = 0;
    while (i < graph.inputs.size() && graph.inputs[i].name != name) ++i;
    if (i == graph.inputs.size()) {
      std::string names;
      for (const auto& in : graph.inputs) names += (names.empty() ? "" : ", ") + in.name;
      throw Error("the model has no input named '" + name + "' (its inputs: " + names + ")");
    }
    if (given[i]) throw Error("input '" + name + "' is given twice");
    ordered[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < given.size(); ++i)
    if (!given[i]) throw Error("input '" + graph.inputs[i].name + "' is missing");
  return ordered;
}

// Raises unless `v` is what `want` (a sequence or optional input) declares.
void check_value_input(const ValueInfo& want, const Value& v, size_t depth = 0) {
  const auto fail = [&] {
    throw Error("input '" + want.name + "' must be a " + type_string(want) + ", got " + v.describe());
  };
  if (depth == want.containers.size()) {
    if (!v.is_tensor() || (want.dtype != DType::Undefined && v.tensor().dtype() != want.dtype)) fail();
    if (v.tensor().device().kind != DeviceKind::Cpu) throw Error("input '" + want.name + "': sequences and optionals hold host tensors");
    return;
  }
  if (want.containers[depth] == ValueContainer::Optional) {
    if (!v.is_none()) check_value_input(want, v, depth + 1);
    return;
  }
  if (want.containers[depth] == ValueContainer::Map) {  // of tensor values: the values' dtype
    if (!v.is_map() || (want.map_key != DType::Undefined && v.map_keys().dtype() != want.map_key) ||
        (want.dtype != DType::Undefined && v.element_dtype() != want.dtype))
      fail();
    return;
  }
  if (!v.is_sequence()) fail();
  for (const Value& e : v.elements()) check_value_input(want, e, depth + 1);
}

}  // namespace

std::vector<Tensor> Session::run(const std::vector<std::pair<std::string, Tensor>>& named,
                                 const RunOptions& run_options) {
  const std::vector<Tensor> ordered = in_graph_order(impl_->graph, named);
  const RunStop stop = stop_for(run_options);
  impl_->check_inputs(ordered);
  stop.check();  // before planning: a run past its deadline does no work at all
  std::vector<Tensor> outputs = make_outputs(ordered);
  impl_->run(ordered, outputs, run_options, stop);
  return outputs;
}

std::vector<Value> Session::run_values(const std::vector<std::pair<std::string, Value>>& named,
                                       const RunOptions& run_options) {
  const std::vector<Value> ordered = in_graph_order(impl_->graph, named);
  std::vector<Tensor> tensors(ordered.size());
  std::unordered_map<std::string, Value> others;
  for (size_t i = 0; i < ordered.size(); ++i) {
    const ValueInfo& want = impl_->graph.inputs[i];
    if (want.is_tensor()) {
      tensors[i] = ordered[i].tensor("input '" + want.name + "'");
      continue;
    }
    check_value_input(want, ordered[i]);
    others[want.name] = ordered[i];
  }
  const RunStop stop = stop_for(run_options);
  impl_->check_inputs(tensors);
  stop.check();
  std::vector<Tensor> outputs = make_outputs(tensors);
  std::vector<Value> values(outputs.size());
  impl_->run(tensors, outputs, run_options, stop, &others, &values);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (values[i].is_none() && !outputs[i].empty()) values[i] = outputs[i];
  return values;
}

void Session::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                  const RunOptions& run_options) {
  const RunStop stop = stop_for(run_options);
  impl_->check_inputs(inputs);
  stop.check();
  impl_->run(inputs, outputs, run_options, stop);
}

void Session::Impl::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                        const RunOptions& run_options, const RunStop& stop,
                        const std::unordered_map<std::string, Value>* value_inputs,
                        std::vector<Value>* value_outputs) {
  if (outputs.size() != graph.outputs.size())
    throw Error("the model has " + std::to_string(graph.outputs.size()) + " outputs, got " +
                std::to_string(outputs.size()) + " output tensors");
  const uint64_t evictions = plans->evictions();
  const std::shared_ptr<const Plan> planned = plan_for(inputs, outputs);
  const Plan& plan = *planned;
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

  if (run_options.cuda_stream && backends.front()->device().kind != DeviceKind::Cuda)
    throw Error("RunOptions::cuda_stream is set, but the session runs on " + options.device +
                ": a caller's stream needs a CUDA session");
  std::unique_ptr<RunContext> context = take_context();
  const ThreadCountScope threads(plan.num_threads);
  RunSettings settings;
  settings.num_threads = plan.num_threads;
  settings.profile = run_options.profile;
  settings.capture_graphs = options.cuda_graph;
  settings.stop = &stop;
  settings.external_stream = run_options.cuda_stream;
  // String tensor inputs are read by the eager tail, by name, as sequences are (planner.cc).
  std::unordered_map<std::string, Value> with_strings;
  for (size_t i = 0; i < graph.inputs.size() && i < inputs.size(); ++i) {
    if (!graph.inputs[i].is_tensor() || graph.inputs[i].dtype != DType::String) continue;
    if (with_strings.empty() && value_inputs) with_strings = *value_inputs;
    with_strings[graph.inputs[i].name] = inputs[i];
  }
  settings.value_inputs = with_strings.empty() ? value_inputs : &with_strings;
  settings.value_outputs = value_outputs;
  auto give_back = [&] { return_context(std::move(context), evictions); };
  try {
    context->run(plan, inputs, outputs, settings, planned);
  } catch (const RunStopped&) {
    // A stop comes between steps or iterations, after the executor left the streams
    // idle: the context's arenas and bindings stay valid, and the next run rewrites
    // whatever this one left half done. (After other errors the context is dropped.)
    give_back();
    throw;
  }
  give_back();
}

Tensor Session::to_device(const Tensor& host) const {
  if (host.device().kind != DeviceKind::Cpu)
    throw Error("to_device takes a tensor on the host; this one is on " + host.device().to_string());
  return impl_->backends.front()->copy_in(host, "a tensor copied to " + impl_->backends.front()->device().to_string());
}

Tensor Session::to_host(const Tensor& tensor) const {
  for (Backend* backend : impl_->backends)
    if (backend->device() == tensor.device()) return backend->copy_out(tensor);
  throw Error("to_host: the tensor is on " + tensor.device().to_string() + ", which this session does not use");
}

std::vector<DeviceMemory> Session::memory() const {
  std::vector<DeviceMemory> result;
  for (const Backend* b : impl_->backends) {
    const MemoryUse use = b->memory_use();
    result.push_back({b->device().to_string(), use.weight_bytes, use.in_use_bytes, use.peak_bytes, use.allocations});
  }
  return result;
}

namespace {

size_t process_resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

void add_bytes(MemoryReport& report, const std::string& device, const std::string& purpose, size_t bytes) {
  for (MemoryReport::Entry& e : report.entries)
    if (e.device == device && e.purpose == purpose) {
      e.bytes += bytes;
      return;
    }
  report.entries.push_back({device, purpose, bytes});
}

}  // namespace

MemoryReport Session::memory_report() const {
  MemoryReport report;
  // Not those given back once packed.
  add_bytes(report, "cpu", "weights", impl_->host_weight_bytes.load(std::memory_order_relaxed));
  add_bytes(report, "cpu", "packed weights", impl_->weights.packed().bytes());
  for (const Backend* b : impl_->backends) {
    const MemoryUse use = b->memory_use();
    const std::string device = b->device().to_string();
    if (b->device().kind != DeviceKind::Cpu) {
      add_bytes(report, device, "weights", use.weight_bytes);
      add_bytes(report, device, "packed weights", impl_->weights.packed().bytes(b->device()));
    }
    add_bytes(report, device, "arenas", use.in_use_bytes - std::min(use.in_use_bytes, use.weight_bytes));
  }
  for (const auto& plan : impl_->plans->plans()) {
    for (const auto& t : plan->folded) add_bytes(report, "cpu", "plan constants", t->nbytes());
    for (const auto& t : plan->device_constants) add_bytes(report, t->device().to_string(), "plan constants", t->nbytes());
    add_bytes(report, "cpu", "plan kernels", plan->kernel_bytes);
  }
  report.plans = impl_->plans->size();
  report.plans_evicted = impl_->plans->evictions();
  report.process_resident_bytes = process_resident_bytes();
  return report;
}

size_t MemoryReport::total() const {
  size_t sum = 0;
  for (const Entry& e : entries) sum += e.bytes;
  return sum;
}

std::string MemoryReport::to_string() const {
  auto mib = [](size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%10.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return std::string(buf);
  };
  std::string text;
  for (const Entry& e : entries) text += mib(e.bytes) + "  " + e.device + " " + e.purpose + "\n";
  text += mib(total()) + "  held by the session (" + std::to_string(plans) + " plans cached, " +
          std::to_string(plans_evicted) + " evicted)\n";
  text += mib(process_resident_bytes) + "  resident in the process (code, libraries and the allocator besides)\n";
  return text;
}

}  // namespace ember
