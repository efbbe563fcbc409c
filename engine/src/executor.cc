#include "engine/src/executor.h"

#include <ember/error.h>

#include "ops/evaluate.h"

#include <chrono>
#include <unordered_map>

namespace ember {

RunContext::RunContext(std::span<Backend* const> backends) {
  for (Backend* b : backends) arenas_.push_back({b, nullptr, 0});
}

RunContext::~RunContext() {
  for (Arena& a : arenas_)
    if (a.data) a.backend->release(a.data);
}

// Grows the arena when a plan needs more than any before it; growing drops the
// bindings, which point into the old memory. Steady state never comes here.
void* RunContext::arena_base(Device device, size_t needed) {
  for (Arena& a : arenas_) {
    if (!(a.backend->device() == device)) continue;
    if (needed > a.bytes) {
      if (a.data) a.backend->release(a.data);
      a.data = nullptr;
      a.bytes = 0;
      bindings_.clear();
      a.data = a.backend->allocate(needed, "the " + device.to_string() + " arena");
      a.bytes = needed;
    }
    return a.data;
  }
  throw Error("internal: no arena for " + device.to_string());
}

RunContext::Binding& RunContext::bind(const Plan& plan) {
  for (const auto& [device, bytes] : plan.arena_bytes) arena_base(device, bytes);
  auto it = bindings_.find(&plan);
  if (it != bindings_.end()) return it->second;

  Binding& b = bindings_[&plan];
  b.tensors.reserve(plan.values.size());
  for (const PlannedValue& v : plan.values) {
    void* data = nullptr;
    if (v.storage == Storage::Arena) data = static_cast<char*>(arena_base(v.device, 0)) + v.offset;
    if (v.storage == Storage::Constant) data = const_cast<void*>(v.constant->data());
    b.tensors.push_back(Tensor::view(v.type.dtype, v.type.shape, data, v.device));
  }
  for (const PlannedStep& step : plan.steps) {
    b.input_begin.push_back(b.inputs.size());
    for (int id : step.inputs) b.inputs.push_back(id >= 0 ? &b.tensors[id] : nullptr);
    b.output_begin.push_back(b.outputs.size());
    for (int id : step.outputs) b.outputs.push_back(id >= 0 ? &b.tensors[id] : nullptr);
    b.workspace.push_back(step.workspace_bytes
                              ? static_cast<char*>(arena_base(step.device, 0)) + step.workspace_offset
                              : nullptr);
  }
  b.input_begin.push_back(b.inputs.size());
  b.output_begin.push_back(b.outputs.size());
  return b;
}

void RunContext::run(const Plan& plan, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                     int num_threads, Profile* profile) {
  Binding& b = bind(plan);
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlannedValue& v = plan.values[id];
    if (v.storage == Storage::Input)
      b.tensors[id].reset_view(const_cast<void*>(inputs[v.io_index].data()));
    else if (v.storage == Storage::Output)
      b.tensors[id].reset_view(outputs[v.io_index].data());
  }

  using Clock = std::chrono::steady_clock;
  const auto run_start = Clock::now();
  std::span<const Tensor* const> all_inputs(b.inputs);
  std::span<Tensor* const> all_outputs(b.outputs);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlannedStep& step = plan.steps[s];
    RunArgs args{all_inputs.subspan(b.input_begin[s], b.input_begin[s + 1] - b.input_begin[s]),
                 all_outputs.subspan(b.output_begin[s], b.output_begin[s + 1] - b.output_begin[s]),
                 b.workspace[s], num_threads, nullptr};
    if (!profile) {
      step.kernel_impl->run(args);
      continue;
    }
    const auto start = Clock::now();
    step.kernel_impl->run(args);
    const auto end = Clock::now();
    NodeTiming t;
    t.node = step.node_name;
    t.op_type = step.op_type;
    t.device = step.device.to_string();
    t.output_shape = step.outputs.empty() || step.outputs[0] < 0
                         ? "" : shape_to_string(plan.values[step.outputs[0]].type.shape);
    t.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start - run_start).count();
    t.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
    profile->timings.push_back(std::move(t));
  }
  for (Arena& a : arenas_) a.backend->synchronize();
  if (!plan.eager.empty()) run_eager(plan, b, outputs, num_threads);
  if (profile) {
    profile->runs += 1;
    profile->total_ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - run_start).count();
  }
}

// The nodes after a data-dependent shape, one by one; graph outputs they produce
// replace the caller's output tensors.
void RunContext::run_eager(const Plan& plan, Binding& b, std::span<Tensor> outputs, int num_threads) {
  std::unordered_map<std::string, Tensor> env;
  for (const auto& [name, id] : plan.eager_reads) env[name] = b.tensors[id];
  for (const auto& [node, opset] : plan.eager) {
    std::vector<const Tensor*> inputs;
    for (const auto& name : node->inputs) {
      auto it = name.empty() ? env.end() : env.find(name);
      inputs.push_back(it == env.end() ? nullptr : &it->second);
    }
    std::vector<Tensor> results = evaluate_node(*node, opset, inputs, num_threads, &env);
    for (size_t k = 0; k < node->outputs.size(); ++k)
      if (!node->outputs[k].empty()) env[node->outputs[k]] = std::move(results[k]);
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (plan.output_is_eager[i]) outputs[i] = env.at(plan.output_names[i]);
}

}  // namespace ember
