// ember::list_gpus — what GPUs this machine offers ember.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

struct GpuInfo {
  int index = 0;
  std::string name;
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

struct GpuReport {
  bool cuda_built = false;     // this build has the CUDA backend
  std::string problem;         // why no GPU can be used, empty when some can
  std::string driver_version, runtime_version, cudnn_version, cublas_version;
  std::vector<GpuInfo> gpus;
};

GpuReport list_gpus();

}  // namespace ember
