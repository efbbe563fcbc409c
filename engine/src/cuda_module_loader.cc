// cuda_module() for libember: loads libember_cuda.so on first use (see cuda_module.h).
#include "engine/src/cuda_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace ember {

namespace {

constexpr const char* kModuleName = "libember_cuda.so";
constexpr const char* kWhatToDo =
    "install the CUDA runtime, cuBLAS and cuDNN 9 (or add their folder to LD_LIBRARY_PATH) and keep "
    "libember_cuda.so beside libember";

// $EMBER_CUDA_MODULE, else libember_cuda.so in libember's own folder: the module is
// installed (and built) beside libember, whatever the program's search path.
std::string module_path() {
  if (const char* path = std::getenv("EMBER_CUDA_MODULE"); path && *path) return path;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cuda_module), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / kModuleName).string();
  return kModuleName;
}

struct Loaded {
  const CudaModule* module = nullptr;
  std::string problem;
};

Loaded load() {
#ifndef EMBER_CUDA_MODULE_BUILT
  // No module was built with this libember; one named explicitly is still tried.
  if (!std::getenv("EMBER_CUDA_MODULE")) return {nullptr, "this ember was built without the CUDA backend"};
#endif
  const std::string path = module_path();
  // RTLD_LOCAL: the module's symbols stay its own (it uses libember's, not the other
  // way round). RTLD_NODELETE: its kernels stay in the registry for the process's life.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) return {nullptr, std::string("the CUDA backend could not be loaded: ") + dlerror() + "; " + kWhatToDo};
  using Entry = const CudaModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaModuleEntry));
  if (!entry)
    return {nullptr, path + " is not an ember CUDA module (no " + kCudaModuleEntry + "): use the libember_cuda.so built with this libember"};
  const CudaModule* module = entry();
  if (module->interface_version != kCudaModuleInterface ||
      std::strcmp(module->ember_version, EMBER_VERSION) != 0) {
    const std::string theirs = module->interface_version == kCudaModuleInterface
                                   ? std::string(module->ember_version) : std::string("?");
    return {nullptr, path + " was built for ember " + theirs + " (module interface " +
                         std::to_string(module->interface_version) + "), this libember is " + EMBER_VERSION +
                         " (module interface " + std::to_string(kCudaModuleInterface) +
                         "): use the libember_cuda.so built with this libember"};
  }
  return {module, ""};
}

}  // namespace

const CudaModule* cuda_module(std::string* problem) {
  static const Loaded loaded = load();  // once per process, thread-safe
  if (!loaded.module && problem) *problem = loaded.problem;
  return loaded.module;
}

}  // namespace ember
