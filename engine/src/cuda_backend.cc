// The CUDA device as a Backend: device memory with its use counted, weights uploaded
// once, copies to and from the host (host inputs staged through pinned memory), and
// one stream per run context with events for profiling and CUDA-graph capture.
// Part of the CUDA module (libember_cuda.so, engine/src/cuda_module.h).
#include "engine/src/cuda_module.h"
#include "ops/cuda/cuda_common.h"

#include <ember/core/error.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember {

namespace cuda {

// Pinned host memory that host-to-device copies go through, so the upload of a run's
// inputs is a plain memcpy plus an asynchronous DMA. It grows only when a run stages
// more than any run before it; steady-state runs reuse it.
struct Staging {
  void* pinned = nullptr;
  size_t capacity = 0;
  size_t cursor = 0;
  size_t staged = 0;  // bytes staged since the run began, across growths
  // A run that ended without waiting for its stream (the caller's stream was joined
  // instead) may still be copying from this memory: the next stage waits first.
  bool maybe_in_flight = false;

  ~Staging() {
    if (pinned) cudaFreeHost(pinned);
  }

  void begin_run() { cursor = staged = 0; }

  void* take(size_t bytes, cudaStream_t stream) {
    const size_t aligned = (bytes + 255) / 256 * 256;
    if (maybe_in_flight) {
      check(cudaStreamSynchronize(stream), "waiting for the last run's uploads");
      maybe_in_flight = false;
    }
    staged += aligned;
    if (cursor + aligned > capacity) {
      // Copies still in flight read the old block: wait for them before replacing it.
      check(cudaStreamSynchronize(stream), "waiting for earlier uploads");
      // Room for everything this run staged so far, so the next run like it does not grow again.
      const size_t grown = std::max(2 * capacity, staged);
      if (pinned) cudaFreeHost(pinned);
      pinned = nullptr;
      capacity = 0;  // stays 0 if the allocation below fails: no later take() writes through null
      cursor = 0;
      check(cudaMallocHost(&pinned, grown), "allocating pinned staging memory");
      capacity = grown;
    }
    void* p = static_cast<char*>(pinned) + cursor;
    cursor += aligned;
    return p;
  }
};

}  // namespace cuda

namespace {

using cuda::check;

std::string format_mib(size_t bytes) {
  return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

enum class Direction { HostToDevice, DeviceToHost, DeviceToDevice };

class CudaCopy final : public Kernel {
 public:
  explicit CudaCopy(Direction direction) : direction_(direction) {}

  void run(const RunArgs& args) const override {
    const cuda::StreamContext& context = cuda::stream_context(args);
    const Tensor& src = *args.inputs[0];
    Tensor& dst = *args.outputs[0];
    const size_t bytes = src.nbytes();
    if (bytes == 0) return;
    switch (direction_) {
      case Direction::HostToDevice: {
        void* staged = context.staging->take(bytes, context.stream);
        std::memcpy(staged, src.data(), bytes);
        check(cudaMemcpyAsync(dst.data(), staged, bytes, cudaMemcpyHostToDevice, context.stream),
              "copying to the GPU");
        break;
      }
      case Direction::DeviceToHost:
        // The host reads the bytes right after this step, so wait for them here.
        check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToHost, context.stream),
              "copying from the GPU");
        check(cudaStreamSynchronize(context.stream), "waiting for the GPU");
        break;
      case Direction::DeviceToDevice:
        check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, context.stream),
              "copying on the GPU");
        break;
    }
  }

 private:
  Direction direction_;
};

class CudaGraph final : public CapturedSteps {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  void replay() override { check(cudaGraphLaunch(exec_, stream_), "replaying the CUDA graph"); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

class CudaStream final : public DeviceStream {
 public:
  explicit CudaStream(int device) : context_(cuda::create_stream_context(device)) {
    context_->staging = &staging_;
  }
  ~CudaStream() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (cudaEvent_t e : {caller_ready_, run_done_})
      if (e) cudaEventDestroy(e);
    cuda::destroy_stream_context(context_);
  }

  KernelStream* handle() override { return context_; }
  void begin_run() override {
    check(cudaSetDevice(context_->device), "selecting the CUDA device");
    staging_.begin_run();
  }
  void synchronize() override {
    const cudaError_t status = cudaStreamSynchronize(context_->stream);
    if (status != cudaSuccess)
      throw Error("the run failed on cuda:" + std::to_string(context_->device) + ": " +
                  cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                  "); run with CUDA_LAUNCH_BLOCKING=1 to name the node");
    staging_.maybe_in_flight = false;
  }

