// A Backend is one device the planner can place nodes on: where its memory comes
// from, how bytes move to and from the host, and which registry entries are its own.
// A DeviceStream is one run context's queue of work on that device.
#pragma once

#include "ops/kernel.h"

#include <ember/core/tensor.h>

#include <cstddef>
#include <memory>
#include <string>

namespace ember {

// A recording of steps that replays them with one launch (a CUDA graph).
class CapturedSteps {
 public:
  virtual ~CapturedSteps() = default;
  virtual void replay() = 0;
};

class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  // What kernels on this device get as RunArgs::stream (nullptr on the host).
  virtual KernelStream* handle() { return nullptr; }
  // Called by the run's thread before its first step (makes the device current).
  virtual void begin_run() {}
  // Waits until every step queued in this run has finished; raises ember::Error if
  // one of them failed asynchronously.
  virtual void synchronize() {}
  // Joins a stream the caller owns (RunOptions::cuda_stream): start_after makes this
  // run's work wait for the work queued on `external` so far; finish_before makes the
  // work queued on `external` from now on wait for this run's.
  virtual void start_after(void* /*external*/) {}
  virtual void finish_before(void* /*external*/) {}

  // Device-side timing, so a profiled run never waits after each node: mark(i)
  // records point i on the stream, elapsed_ns(i, j) reads it after synchronize().
  virtual bool has_device_clock() const { return false; }
  virtual void mark(size_t) {}
  virtual int64_t elapsed_ns(size_t, size_t) { return 0; }

  // Graph capture: the steps run between begin_capture() and end_capture() are
  // recorded, not executed; replay() executes them.
  virtual bool can_capture() const { return false; }
  virtual void begin_capture() {}
  virtual std::unique_ptr<CapturedSteps> end_capture() { return nullptr; }
  virtual void abort_capture() {}
};

struct MemoryUse {
  size_t in_use_bytes = 0;  // allocated through the backend now (weights + arenas)
  size_t peak_bytes = 0;    // the most ever allocated at once
  size_t weight_bytes = 0;  // of which uploaded weights
  size_t allocations = 0;   // device allocations made so far (a steady state adds none)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // Memory for arenas; raises ember::Error naming `what` and the bytes on failure.
  virtual void* allocate(size_t bytes, const std::string& what) = 0;
  virtual void release(void* p) = 0;
  // A kernel that copies input 0 (on `from`) to output 0 (on `to`); one side is this
  // backend's device.
  virtual std::unique_ptr<Kernel> make_copy(Device from, Device to) = 0;
  // A copy of host tensor `name` in this device's memory, made once (weights).
  virtual Tensor upload(const Tensor& host, const std::string& name) = 0;
  // A copy of a host tensor in this device's memory, freed with its last Tensor (and
  // only while this backend lives); `what` names it in an out-of-memory error. Not
  // counted as a weight.
  virtual Tensor copy_in(const Tensor& host, const std::string& what) = 0;
  // A host copy of a tensor in this device's memory.
  virtual Tensor copy_out(const Tensor& on_device) = 0;
  // A new stream for one run context.
  virtual std::unique_ptr<DeviceStream> open_stream() { return std::make_unique<DeviceStream>(); }
  // What kernel factories get as KernelInit::device_context while a plan is built,
  // and the call that waits for the plan-time work queued there.
  virtual const KernelStream* plan_context() { return nullptr; }
  virtual void finish_planning() {}
  virtual MemoryUse memory_use() const { return {}; }
};

// The host. Always present, always last in the preference list.
std::unique_ptr<Backend> make_cpu_backend();

// CUDA device `index` (the caller has checked it exists), from the CUDA module
// (cuda_module.h). Raises ember::Error, saying why, when the module cannot be loaded.
std::unique_ptr<Backend> make_cuda_backend(int index);

}  // namespace ember
