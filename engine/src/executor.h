// The Executor runs a Plan. A RunContext holds what one run in flight needs (the
// arenas and the tensors bound into them); the session keeps a pool of them so that
// runs from several threads proceed at once and steady-state runs allocate nothing.
#pragma once

#include "engine/src/backend.h"
#include "engine/src/plan.h"

#include <ember/profile.h>

#include <map>
#include <span>
#include <vector>

namespace ember {

class RunContext {
 public:
  explicit RunContext(std::span<Backend* const> backends);
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  // Runs `plan` on `inputs`, writing into `outputs` (shapes already right).
  void run(const Plan& plan, std::span<const Tensor> inputs, std::span<Tensor> outputs,
           int num_threads, Profile* profile);

 private:
  struct Arena {
    Backend* backend = nullptr;
    void* data = nullptr;
    size_t bytes = 0;
  };
  // The plan's values as tensors over this context's arenas, and each step's
  // argument arrays, built once per plan.
  struct Binding {
    std::vector<Tensor> tensors;
    std::vector<const Tensor*> inputs;
    std::vector<Tensor*> outputs;
    std::vector<size_t> input_begin, output_begin;  // per step, into the arrays above
    std::vector<void*> workspace;                    // per step
  };

  Binding& bind(const Plan& plan);
  void run_eager(const Plan& plan, Binding& b, std::span<Tensor> outputs, int num_threads);
  void* arena_base(Device device, size_t needed);

  std::vector<Arena> arenas_;
  std::map<const Plan*, Binding> bindings_;
};

}  // namespace ember
