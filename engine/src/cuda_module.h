// The CUDA backend lives in its own library, libember_cuda.so, which libember loads
// (dlopen) the first time something asks for a CUDA device: a CPU-only process never
// maps cudart, cuBLAS or cuDNN, and libember runs on machines without CUDA. This is
// the whole interface between the two: one extern "C" entry point returning a table.
//
// The module links against libember and uses its symbols (Tensor, Graph, the kernel
// registry): its kernels register themselves, on load, into libember's one registry.
// Both sides pass C++ types (GpuReport, Backend), so a module is only accepted from the
// same ember version and module interface; anything else is refused with a message.
#pragma once

#include "engine/src/backend.h"

#include <ember/devices.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ember {

// Changed whenever CudaModule or what it passes (Backend, Kernel, GpuReport, the
// registry) changes shape. Read first, at offset 0, before anything else of the table.
inline constexpr uint32_t kCudaModuleInterface = 1;

struct CudaModule {
  uint32_t interface_version;  // kCudaModuleInterface of the module's build
  const char* ember_version;   // the ember version the module was built with
  GpuReport (*list_gpus)();
  std::unique_ptr<Backend> (*make_backend)(int index);
};

// The module, loaded once on first call (libember: from beside libember, or from
// $EMBER_CUDA_MODULE; the CUDA emulator's library: linked in). nullptr when it cannot
// be used, with *problem set to one sentence saying what was not found and what to do.
const CudaModule* cuda_module(std::string* problem);

// The module's side (engine/src/cuda_devices.cc, cuda_backend.cc).
namespace cuda {
GpuReport list_gpus();
std::unique_ptr<Backend> make_backend(int index);
}  // namespace cuda

}  // namespace ember

// The module's one exported entry point (engine/src/cuda_module.cc).
extern "C" const ember::CudaModule* ember_cuda_module();
inline constexpr const char* kCudaModuleEntry = "ember_cuda_module";
