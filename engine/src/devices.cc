// list_gpus() and the CUDA backend, both through the CUDA module (cuda_module.h): the
// first call loads it; without it, the report's problem (or the error) says why.
#include <ember/devices.h>
#include <ember/core/error.h>

#include "engine/src/cuda_module.h"

namespace ember {

GpuReport list_gpus() {
  std::string problem;
  const CudaModule* module = cuda_module(&problem);
  if (!module) {
    GpuReport report;
    report.problem = problem;
    return report;
  }
  return module->list_gpus();
}

std::unique_ptr<Backend> make_cuda_backend(int index) {
  std::string problem;
  const CudaModule* module = cuda_module(&problem);
  if (!module) throw Error(problem);
  return module->make_backend(index);
}

}  // namespace ember
