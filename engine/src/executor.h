// The Executor runs a Plan. A RunContext holds what one run in flight needs (the
// arenas, a stream per device, and the tensors bound into the arenas); the session
// keeps a pool of them so that runs from several threads proceed at once and
// steady-state runs allocate nothing.
#pragma once

#include "engine/src/backend.h"
#include "engine/src/plan.h"
#include "engine/src/plan_binding.h"

#include <ember/core/value.h>
#include <ember/profile.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

struct RunSettings {
  int num_threads = 1;
  Profile* profile = nullptr;  // per-node timings; device nodes timed with device events
  bool capture_graphs = false;  // replay runs of device steps as captured graphs (CUDA graphs)
  // Checked between steps (and by kernels with long loops): a stop raises RunStopped
  // and leaves the context ready for the next run.
  const RunStop* stop = nullptr;
  // The caller's device stream (RunOptions::cuda_stream): the run is ordered with it,
  // and the host does not wait for the device at the end when nothing needs it to.
  void* external_stream = nullptr;
  // Session::run_values: the graph inputs that are sequences or optionals, by name,
  // and one slot per graph output for the outputs that are (the tensor outputs go to
  // `outputs` as always). nullptr when the model passes only tensors.
  const std::unordered_map<std::string, Value>* value_inputs = nullptr;
  std::vector<Value>* value_outputs = nullptr;
};

class RunContext {
 public:
  explicit RunContext(std::span<Backend* const> backends);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // Runs `plan` on `inputs`, writing into `outputs` (shapes already right). The
  // context keeps `plan` bound to its arenas for the next run; `owner`, when given,
  // keeps it alive while it is bound (else the caller keeps it alive as long as the
  // context).
  void run(const Plan& plan, std::span<const Tensor> inputs, std::span<Tensor> outputs,
           const RunSettings& settings, const std::shared_ptr<const Plan>& owner = nullptr);

  // Drops the bindings of plans `keep` says no, and gives back arena memory no bound
  // plan needs (a plan cache evicted the plans that needed it).
  void release_unused(const std::function<bool(uint64_t plan_id)>& keep);
  // Arena bytes held on `device`.
  size_t arena_bytes(Device device) const;

 private:
  struct Arena {
    Backend* backend = nullptr;
    std::unique_ptr<DeviceStream> stream;
    void* data = nullptr;
    size_t bytes = 0;
  };
  // Consecutive device steps that can be recorded once and replayed with one launch.
  // Recorded again when the caller's device buffers they touch move.
  struct Segment {
    size_t begin = 0, end = 0;  // step indices [begin, end)
    DeviceStream* stream = nullptr;
    std::vector<int> caller_values;     // Input/Output values the steps touch
    std::vector<void*> caller_pointers;  // their addresses when recorded
    std::unique_ptr<CapturedSteps> graph;
    bool warmed_up = false;  // ran once outside a capture (libraries' lazy set-up happens there)
  };
  // The plan bound to this context's arenas, and its capturable segments; built once
  // per plan.
  struct Binding {
    std::shared_ptr<const Plan> owner;
    std::vector<std::pair<Device, size_t>> arena_bytes;  // the plan's
    std::unique_ptr<PlanBinding> bound;
    std::vector<Segment> segments;
  };

  Binding& bind(const Plan& plan, const std::shared_ptr<const Plan>& owner);
  void find_segments(const Plan& plan, Binding& b);
  void run_with_graphs(const Plan& plan, Binding& b, int num_threads, const RunStop* stop);
  void run_profiled(const Plan& plan, Binding& b, int num_threads, Profile& profile, int64_t origin_ns,
                    const RunStop* stop);
  // The eager tail, each node timed into `profile` when there is one.
  void run_eager(const Plan& plan, Binding& b, std::span<Tensor> outputs, const RunSettings& settings,
                 int64_t origin_ns);
  void* arena_base(Device device, size_t needed);
  Arena& arena_for(Device device);

  std::vector<Arena> arenas_;
  std::map<uint64_t, Binding> bindings_;  // by plan id
};

}  // namespace ember
