// What tests may change about the emulated device.
#pragma once

#include <cstddef>

namespace ember::emu {

// The emulated device's memory size (0: the default, 16 GiB). cudaMalloc fails with
// cudaErrorMemoryAllocation past it, so tests can reach the out-of-memory paths.
void set_memory_capacity(size_t bytes);

}  // namespace ember::emu
