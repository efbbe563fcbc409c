// Stand-ins for libember_cuda.so that libember must refuse (tests/engine/test_cuda_module.cc):
// built once with FAKE_INTERFACE 999 (a module from a build whose interface changed) and
// once with the current interface but another ember version. Neither table's functions
// may ever be called.
#include "engine/src/cuda_module.h"

extern "C" const ember::CudaModule* ember_cuda_module() {
  static const ember::CudaModule module{FAKE_INTERFACE, "0.0.0-fake", nullptr, nullptr};
  return &module;
}
