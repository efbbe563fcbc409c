// cuda_module() for a library that has the CUDA backend linked in rather than loaded
// (the CUDA emulator's, tests/cuda_emulator): the table is right here.
#include "engine/src/cuda_module.h"

namespace ember {

const CudaModule* cuda_module(std::string*) { return ember_cuda_module(); }

}  // namespace ember
