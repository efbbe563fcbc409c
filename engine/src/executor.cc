#include "engine/src/executor.h"

#include <ember/core/error.h>

#include "ops/evaluate.h"
#include "ops/run_stop.h"
#include "ops/value_ops.h"

#include <algorithm>
#include <unordered_map>

namespace ember {

RunContext::RunContext(std::span<Backend* const> backends) {
  for (Backend* b : backends) arenas_.push_back({b, b->open_stream(), nullptr, 0});
}

RunContext::~RunContext() {
  // The last run may still be going on the device (it joined the caller's stream):
  // let it finish before its plans, graphs and arenas go.
  for (Arena& a : arenas_) {
    try {
      a.stream->synchronize();
    } catch (const Error&) {
      // nothing more can be done while tearing down
    }
  }
  bindings_.clear();  // captured graphs before the streams they refer to
  for (Arena& a : arenas_)
    if (a.data) a.backend->release(a.data);
}

RunContext::Arena& RunContext::arena_for(Device device) {
  for (Arena& a : arenas_)
    if (a.backend->device() == device) return a;
  throw Error("internal: no arena for " + device.to_string());
}

// Grows the arena when a plan needs more than any before it; growing drops the
// bindings, which point into the old memory. Steady state never comes here.
void* RunContext::arena_base(Device device, size_t needed) {
  Arena& a = arena_for(device);
  if (needed > a.bytes) {
    if (a.data) {
      a.stream->synchronize();
      a.backend->release(a.data);
    }
    a.data = nullptr;
    a.bytes = 0;
    bindings_.clear();
    a.data = a.backend->allocate(needed, "the " + device.to_string() + " arena");
    a.bytes = needed;
  }
  return a.data;
}

RunContext::Binding& RunContext::bind(const Plan& plan, const std::shared_ptr<const Plan>& owner) {
  for (const auto& [device, bytes] : plan.arena_bytes) arena_base(device, bytes);
  auto it = bindings_.find(plan.id);
  if (it != bindings_.end()) return it->second;

  Binding& b = bindings_[plan.id];
  b.owner = owner;
  b.arena_bytes = plan.arena_bytes;
  b.bound = std::make_unique<PlanBinding>(
      plan, [&](Device d) { return arena_base(d, 0); }, [&](Device d) { return arena_for(d).stream.get(); });
  find_segments(plan, b);
  return b;
}

// A step can be recorded when its stream can capture and it stays on its device: a
// copy to or from the host does host work (staging, waiting) that a replay would skip.
void RunContext::find_segments(const Plan& plan, Binding& b) {
  auto capturable = [&](size_t s) {
    const PlannedStep& step = plan.steps[s];
    if (!b.bound->stream(s)->can_capture()) return false;
    for (const auto* ids : {&step.inputs, &step.outputs})
      for (int id : *ids)
        if (id >= 0 && !(plan.values[id].device == step.device)) return false;
    return true;
  };
  for (size_t s = 0; s < plan.steps.size();) {
    if (!capturable(s)) {
      ++s;
      continue;
    }
    Segment segment;
    segment.begin = s;
    segment.stream = b.bound->stream(s);
    while (s < plan.steps.size() && capturable(s) && b.bound->stream(s) == segment.stream) {
      for (const auto* ids : {&plan.steps[s].inputs, &plan.steps[s].outputs})
        for (int id : *ids)
          if (id >= 0 && (plan.values[id].storage == Storage::Input || plan.values[id].storage == Storage::Output))
            segment.caller_values.push_back(id);
      ++s;
    }
    segment.end = s;
    if (segment.end - segment.begin >= 2) b.segments.push_back(std::move(segment));
  }
}

void RunContext::release_unused(const std::function<bool(uint64_t plan_id)>& keep) {
  // A dropped binding may hold the last reference to its plan, whose device constants
  // the last run may still be reading.
  for (Arena& a : arenas_) a.stream->synchronize();
  std::erase_if(bindings_, [&](const auto& entry) { return !keep(entry.first); });
  std::vector<size_t> needed(arenas_.size(), 0);
  for (const auto& [id, b] : bindings_)
    for (const auto& [device, bytes] : b.arena_bytes)
      for (size_t i = 0; i < arenas_.size(); ++i)
        if (arenas_[i].backend->device() == device) needed[i] = std::max(needed[i], bytes);
  bool shrunk = false;
  for (size_t i = 0; i < arenas_.size(); ++i) {
    Arena& a = arenas_[i];
    if (!a.data || a.bytes <= needed[i]) continue;
    a.backend->release(a.data);
    a.data = nullptr;
    a.bytes = 0;
    shrunk = true;
  }
  // Smaller memory means new addresses: every binding is made again on its next run.
  if (shrunk) bindings_.clear();
}

size_t RunContext::arena_bytes(Device device) const {
  for (const Arena& a : arenas_)
    if (a.backend->device() == device) return a.bytes;
  return 0;
}

void RunContext::run(const Plan& plan, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                     const RunSettings& settings, const std::shared_ptr<const Plan>& owner) {
  Binding& b = bind(plan, owner);
  b.bound->bind_io(inputs, outputs);

  const int64_t run_start = steady_now_ns();
  try {
    for (Arena& a : arenas_) a.stream->begin_run();
    if (settings.external_stream)
      for (Arena& a : arenas_) a.stream->start_after(settings.external_stream);
    if (settings.profile)
      run_profiled(plan, b, settings.num_threads, *settings.profile, run_start, settings.stop);
    else if (settings.capture_graphs && !b.segments.empty())
      run_with_graphs(plan, b, settings.num_threads, settings.stop);
    else
      b.bound->run_all(settings.num_threads, nullptr, 0, settings.stop);
    // With the caller's stream, its own next work waits for this run on the device, so
    // the host need not (outputs copied to the host were waited for by their copy).
    // The eager tail runs on the host and reads what the device made.
    if (settings.external_stream && plan.eager.empty())
      for (Arena& a : arenas_) a.stream->finish_before(settings.external_stream);
    else
      for (Arena& a : arenas_) a.stream->synchronize();
  } catch (...) {
    // Leave the streams idle (no capture open, no work queued) so the context can be
    // used again; a stopped run's context goes back to the pool.
    for (Arena& a : arenas_) {
      a.stream->abort_capture();
      try {
        a.stream->synchronize();
      } catch (const Error&) {
        // the first error is the one worth reporting
      }
    }
    throw;
  }
  if (!plan.eager.empty())
    run_eager(plan, b, outputs, settings, run_start);
  if (settings.profile) {
    settings.profile->runs += 1;
    settings.profile->total_ns += steady_now_ns() - run_start;
  }
}

// Segments run once as they are (a library's first call on a stream may allocate or
// synchronize, which a capture forbids), are recorded on their second use (and again
// when the caller's device buffers move), then replayed; the steps between them run
// one by one.
//
// A stop is checked between steps and between segments, never inside a capture: a
// replayed segment is one unit of work.
void RunContext::run_with_graphs(const Plan& plan, Binding& b, int num_threads, const RunStop* stop) {
  size_t next = 0;
  for (size_t s = 0; s < plan.steps.size();) {
    if (next == b.segments.size() || b.segments[next].begin != s) {
      b.bound->run_step(s++, num_threads, nullptr, 0, stop);
      if (stop) stop->node_done();
      continue;
    }
    Segment& segment = b.segments[next++];
    if (!segment.warmed_up) {
      for (; s < segment.end; ++s) {
        b.bound->run_step(s, num_threads, nullptr, 0, stop);
        if (stop) stop->node_done();
      }
      segment.warmed_up = true;
      continue;
    }
    bool moved = segment.caller_pointers.size() != segment.caller_values.size();
    for (size_t k = 0; !moved && k < segment.caller_values.size(); ++k)
      moved = segment.caller_pointers[k] != b.bound->tensor(segment.caller_values[k]).data();
    if (!segment.graph || moved) {
      segment.graph.reset();
      segment.stream->begin_capture();
      for (size_t k = segment.begin; k < segment.end; ++k) b.bound->run_step(k, num_threads);
      segment.graph = segment.stream->end_capture();
      segment.caller_pointers.clear();
      for (int id : segment.caller_values) segment.caller_pointers.push_back(b.bound->tensor(id).data());
    }
    segment.graph->replay();
    if (stop) stop->nodes_done += segment.end - segment.begin;
    check_stop(stop);
    s = segment.end;
  }
}

// Host steps are timed by the host clock; device steps by events recorded around
// them on their stream and read once the run is over, so no step waits for another.
void RunContext::run_profiled(const Plan& plan, Binding& b, int num_threads, Profile& profile, int64_t origin_ns,
                              const RunStop* stop) {
  struct Timing {
    DeviceStream* stream = nullptr;  // null: host-timed
    size_t before = 0, after = 0;
    int64_t start_ns = 0, duration_ns = 0;
  };
  std::vector<Timing> timings(plan.steps.size());
  std::map<DeviceStream*, size_t> marks;  // next mark per device stream; mark 0 = run start
  for (Arena& a : arenas_)
    if (a.stream->has_device_clock()) {
      a.stream->mark(0);
      marks[a.stream.get()] = 1;
    }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Timing& t = timings[s];
    DeviceStream* stream = b.bound->stream(s);
    if (stream->has_device_clock()) {
      t.stream = stream;
      t.before = marks[stream]++;
      t.after = marks[stream]++;
      stream->mark(t.before);
      b.bound->run_step(s, num_threads, &profile, origin_ns, stop);
      stream->mark(t.after);
      if (stop) stop->node_done();
      continue;
    }
    const int64_t start = steady_now_ns();
    b.bound->run_step(s, num_threads, &profile, origin_ns, stop);
    t.start_ns = start - origin_ns;
    t.duration_ns = steady_now_ns() - start;
    if (stop) stop->node_done();
  }
  for (Arena& a : arenas_) a.stream->synchronize();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Timing& t = timings[s];
    if (t.stream) {
      t.start_ns = t.stream->elapsed_ns(0, t.before);
      t.duration_ns = t.stream->elapsed_ns(t.before, t.after);
    }
    // A step that ran a sub-plan (a planned If) recorded that plan's steps instead.
    if (plan.steps[s].subplans.empty())
      profile.timings.push_back(node_timing(plan, plan.steps[s], t.start_ns, t.duration_ns));
  }
}

