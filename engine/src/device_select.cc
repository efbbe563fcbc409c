#include "engine/src/device_select.h"

#include <ember/devices.h>
#include <ember/core/error.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ember {

namespace {

int parse_cuda_index(const std::string& device) {
  if (device == "cuda") return 0;
  const std::string digits = device.substr(5);
  int index = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || index < 0)
    throw Error("device '" + device + "' is not valid: expected cpu, cuda or cuda:N");
  return index;
}

}  // namespace

std::vector<std::unique_ptr<Backend>> select_backends(const std::string& device) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (device != "cpu") {
    if (device.rfind("cuda", 0) != 0 || (device.size() > 4 && device[4] != ':'))
      throw Error("device '" + device + "' is not valid: expected cpu, cuda or cuda:N");
    const int index = parse_cuda_index(device);
    const GpuReport report = list_gpus();
    if (!report.problem.empty()) throw Error("device '" + device + "' is not available: " + report.problem);
    if (index >= static_cast<int>(report.gpus.size()))
      throw Error("device '" + device + "' is not available: this machine has " +
                  std::to_string(report.gpus.size()) + " CUDA device(s)");
    backends.push_back(make_cuda_backend(index));
  }
  backends.push_back(make_cpu_backend());
  return backends;
}

namespace {

// ceil(quota / period) for positive numbers; 0 otherwise ("max", -1, unreadable).
int cores_of_quota(double quota, double period) {
  if (!(quota > 0) || !(period > 0)) return 0;
  return static_cast<int>(std::ceil(quota / period));
}

}  // namespace

int cgroup_cpu_limit(const std::string& cgroup_root) {
  std::ifstream v2(cgroup_root + "/cpu.max");
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period) return quota == "max" ? 0 : cores_of_quota(std::atof(quota.c_str()), period);
  std::ifstream v1_quota(cgroup_root + "/cpu/cpu.cfs_quota_us"), v1_period(cgroup_root + "/cpu/cpu.cfs_period_us");
  double q = 0;
  if (v1_quota >> q && v1_period >> period) return cores_of_quota(q, period);
  return 0;
}

int resolve_thread_count(int requested) {
  if (requested < 0)
    throw Error("num_threads " + std::to_string(requested) + " is not valid: expected 0 (every core) or more");
  if (requested > 0) return requested;
  int cores = 1;
#ifdef _OPENMP
  cores = std::max(omp_get_num_procs(), 1);  // the affinity mask's count
#endif
  const int quota = cgroup_cpu_limit();
  return quota > 0 ? std::min(cores, quota) : cores;
}

void check_bf16_supported(const Device& device) {
  if (device.kind == DeviceKind::Cuda) {
    const GpuReport report = list_gpus();
    for (const GpuInfo& gpu : report.gpus) {
      if (gpu.index != device.index) continue;
      if (gpu.compute_major >= 8) return;
      throw Error("precision 'bf16' on " + device.to_string() + " needs compute capability 8.0 or later (" +
                  gpu.name + " has " + std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor) +
                  ", without bfloat16 tensor cores); use fp16");
    }
    throw Error("precision 'bf16': " + device.to_string() + " is not available" +
                (report.problem.empty() ? "" : ": " + report.problem));
  }
  if (device.kind != DeviceKind::Cpu)
    throw Error("precision 'bf16' does not run on " + device.to_string() + "; use fp16");
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16")) return;
#endif
  throw Error("precision 'bf16' needs a CPU with AVX512_BF16 (this one would emulate it, slower than fp32); use fp32");
}

ThreadCountScope::ThreadCountScope(int num_threads) {
#ifdef _OPENMP
  saved_ = omp_get_max_threads();
  if (num_threads > 0) omp_set_num_threads(num_threads);
#endif
}

ThreadCountScope::~ThreadCountScope() {
#ifdef _OPENMP
  omp_set_num_threads(saved_);
#endif
}

}  // namespace ember
