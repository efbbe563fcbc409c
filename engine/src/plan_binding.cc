#include "engine/src/plan_binding.h"

#include <ember/core/error.h>

#include <chrono>

namespace ember {

PlanBinding::PlanBinding(const Plan& plan, const std::function<void*(Device)>& arena_base,
                         const std::function<DeviceStream*(Device)>& stream)
    : plan_(plan) {
  tensors_.reserve(plan.values.size());
  for (const PlannedValue& v : plan.values) {
    void* data = nullptr;
    if (v.storage == Storage::Arena) data = static_cast<char*>(arena_base(v.device)) + v.offset;
    if (v.storage == Storage::Constant) data = const_cast<void*>(v.constant->data());
    tensors_.push_back(Tensor::view(v.type.dtype, v.type.shape, data, v.device));
    if (v.storage == Storage::Input || v.storage == Storage::Output) io_values_.push_back(static_cast<int>(tensors_.size()) - 1);
  }
  for (const PlannedStep& step : plan.steps) {
    input_begin_.push_back(inputs_.size());
    for (int id : step.inputs) inputs_.push_back(id >= 0 ? &tensors_[id] : nullptr);
    output_begin_.push_back(outputs_.size());
    for (int id : step.outputs) outputs_.push_back(id >= 0 ? &tensors_[id] : nullptr);
    workspace_.push_back(step.workspace_bytes ? static_cast<char*>(arena_base(step.device)) + step.workspace_offset
                                              : nullptr);
    stream_.push_back(stream(step.device));
    state_.push_back(step.kernel_impl->make_state());
  }
  input_begin_.push_back(inputs_.size());
  output_begin_.push_back(outputs_.size());
}

std::unique_ptr<PlanBinding> PlanBinding::on_host(const Plan& plan, void* arena) {
  static DeviceStream host_stream;  // the host's stream does nothing
  return std::make_unique<PlanBinding>(plan, [arena](Device) { return arena; }, [](Device) { return &host_stream; });
}

template <class InputData, class OutputData>
void PlanBinding::point_io(const InputData& input_data, const OutputData& output_data) {
  for (int id : io_values_) {
    const PlannedValue& v = plan_.values[id];
    tensors_[id].reset_view(v.storage == Storage::Input ? const_cast<void*>(input_data(v.io_index))
                                                        : output_data(v.io_index));
  }
}

void PlanBinding::bind_io(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) {
  point_io([&](int i) { return inputs[i]->data(); }, [&](int i) { return outputs[i]->data(); });
}

void PlanBinding::bind_io(std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  point_io([&](int i) { return inputs[i].data(); }, [&](int i) { return outputs[i].data(); });
}

NodeTiming node_timing(const Plan& plan, const PlannedStep& step, int64_t start_ns, int64_t duration_ns) {
  NodeTiming t;
  t.node = step.node_name;
  t.op_type = step.op_type;
  t.device = step.device.to_string();
  t.output_shape = step.outputs.empty() || step.outputs[0] < 0 ? "" : shape_to_string(plan.values[step.outputs[0]].type.shape);
  t.start_ns = start_ns;
  t.duration_ns = duration_ns;
  return t;
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void PlanBinding::run_step(size_t s, int num_threads, Profile* profile, int64_t origin_ns, const RunStop* stop) {
  const PlannedStep& step = plan_.steps[s];
  std::span<const Tensor* const> all_inputs(inputs_);
  std::span<Tensor* const> all_outputs(outputs_);
  RunArgs args{all_inputs.subspan(input_begin_[s], input_begin_[s + 1] - input_begin_[s]),
               all_outputs.subspan(output_begin_[s], output_begin_[s + 1] - output_begin_[s]),
               workspace_[s], num_threads, stream_[s]->handle()};
  args.state = state_[s].get();
  args.profile = profile;
  args.profile_origin_ns = origin_ns;
  args.stop = stop;
  try {
    step.kernel_impl->run(args);
  } catch (const RunStopped&) {
    throw;  // its message says it all, and callers catch it by type
  } catch (const Error& e) {
    throw Error(step.node_label + " on " + step.device.to_string() + ": " + e.what());
  }
}

void PlanBinding::run_all(int num_threads, Profile* profile, int64_t origin_ns, const RunStop* stop) {
  if (!profile) {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      run_step(s, num_threads, nullptr, 0, stop);
      if (stop) stop->node_done();
    }
    return;
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const int64_t start = steady_now_ns();
    run_step(s, num_threads, profile, origin_ns, stop);
    const PlannedStep& step = plan_.steps[s];
    if (step.subplans.empty())
      profile->timings.push_back(node_timing(plan_, step, start - origin_ns, steady_now_ns() - start));
    if (stop) stop->node_done();
  }
}

}  // namespace ember
