// The CUDA runtime API, as far as ember calls it, on the CPU: one emulated device whose
// memory is host memory, streams that run their work at once (so every stream is
// always idle), events that read the host clock, and stream capture into graphs that
// replay the recorded work. The declarations are the toolkit's own (cuda_runtime_api.h),
// so the engine compiles unchanged against this.
//
// It checks what a GPU would reject or get wrong: launch configurations past the
// hardware limits, kernel pointer arguments that are not device memory, writes past
// the end of a device allocation (guard bytes checked after every kernel), and calls
// that are illegal while a stream is being captured.
#include "tests/cuda_emulator/block_runner.h"
#include "tests/cuda_emulator/emulator_control.h"

#include <chrono>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

struct CUstream_st {
  size_t waited_for = 0;  // work items done when the last event this stream waited on was recorded
  bool capturing = false;
  bool capture_invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  cudaGraph_t graph = nullptr;
};
struct CUgraph_st {
  std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> work;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
  size_t work_done = 0;              // work items the device had done when it was recorded
  cudaStream_t stream = nullptr;     // where it was last recorded
};

namespace ember::emu {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xa5;
constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee
constexpr size_t kDefaultCapacity = size_t{16} << 30;
constexpr size_t kDynamicSharedLimit = 48 * 1024;  // without cudaFuncSetAttribute

struct Allocation {
  size_t bytes = 0;
  bool pinned = false;  // cudaMallocHost: host memory the device may also read
};

struct Device {
  std::mutex mutex;
  std::map<const char*, Allocation> allocations;  // by start address
  size_t in_use = 0, capacity = kDefaultCapacity;
  int compute_major = 9, compute_minor = 0;  // as the H100 the code targets
  int global_captures = 0;  // streams capturing in cudaStreamCaptureModeGlobal
  // Work runs when it is queued, so stream order always holds here; what tests can
  // check is that the waits a real device needs were asked for.
  std::atomic<size_t> work_done{0};                // kernels, copies and fills run
  std::map<cudaStream_t, size_t> waits_on_stream;  // waits on events recorded there
};

Device& device() {
  static Device d;
  return d;
}

// CUDA's last error is per host thread; so is the emulator's explanation of it.
thread_local cudaError_t last_error = cudaSuccess;
thread_local std::string last_detail;
thread_local int thread_captures = 0;  // captures this thread began in Global or ThreadLocal mode

cudaError_t fail(cudaError_t error, const std::string& detail) {
  last_error = error;
  last_detail = "ember CUDA emulator: " + detail;
  std::fprintf(stderr, "%s\n", last_detail.c_str());
  return error;
}

// The error a launch left behind, reported by the next call that synchronizes.
cudaError_t take_error() {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

// Work that a capture would record. Returns true when it was recorded (so must not run now).
bool record_if_capturing(cudaStream_t stream, std::function<void()> work) {
  if (is_legacy(stream) || !stream->capturing) return false;
  stream->graph->work.push_back(std::move(work));
  return true;
}

// A call that synchronizes with the device is illegal while this thread (or any thread,
// in global mode) captures; CUDA invalidates the capture and returns an error.
cudaError_t check_not_capturing(const char* call) {
  std::lock_guard lock(device().mutex);
  if (thread_captures == 0 && device().global_captures == 0) return cudaSuccess;
  return fail(cudaErrorStreamCaptureUnsupported,
              std::string(call) + " was called while a stream is being captured into a CUDA graph");
}

const Allocation* find_allocation(const void* p, const char** start) {
  auto& allocations = device().allocations;
  const char* c = static_cast<const char*>(p);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin()) return nullptr;
  --it;
  if (c >= it->first + it->second.bytes + (it->second.pinned ? 0 : kGuardBytes)) return nullptr;
  if (start) *start = it->first;
  return &it->second;
}

std::string check_guards() {
  std::lock_guard lock(device().mutex);
  for (const auto& [start, a] : device().allocations) {
    if (a.pinned) continue;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (static_cast<unsigned char>(start[a.bytes + i]) != kGuardByte) {
        return "a write " + std::to_string(i) + " byte(s) past the end of a " + std::to_string(a.bytes) +
               "-byte device allocation";
      }
    }
  }
  return "";
}

std::string check_config(const Launch& l) {
  const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  if (threads == 0 || threads > 1024 || l.block.z > 64) return "a block of " + std::to_string(threads) + " threads";
  if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0) return "an empty grid";
  if (l.grid.x > 2147483647u || l.grid.y > 65535 || l.grid.z > 65535) {
    return "a grid of (" + std::to_string(l.grid.x) + "," + std::to_string(l.grid.y) + "," + std::to_string(l.grid.z) +
           ") blocks (y and z are limited to 65535)";
  }
  if (l.shared_bytes > kDynamicSharedLimit) {
    return std::to_string(l.shared_bytes) + " bytes of dynamic shared memory (48 KiB without cudaFuncSetAttribute)";
  }
  return "";
}

