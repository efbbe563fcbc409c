#include "ops/cuda/matmul_algorithm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

namespace ember::cuda {

namespace {

// Distinct matmul problems remembered; past it, new ones are timed each plan.
constexpr size_t kMaxCached = 4096;
// Timed runs per candidate, after one untimed.
constexpr int kRuns = 3;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, LtAlgorithm>& cache() {
  static std::map<std::string, LtAlgorithm> c;
  return c;
}

void remember(const std::string& key, const LtAlgorithm& algorithm) {
  std::lock_guard lock(cache_mutex());
  if (cache().size() < kMaxCached) cache().emplace(key, algorithm);
}

// A device allocation freed on scope exit (null when cudaMalloc failed).
struct Scratch {
  void* data = nullptr;
  explicit Scratch(size_t bytes) {
    if (bytes && cudaMalloc(&data, bytes) != cudaSuccess) {
      data = nullptr;
      cudaGetLastError();  // not sticky: clear it
    }
  }
  ~Scratch() {
    if (data) cudaFree(data);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Milliseconds for kRuns trials of `algorithm`, or infinity if a trial fails.
float time_trials(const LtAlgorithm& algorithm, void* workspace, cudaStream_t stream, const LtTrial& trial,
                  cudaEvent_t start, cudaEvent_t stop) {
  constexpr float kFailed = std::numeric_limits<float>::infinity();
  if (trial(algorithm, workspace) != CUBLAS_STATUS_SUCCESS) return kFailed;
  if (cudaEventRecord(start, stream) != cudaSuccess) return kFailed;
  for (int i = 0; i < kRuns; ++i)
    if (trial(algorithm, workspace) != CUBLAS_STATUS_SUCCESS) return kFailed;
  float ms = kFailed;
  if (cudaEventRecord(stop, stream) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
      cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
    return kFailed;
  return ms;
}

}  // namespace

bool lt_timing_enabled() {
  const char* timing = std::getenv("EMBER_CUBLASLT_TIMING");
  return timing && std::strcmp(timing, "1") == 0;
}

std::optional<LtAlgorithm> cached_lt_algorithm(const std::string& key) {
  std::lock_guard lock(cache_mutex());
  auto it = cache().find(key);
  if (it == cache().end()) return std::nullopt;
  return it->second;
}

LtAlgorithm fastest_lt_algorithm(const std::string& key, const std::vector<LtAlgorithm>& candidates,
                                 cudaStream_t stream, const LtTrial& trial) {
  if (candidates.size() < 2) return candidates.front();
  // Timing inside a capture would record the trials into the graph instead of running them.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess || capturing != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return candidates.front();
  }
  size_t workspace_bytes = 0;
  for (const LtAlgorithm& c : candidates) workspace_bytes = std::max(workspace_bytes, c.workspace);
  Scratch workspace(workspace_bytes);
  if (workspace_bytes && !workspace.data) return candidates.front();

  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    if (start) cudaEventDestroy(start);
    cudaGetLastError();
    return candidates.front();
  }
  const LtAlgorithm* best = &candidates.front();
  float best_ms = std::numeric_limits<float>::infinity();
  for (const LtAlgorithm& c : candidates) {
    const float ms = time_trials(c, workspace.data, stream, trial, start, stop);
    if (ms < best_ms) {
      best_ms = ms;
      best = &c;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGetLastError();  // a failed trial's launch error is not the plan's
  const bool timed = best_ms < std::numeric_limits<float>::infinity();
  if (timed) remember(key, *best);
  return *best;
}

}  // namespace ember::cuda
