// A Backend is one device the planner can place nodes on: where its memory comes
// from, how bytes move to and from the host, and which registry entries are its own.
#pragma once

#include "ops/kernel.h"

#include <ember/tensor.h>

#include <memory>
#include <string>

namespace ember {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // Memory for arenas and uploaded weights; raise ember::Error naming `what` on failure.
  virtual void* allocate(size_t bytes, const std::string& what) = 0;
  virtual void release(void* p) = 0;
  // A kernel that copies input 0 (on `from`) to output 0 (on `to`); one side is this
  // backend's device, the other the host.
  virtual std::unique_ptr<Kernel> make_copy(Device from, Device to) = 0;
  // A copy of a host tensor in this device's memory, made once (weights).
  virtual Tensor upload(const Tensor& host) = 0;
  // Called once at the end of a run, before outputs are read (waits for streams).
  virtual void synchronize() {}
};

// The host. Always present, always last in the preference list.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace ember