void run_kernel(const Launch& launch, const std::function<void()>& thread) {
  ++device().work_done;
  std::string error = run_grid(launch, thread);
  if (error.empty()) error = check_guards();
  if (!error.empty()) fail(cudaErrorLaunchFailure, std::string("kernel ") + launch.kernel + ": " + error);
}

char* allocate(size_t bytes, bool pinned) {
  const size_t total = (bytes + (pinned ? 0 : kGuardBytes) + kAlignment - 1) / kAlignment * kAlignment;
  char* p = static_cast<char*>(std::aligned_alloc(kAlignment, total ? total : kAlignment));
  if (!p) return nullptr;
  if (!pinned) std::fill(p + bytes, p + bytes + kGuardBytes, kGuardByte);
  return p;
}

}  // namespace

void submit(const Launch& launch, const void* const* pointers, size_t num_pointers, std::function<void()> thread) {
  if (const std::string bad = check_config(launch); !bad.empty()) {
    fail(cudaErrorInvalidConfiguration, std::string("kernel ") + launch.kernel + " launched with " + bad);
    return;
  }
  {
    std::lock_guard lock(device().mutex);
    for (size_t i = 0; i < num_pointers; ++i) {
      if (pointers[i] && !find_allocation(pointers[i], nullptr)) {
        fail(cudaErrorIllegalAddress, std::string("kernel ") + launch.kernel + ": pointer argument " +
                                          std::to_string(i) + " is not device memory");
        return;
      }
    }
  }
  if (record_if_capturing(launch.stream, [launch, thread] { run_kernel(launch, thread); })) return;
  run_kernel(launch, thread);
}

size_t work_done() { return device().work_done; }

size_t work_waited_for(cudaStream_t stream) { return is_legacy(stream) ? 0 : stream->waited_for; }

size_t waits_on(cudaStream_t stream) {
  std::lock_guard lock(device().mutex);
  auto it = device().waits_on_stream.find(stream);
  return it == device().waits_on_stream.end() ? 0 : it->second;
}

void set_memory_capacity(size_t bytes) {
  std::lock_guard lock(device().mutex);
  device().capacity = bytes ? bytes : kDefaultCapacity;
}

void set_compute_capability(int major, int minor) {
  std::lock_guard lock(device().mutex);
  device().compute_major = major ? major : 9;
  device().compute_minor = major ? minor : 0;
}

}  // namespace ember::emu

using namespace ember::emu;

// ---- device and versions

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int index) {
  if (index != 0) return fail(cudaErrorInvalidDevice, "device " + std::to_string(index) + " (there is only device 0)");
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int index) {
  if (index != 0) return fail(cudaErrorInvalidDevice, "device " + std::to_string(index) + " (there is only device 0)");
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "ember CUDA emulator (CPU)");
  prop->totalGlobalMem = device().capacity;
  prop->major = device().compute_major;  // plans are made as for the H100 the code targets
  prop->minor = device().compute_minor;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->sharedMemPerBlock = kDynamicSharedLimit;
  prop->sharedMemPerBlockOptin = 227 * 1024;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  std::lock_guard lock(device().mutex);
  *total = device().capacity;
  *free_bytes = device().capacity - std::min(device().capacity, device().in_use);
  return cudaSuccess;
}

// ---- errors

cudaError_t cudaGetLastError() { return take_error(); }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}

// The emulator's own explanation of the last error it raised on this thread.
const char* cudaGetErrorString(cudaError_t error) {
  if (error == cudaSuccess) return "no error";
  return last_detail.empty() ? cudaGetErrorName(error) : last_detail.c_str();
}

// ---- memory

cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (cudaError_t e = check_not_capturing("cudaMalloc"); e != cudaSuccess) return e;
  std::lock_guard lock(device().mutex);
  Device& d = device();
  if (d.in_use + bytes > d.capacity) {
    return fail(cudaErrorMemoryAllocation, "out of device memory: " + std::to_string(bytes) + " bytes asked, " +
                                               std::to_string(d.capacity - d.in_use) + " free");
  }
  char* block = allocate(bytes, false);
  if (!block) return fail(cudaErrorMemoryAllocation, "host memory for " + std::to_string(bytes) + " bytes");
  d.allocations[block] = Allocation{bytes, false};
  d.in_use += bytes;
  *p = block;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  std::lock_guard lock(device().mutex);
  char* block = allocate(bytes, true);
  if (!block) return fail(cudaErrorMemoryAllocation, "pinned host memory for " + std::to_string(bytes) + " bytes");
  device().allocations[block] = Allocation{bytes, true};
  *p = block;
  return cudaSuccess;
}

