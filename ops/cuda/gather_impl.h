// The device side of the CUDA Gather/Scatter family, as the host code sees it: the
// descriptors passed by value and the launchers (ops/cuda/gather_impl.cu). A plain
// C++ header.
//
// Indices are data, read on the device, so they cannot be checked at plan time and a
// run must not wait for the host: an index outside [-n, n) (after negative indices
// count from the end) never reads or writes out of bounds. Gathers write zero bytes
// (0, 0.0, false) for it, as ONNX Runtime's CUDA kernels do; scatters skip that update.
// The CPU kernels raise an error instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int kGatherMaxRank = 8;

// Gather: out viewed as [outer, count, inner] reads data [outer, axis_len, inner];
// inner in units of `unit` bytes (1..16).
struct GatherParams {
  int32_t unit = 1;
  bool index64 = true;
  int64_t outer = 0, axis_len = 0, count = 0, inner = 0;
};
void launch_gather(const GatherParams& p, const void* data, const void* indices, void* out, cudaStream_t stream);

// GatherElements (gather) and ScatterElements (scatter): element i of the indices
// tensor (shape dims) stands for position i of data with the axis coordinate replaced
// by the index. Counts in elements of `elem` bytes (1, 2, 4 or 8).
struct ElementsParams {
  int32_t rank = 0, axis = 0, elem = 1;
  bool index64 = true;
  int64_t numel = 0, axis_len = 0;
  int64_t dims[kGatherMaxRank] = {};
  int64_t data_strides[kGatherMaxRank] = {};
};
void launch_gather_elements(const ElementsParams& p, const void* data, const void* indices, void* out,
                            cudaStream_t stream);
// out must already hold a copy of data.
void launch_scatter_elements(const ElementsParams& p, const void* indices, const void* updates, void* out,
                             cudaStream_t stream);

// GatherND (gather) and ScatterND (scatter, batches = 1): tuple t of k int64 indices
// picks the slice of `slice` units at batch (t / tuples) * batch_stride + sum_j
// index_j * strides[j]; dims[j] bound index j. Counts in units of `unit` bytes.
struct NDParams {
  int32_t unit = 1, k = 0;
  int64_t total_tuples = 0, tuples = 0, slice = 0, batch_stride = 0;
  int64_t dims[kGatherMaxRank] = {};
  int64_t strides[kGatherMaxRank] = {};
};
void launch_gather_nd(const NDParams& p, const void* data, const int64_t* indices, void* out, cudaStream_t stream);
// out must already hold a copy of data.
void launch_scatter_nd(const NDParams& p, const int64_t* indices, const void* updates, void* out,
                       cudaStream_t stream);

}  // namespace ember::cuda
