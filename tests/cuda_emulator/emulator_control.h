// What tests may change about the emulated device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ember::emu {

// The emulated device's memory size (0: the default, 16 GiB). cudaMalloc fails with
// cudaErrorMemoryAllocation past it, so tests can reach the out-of-memory paths.
void set_memory_capacity(size_t bytes);

// The compute capability the device reports (major 0: the default, 9.0), so tests can
// reach what older GPUs are refused.
void set_compute_capability(int major, int minor);

// Work runs the moment it is queued, so the emulator cannot run streams out of order;
// these say whether the waits a real GPU needs were asked for.
// Kernels, copies and fills the device has run so far.
size_t work_done();
// work_done() as it was when the last event that `stream` waited on was recorded.
size_t work_waited_for(cudaStream_t stream);
// How many times a stream waited on an event recorded on `stream`.
size_t waits_on(cudaStream_t stream);

}  // namespace ember::emu