namespace {
cudaError_t release(void* p, bool pinned, const char* call) {
  if (!p) return cudaSuccess;
  const std::string guards = check_guards();
  std::lock_guard lock(device().mutex);
  auto it = device().allocations.find(static_cast<const char*>(p));
  if (it == device().allocations.end() || it->second.pinned != pinned) {
    return fail(cudaErrorInvalidValue, std::string(call) + " of a pointer it did not allocate");
  }
  if (!pinned) device().in_use -= it->second.bytes;
  device().allocations.erase(it);
  std::free(p);
  if (!guards.empty()) return fail(cudaErrorIllegalAddress, guards);
  return cudaSuccess;
}

// Both ends of a copy must lie inside memory CUDA knows or be plain host memory; a
// device range must fit in its allocation.
cudaError_t check_range(const void* p, size_t bytes, const char* what) {
  std::lock_guard lock(device().mutex);
  const char* start = nullptr;
  const Allocation* a = find_allocation(p, &start);
  if (!a) return cudaSuccess;  // host memory: the caller's business
  if (static_cast<const char*>(p) + bytes > start + a->bytes) {
    return fail(cudaErrorInvalidValue, std::string(what) + " of " + std::to_string(bytes) +
                                           " bytes runs past the end of a " + std::to_string(a->bytes) +
                                           "-byte allocation");
  }
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (cudaError_t e = check_range(dst, bytes, "a copy's destination"); e != cudaSuccess) return e;
  if (cudaError_t e = check_range(src, bytes, "a copy's source"); e != cudaSuccess) return e;
  auto work = [dst, src, bytes] {
    std::memmove(dst, src, bytes);
    ++device().work_done;
  };
  if (!record_if_capturing(stream, work)) work();
  return cudaSuccess;
}

cudaError_t fill(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (cudaError_t e = check_range(dst, bytes, "a memset"); e != cudaSuccess) return e;
  auto work = [dst, value, bytes] {
    std::memset(dst, value, bytes);
    ++device().work_done;
  };
  if (!record_if_capturing(stream, work)) work();
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaFree(void* p) { return release(p, false, "cudaFree"); }
cudaError_t cudaFreeHost(void* p) { return release(p, true, "cudaFreeHost"); }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (cudaError_t e = check_not_capturing("cudaMemcpy"); e != cudaSuccess) return e;
  if (cudaError_t e = take_error(); e != cudaSuccess) return e;
  return copy(dst, src, bytes, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  return copy(dst, src, bytes, stream);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (cudaError_t e = check_not_capturing("cudaMemset"); e != cudaSuccess) return e;
  return fill(dst, value, bytes, nullptr);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return fill(dst, value, bytes, stream);
}

// ---- streams and synchronization (work already ran; these report what went wrong)

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new CUstream_st;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!is_legacy(stream)) delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!is_legacy(stream) && stream->capturing) {
    stream->capture_invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize on a stream being captured");
  }
  return take_error();
}

cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t e = check_not_capturing("cudaDeviceSynchronize"); e != cudaSuccess) return e;
  return take_error();
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (is_legacy(stream)) return fail(cudaErrorStreamCaptureUnsupported, "capturing the legacy default stream");
  if (stream->capturing) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture on a stream already capturing");
  stream->capturing = true;
  stream->capture_invalidated = false;
  stream->mode = mode;
  stream->graph = new CUgraph_st;
  std::lock_guard lock(device().mutex);
  if (mode == cudaStreamCaptureModeGlobal) ++device().global_captures;
  if (mode != cudaStreamCaptureModeRelaxed) ++thread_captures;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (is_legacy(stream) || !stream->capturing) {
    return fail(cudaErrorIllegalState, "cudaStreamEndCapture on a stream that is not capturing");
  }
  stream->capturing = false;
  {
    std::lock_guard lock(device().mutex);
    if (stream->mode == cudaStreamCaptureModeGlobal) --device().global_captures;
    if (stream->mode != cudaStreamCaptureModeRelaxed) --thread_captures;
  }
  if (stream->capture_invalidated) {
    delete stream->graph;
    *graph = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = stream->graph;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!event->recorded) return cudaSuccess;  // as CUDA: waiting on an unrecorded event is a no-op
  if (!is_legacy(stream)) stream->waited_for = std::max(stream->waited_for, event->work_done);
  std::lock_guard lock(device().mutex);
  ++device().waits_on_stream[event->stream];
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t, int* device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  *status = !is_legacy(stream) && stream->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->work};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  for (const auto& work : exec->work) {
    if (!record_if_capturing(stream, work)) work();
  }
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

// ---- events

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return cudaEventCreate(event); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto work = [event, stream] {
    event->at = std::chrono::steady_clock::now();
    event->recorded = true;
    event->work_done = device().work_done;
    event->stream = stream;
  };
  if (!record_if_capturing(stream, work)) work();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->recorded || !end->recorded) return fail(cudaErrorInvalidValue, "an event that was never recorded");
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}
