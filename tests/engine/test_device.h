// A second device for tests: host memory behind its own arena and registry
// (DeviceKind::Test), so placement, copies, memory plans, device-side inputs and
// outputs, and graph capture can be checked on a machine with no GPU. It counts what
// crosses to and from it.
#pragma once

#include "engine/src/backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace ember::testing {

// A stream that can "capture" like a CUDA stream: while capturing, the test device's
// kernels append their work to `recording` instead of doing it; replay() runs it.
class TestStream final : public DeviceStream, public KernelStream {
 public:
  bool capturing = false;
  std::vector<std::function<void()>> recording;
  std::atomic<int>* captures = nullptr;
  std::atomic<int>* replays = nullptr;

  KernelStream* handle() override { return this; }
  bool can_capture() const override { return true; }
  void begin_capture() override {
    capturing = true;
    recording.clear();
    ++*captures;
  }
  std::unique_ptr<CapturedSteps> end_capture() override {
    capturing = false;
    return std::make_unique<Replay>(std::move(recording), replays);
  }
  void abort_capture() override { capturing = false; }

  // Runs `work` now (allocating nothing), or records it while capturing.
  template <class Work> static void launch(const RunArgs& args, Work work) {
    auto* stream = static_cast<TestStream*>(args.stream);
    if (stream && stream->capturing) stream->recording.emplace_back(std::move(work));
    else work();
  }

 private:
  struct Replay final : CapturedSteps {
    Replay(std::vector<std::function<void()>> work, std::atomic<int>* replays)
        : work(std::move(work)), replays(replays) {}
    void replay() override {
      ++*replays;
      for (auto& w : work) w();
    }
    std::vector<std::function<void()>> work;
    std::atomic<int>* replays;
  };
};

class TestBackend final : public Backend {
 public:
  std::atomic<int> allocations{0}, copies_run{0}, uploads{0}, captures{0}, replays{0};

  Device device() const override { return Device{DeviceKind::Test, 0}; }
  void* allocate(size_t bytes, const std::string&) override {
    ++allocations;
    return std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  }
  void release(void* p) override { std::free(p); }
  std::unique_ptr<Kernel> make_copy(Device from, Device to) override {
    return std::make_unique<Copy>(this, from == to);
  }
  Tensor upload(const Tensor& host, const std::string&) override {
    ++uploads;
    return host.clone();
  }
  Tensor copy_in(const Tensor& host, const std::string& what) override {
    std::shared_ptr<void> memory(allocate(host.nbytes(), what), [this](void* p) { release(p); });
    std::memcpy(memory.get(), host.data(), host.nbytes());
    return Tensor::adopt(host.dtype(), host.shape(), std::move(memory), device());
  }
  Tensor copy_out(const Tensor& on_device) override {
    Tensor host(on_device.dtype(), on_device.shape());
    std::memcpy(host.data(), on_device.data(), host.nbytes());
    return host;
  }
  std::unique_ptr<DeviceStream> open_stream() override {
    auto stream = std::make_unique<TestStream>();
    stream->captures = &captures;
    stream->replays = &replays;
    return stream;
  }

 private:
  struct Copy final : Kernel {
    Copy(TestBackend* owner, bool on_device) : owner(owner), on_device(on_device) {}
    void run(const RunArgs& args) const override {
      // Raw pointers, as a CUDA graph bakes them in when it is recorded.
      auto work = [this, from = args.inputs[0]->data(), to = args.outputs[0]->data(),
                   bytes = args.inputs[0]->nbytes()] {
        ++owner->copies_run;
        std::memcpy(to, from, bytes);
      };
      if (on_device) TestStream::launch(args, work);
      else work();
    }
    TestBackend* owner;
    bool on_device;
  };
};

}  // namespace ember::testing