// The nodes after a data-dependent shape or the first sequence or optional, one by one
// on values (ops/value_ops.h); graph outputs they produce replace the caller's output
// tensors, or fill its value slots.
void RunContext::run_eager(const Plan& plan, Binding& b, std::span<Tensor> outputs, const RunSettings& settings,
                           int64_t origin_ns) {
  ValueScope scope;
  for (const auto& [name, id] : plan.eager_reads) scope.tensors[name] = b.bound->tensor(id);
  if (settings.value_inputs)
    for (const auto& [name, value] : *settings.value_inputs) scope.set(name, value);
  for (const auto& [node, opset] : plan.eager) {
    const int64_t start = steady_now_ns();
    run_node_on_values(*node, opset, scope, settings.num_threads, settings.stop);
    if (settings.profile) {
      NodeTiming t;
      t.node = node->name.empty() ? node->op_type : node->name;
      t.op_type = node->op_type + " (eager)";
      t.device = "cpu";
      Value holder;
      const Value* first = node->outputs.empty() ? nullptr : scope.find(node->outputs[0], holder);
      t.output_shape = first && first->is_tensor() ? shape_to_string(first->tensor().shape()) : "";
      t.start_ns = start - origin_ns;
      t.duration_ns = steady_now_ns() - start;
      settings.profile->timings.push_back(std::move(t));
    }
    if (settings.stop) settings.stop->node_done();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!plan.output_is_eager[i]) continue;
    Value holder;
    const Value* v = scope.find(plan.output_names[i], holder);
    if (!v) throw Error("output '" + plan.output_names[i] + "' is never made");
    if (settings.value_outputs) (*settings.value_outputs)[i] = *v;
    if (v->is_tensor()) outputs[i] = v->tensor();
    else if (!settings.value_outputs)
      throw Error("output '" + plan.output_names[i] + "' is a " + v->describe() +
                  ", not a tensor: run the model with Session::run_values");
  }
}

}  // namespace ember