  void start_after(void* external) override {
    const auto caller = static_cast<cudaStream_t>(external);
    int device = -1;
    check(cudaStreamGetDevice(caller, &device), "reading the device of RunOptions::cuda_stream");
    if (device != context_->device)
      throw Error("RunOptions::cuda_stream is a stream of cuda:" + std::to_string(device) +
                  ", but the session runs on cuda:" + std::to_string(context_->device));
    check(cudaEventRecord(ordering_event(caller_ready_), caller), "recording an event on the caller's stream");
    check(cudaStreamWaitEvent(context_->stream, caller_ready_, 0), "waiting for the caller's stream");
  }
  void finish_before(void* external) override {
    check(cudaEventRecord(ordering_event(run_done_), context_->stream), "recording the end of the run");
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(external), run_done_, 0),
          "making the caller's stream wait for the run");
    staging_.maybe_in_flight = true;
  }

  bool has_device_clock() const override { return true; }
  void mark(size_t index) override {
    while (events_.size() <= index) {  // profiled runs only: events are made on first use
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "creating a CUDA event");
      events_.push_back(e);
    }
    check(cudaEventRecord(events_[index], context_->stream), "recording a CUDA event");
  }
  int64_t elapsed_ns(size_t from, size_t to) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_[from], events_[to]), "reading CUDA event times");
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

  bool can_capture() const override { return true; }
  void begin_capture() override {
    check(cudaStreamBeginCapture(context_->stream, cudaStreamCaptureModeThreadLocal),
          "starting a CUDA graph capture");
  }
  std::unique_ptr<CapturedSteps> end_capture() override {
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(context_->stream, &graph), "ending the CUDA graph capture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(status, "instantiating the CUDA graph");
    return std::make_unique<CudaGraph>(exec, context_->stream);
  }
  void abort_capture() override {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(context_->stream, &capturing) != cudaSuccess ||
        capturing == cudaStreamCaptureStatusNone)
      return;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(context_->stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    cudaGetLastError();
  }

 private:
  // Made on first use: only runs on a caller's stream need them.
  static cudaEvent_t ordering_event(cudaEvent_t& event) {
    if (!event) check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "creating a CUDA event");
    return event;
  }

  cuda::StreamContext* context_;
  cuda::Staging staging_;
  std::vector<cudaEvent_t> events_;                                // profiling marks
  cudaEvent_t caller_ready_ = nullptr, run_done_ = nullptr;  // ordering with a caller's stream
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index) : index_(index) {}
  ~CudaBackend() override { cuda::destroy_stream_context(plan_context_); }

  Device device() const override { return Device{DeviceKind::Cuda, index_}; }

  void* allocate(size_t bytes, const std::string& what) override {
    check(cudaSetDevice(index_), "selecting the CUDA device");
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, std::max<size_t>(bytes, 1));
    if (status != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      throw Error("out of memory on " + device().to_string() + ": " + what + " needs " +
                  std::to_string(bytes) + " bytes (" + format_mib(bytes) + "); " + format_mib(free_bytes) +
                  " of " + format_mib(total) + " are free (" + cudaGetErrorString(status) + ")");
    }
    std::lock_guard lock(mutex_);
    sizes_[p] = bytes;
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    ++allocations_;
    return p;
  }

  void release(void* p) override {
    if (!p) return;
    cudaSetDevice(index_);
    cudaFree(p);
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    in_use_ -= it->second;
    sizes_.erase(it);
  }

  std::unique_ptr<Kernel> make_copy(Device from, Device to) override {
    if (from.kind == DeviceKind::Cpu) return std::make_unique<CudaCopy>(Direction::HostToDevice);
    if (to.kind == DeviceKind::Cpu) return std::make_unique<CudaCopy>(Direction::DeviceToHost);
    return std::make_unique<CudaCopy>(Direction::DeviceToDevice);
  }

  Tensor upload(const Tensor& host, const std::string& name) override {
    Tensor copy = copy_in(host, "weight '" + name + "'");
    std::lock_guard lock(mutex_);
    weights_ += host.nbytes();
    return copy;
  }

  // Synchronous copies on the device's legacy stream, waited for whole (a plain
  // cudaMemcpy from pageable memory may return before its DMA lands); they may run on
  // any thread, beside runs, so they keep off the plan stream.
  Tensor copy_in(const Tensor& host, const std::string& what) override {
    const size_t bytes = host.nbytes();
    void* p = allocate(bytes, what);
    std::shared_ptr<void> memory(p, [this](void* q) { release(q); });
    if (bytes) {
      check(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), "copying a tensor to the GPU");
      check(cudaDeviceSynchronize(), "copying a tensor to the GPU");
    }
    return Tensor::adopt(host.dtype(), host.shape(), std::move(memory), device());
  }

  Tensor copy_out(const Tensor& on_device) override {
    Tensor host(on_device.dtype(), on_device.shape());
    if (host.nbytes()) {
      check(cudaSetDevice(index_), "selecting the CUDA device");
      check(cudaMemcpy(host.data(), on_device.data(), host.nbytes(), cudaMemcpyDeviceToHost),
            "copying a tensor from the GPU");
    }
    return host;
  }

  std::unique_ptr<DeviceStream> open_stream() override { return std::make_unique<CudaStream>(index_); }

  const KernelStream* plan_context() override { return plan_stream(); }
  void finish_planning() override {
    if (plan_context_) check(cudaStreamSynchronize(plan_context_->stream), "finishing plan-time GPU work");
  }

  MemoryUse memory_use() const override {
    std::lock_guard lock(mutex_);
    return {in_use_, peak_, weights_, allocations_};
  }

 private:
  cuda::StreamContext* plan_stream() {
    if (!plan_context_) plan_context_ = cuda::create_stream_context(index_);
    check(cudaSetDevice(index_), "selecting the CUDA device");
    return plan_context_;
  }

  int index_;
  cuda::StreamContext* plan_context_ = nullptr;
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  size_t in_use_ = 0, peak_ = 0, weights_ = 0, allocations_ = 0;
};

}  // namespace

std::unique_ptr<Backend> cuda::make_backend(int index) { return std::make_unique<CudaBackend>(index); }

}  // namespace ember
