#include "engine/src/backend.h"

#include <ember/error.h>

#include <cstdlib>
#include <cstring>

namespace ember {

namespace {

class HostCopy final : public Kernel {
 public:
  void run(const RunArgs& args) const override {
    const Tensor& src = *args.inputs[0];
    if (src.nbytes()) std::memcpy(args.outputs[0]->data(), src.data(), src.nbytes());
  }
};

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device{DeviceKind::Cpu, 0}; }
  void* allocate(size_t bytes, const std::string& what) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) throw Error("out of host memory: " + what + " needs " + std::to_string(bytes) + " bytes");
    return p;
  }
  void release(void* p) override { std::free(p); }
  std::unique_ptr<Kernel> make_copy(Device, Device) override { return std::make_unique<HostCopy>(); }
  Tensor upload(const Tensor& host) override { return host; }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ember
