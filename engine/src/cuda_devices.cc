// The CUDA module's list_gpus(): the driver, runtime and library versions, and each GPU.
#include "engine/src/cuda_module.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

namespace ember {

namespace {

std::string version_string(int v) {  // CUDA's 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

GpuReport cuda::list_gpus() {
  GpuReport report;
  report.cuda_built = true;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  report.runtime_version = version_string(runtime);
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
    report.problem = "no NVIDIA driver is installed (CUDA runtime " + report.runtime_version + ")";
    return report;
  }
  report.driver_version = version_string(driver);
  const size_t cudnn = cudnnGetVersion();
  report.cudnn_version = std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) +
                         "." + std::to_string(cudnn % 100);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    report.problem = std::string("no CUDA device is available (") +
                     (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) + ")";
    cudaGetLastError();
    return report;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    GpuInfo info;
    info.index = i;
    info.name = prop.name;
    info.total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    size_t free_bytes = 0, total = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total) == cudaSuccess)
      info.free_bytes = static_cast<int64_t>(free_bytes);
    report.gpus.push_back(info);
  }
  int cublas = 0;
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) {
    cublasGetVersion(handle, &cublas);
    cublasDestroy(handle);
    report.cublas_version = std::to_string(cublas / 10000) + "." + std::to_string((cublas % 10000) / 100) +
                            "." + std::to_string(cublas % 100);
  }
  return report;
}

}  // namespace ember
