// libember_cuda.so's entry point: the table libember reads after dlopen.
#include "engine/src/cuda_module.h"

extern "C" const ember::CudaModule* ember_cuda_module() {
  static const ember::CudaModule module{
      ember::kCudaModuleInterface, EMBER_VERSION, &ember::cuda::list_gpus, &ember::cuda::make_backend};
  return &module;
}
