#include "engine/src/backend.h"

#include "core/src/host_memory.h"

#include <ember/core/error.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

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
    void* p = allocate_host_block(bytes);
    if (!p)
      throw Error("out of host memory: " + what + " needs " + std::to_string(bytes) + " bytes, and " +
                  std::to_string(host_memory_available()) + " are available");
    std::lock_guard lock(mutex_);
    sizes_[p] = bytes;
    use_.in_use_bytes += bytes;
    use_.peak_bytes = std::max(use_.peak_bytes, use_.in_use_bytes);
    ++use_.allocations;
    return p;
  }
  void release(void* p) override {
    size_t bytes = 0;
    {
      std::lock_guard lock(mutex_);
      auto it = sizes_.find(p);
      if (it == sizes_.end()) return;
      bytes = it->second;
      use_.in_use_bytes -= bytes;
      sizes_.erase(it);
    }
    release_host_block(p, bytes);
  }
  // Arenas only: host weights stay where the loader put them.
  MemoryUse memory_use() const override {
    std::lock_guard lock(mutex_);
    return use_;
  }
  std::unique_ptr<Kernel> make_copy(Device, Device) override { return std::make_unique<HostCopy>(); }
  Tensor upload(const Tensor& host, const std::string&) override { return host; }
  Tensor copy_in(const Tensor& host, const std::string&) override { return host.clone(); }
  Tensor copy_out(const Tensor& on_host) override { return on_host.clone(); }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  MemoryUse use_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ember
