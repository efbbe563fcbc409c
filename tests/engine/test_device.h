// A second device for tests: host memory behind its own arena and registry
// (DeviceKind::Test), so placement, copies and memory plans can be checked on a
// machine with no GPU. It counts what crosses to and from it.
#pragma once

#include "engine/src/backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ember::testing {

class TestBackend final : public Backend {
 public:
  std::atomic<int> allocations{0}, copies_run{0}, uploads{0};

  Device device() const override { return Device{DeviceKind::Test, 0}; }
  void* allocate(size_t bytes, const std::string&) override {
    ++allocations;
    return std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  }
  void release(void* p) override { std::free(p); }
  std::unique_ptr<Kernel> make_copy(Device, Device) override { return std::make_unique<Copy>(this); }
  Tensor upload(const Tensor& host) override {
    ++uploads;
    return host.clone();
  }

 private:
  struct Copy final : Kernel {
    explicit Copy(TestBackend* owner) : owner(owner) {}
    void run(const RunArgs& args) const override {
      ++owner->copies_run;
      std::memcpy(args.outputs[0]->data(), args.inputs[0]->data(), args.inputs[0]->nbytes());
    }
    TestBackend* owner;
  };
};

}  // namespace ember::testing
