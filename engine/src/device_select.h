// Turning the user's device option into the backends a session plans over.
#pragma once

#include "engine/src/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace ember {

// "cpu" -> [cpu]; "cuda" / "cuda:N" -> [cuda:N, cpu] (CPU fallback for nodes the GPU
// lacks). Raises ember::Error with one clear sentence for a malformed option, a build
// without CUDA, no driver, no GPU, or an index out of range.
std::vector<std::unique_ptr<Backend>> select_backends(const std::string& device);

// Raises ember::Error unless `device` computes bf16 math: a CPU with AVX512_BF16
// (oneDNN would otherwise emulate it, slower than float32), or a CUDA GPU of compute
// capability 8.0 or later (bfloat16 tensor cores: mma.sync .bf16, cuBLASLt, cuDNN).
void check_bf16_supported(const Device& device);

// Sets the calling thread's intra-op thread count (OpenMP's, which oneDNN and ember's
// kernels share) for the scope's life, then gives the caller back the count it had:
// a run leaves the caller's thread state as it found it.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int num_threads);
  ~ThreadCountScope();
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int saved_ = 0;
};

// The intra-op thread count a session uses: `requested`, or for 0 every core this
// process may run on: its affinity mask (taskset, cpuset), capped by its cgroup's CPU
// quota (a container's --cpus). Raises on a negative count.
int resolve_thread_count(int requested);

// The cores a cgroup CPU quota allows, rounded up, read under `cgroup_root` (v2's
// cpu.max, else v1's cpu/cpu.cfs_quota_us and cpu.cfs_period_us); 0 when unlimited or
// unreadable.
int cgroup_cpu_limit(const std::string& cgroup_root = "/sys/fs/cgroup");

}  // namespace ember
