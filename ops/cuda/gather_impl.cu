// Device code of the CUDA Gather/Scatter family. Every index is wrapped (negative
// counts from the end) and bounds-checked on the device; see gather_impl.h for what an
// out-of-range index does.
#include "ops/cuda/gather_impl.h"
#include "ops/cuda/movement_index.h"
#include "ops/cuda/movement_unit.cuh"

namespace ember::cuda {

namespace {

template <class T, class I>
__global__ void gather_kernel(const T* __restrict__ data, const I* __restrict__ indices, T* __restrict__ out,
                              const __grid_constant__ GatherParams p) {
  EMBER_CUDA_LOOP(i, p.outer * p.count * p.inner) {
    const int64_t off = gather_source(p, indices, i);
    out[i] = off < 0 ? T{} : data[off];
  }
}

template <class T, class I>
__global__ void gather_elements_kernel(const T* __restrict__ data, const I* __restrict__ indices,
                                       T* __restrict__ out, const __grid_constant__ ElementsParams p) {
  EMBER_CUDA_LOOP(i, p.numel) {
    const int64_t off = elements_offset(p, indices, i);
    out[i] = off < 0 ? T{} : data[off];
  }
}

// Reduction "none": with duplicate indices which update lands is unspecified (ONNX
// leaves it undefined too).
template <class T, class I>
__global__ void scatter_elements_kernel(const I* __restrict__ indices, const T* __restrict__ updates,
                                        T* __restrict__ out, const __grid_constant__ ElementsParams p) {
  EMBER_CUDA_LOOP(i, p.numel) {
    const int64_t off = elements_offset(p, indices, i);
    if (off >= 0) out[off] = updates[i];
  }
}

template <class T>
__global__ void gather_nd_kernel(const T* __restrict__ data, const int64_t* __restrict__ indices,
                                 T* __restrict__ out, const __grid_constant__ NDParams p) {
  EMBER_CUDA_LOOP(i, p.total_tuples * p.slice) {
    const int64_t off = nd_offset(p, indices, i);
    out[i] = off < 0 ? T{} : data[off];
  }
}

template <class T>
__global__ void scatter_nd_kernel(const int64_t* __restrict__ indices, const T* __restrict__ updates,
                                  T* __restrict__ out, const __grid_constant__ NDParams p) {
  EMBER_CUDA_LOOP(i, p.total_tuples * p.slice) {
    const int64_t off = nd_offset(p, indices, i);
    if (off >= 0) out[off] = updates[i];
  }
}

}  // namespace

void launch_gather(const GatherParams& p, const void* data, const void* indices, void* out, cudaStream_t stream) {
  const int64_t n = p.outer * p.count * p.inner;
  if (n <= 0) return;
  dispatch_unit(p.unit, [&](auto tag) {
    using T = decltype(tag);
    const T* d = static_cast<const T*>(data);
    T* o = static_cast<T*>(out);
    if (p.index64)
      gather_kernel<T, int64_t><<<move_blocks(n), kMoveThreads, 0, stream>>>(d, static_cast<const int64_t*>(indices),
                                                                             o, p);
    else
      gather_kernel<T, int32_t><<<move_blocks(n), kMoveThreads, 0, stream>>>(d, static_cast<const int32_t*>(indices),
                                                                             o, p);
  });
}

void launch_gather_elements(const ElementsParams& p, const void* data, const void* indices, void* out,
                            cudaStream_t stream) {
  if (p.numel <= 0) return;
  dispatch_unit<false>(p.elem, [&](auto tag) {
    using T = decltype(tag);
    const T* d = static_cast<const T*>(data);
    T* o = static_cast<T*>(out);
    if (p.index64)
      gather_elements_kernel<T, int64_t><<<move_blocks(p.numel), kMoveThreads, 0, stream>>>(
          d, static_cast<const int64_t*>(indices), o, p);
    else
      gather_elements_kernel<T, int32_t><<<move_blocks(p.numel), kMoveThreads, 0, stream>>>(
          d, static_cast<const int32_t*>(indices), o, p);
  });
}

void launch_scatter_elements(const ElementsParams& p, const void* indices, const void* updates, void* out,
                             cudaStream_t stream) {
  if (p.numel <= 0) return;
  dispatch_unit<false>(p.elem, [&](auto tag) {
    using T = decltype(tag);
    const T* u = static_cast<const T*>(updates);
    T* o = static_cast<T*>(out);
    if (p.index64)
      scatter_elements_kernel<T, int64_t><<<move_blocks(p.numel), kMoveThreads, 0, stream>>>(
          static_cast<const int64_t*>(indices), u, o, p);
    else
      scatter_elements_kernel<T, int32_t><<<move_blocks(p.numel), kMoveThreads, 0, stream>>>(
          static_cast<const int32_t*>(indices), u, o, p);
  });
}

void launch_gather_nd(const NDParams& p, const void* data, const int64_t* indices, void* out, cudaStream_t stream) {
  const int64_t n = p.total_tuples * p.slice;
  if (n <= 0) return;
  dispatch_unit(p.unit, [&](auto tag) {
    using T = decltype(tag);
    gather_nd_kernel<T><<<move_blocks(n), kMoveThreads, 0, stream>>>(static_cast<const T*>(data), indices,
                                                                     static_cast<T*>(out), p);
  });
}

void launch_scatter_nd(const NDParams& p, const int64_t* indices, const void* updates, void* out,
                       cudaStream_t stream) {
  const int64_t n = p.total_tuples * p.slice;
  if (n <= 0) return;
  dispatch_unit(p.unit, [&](auto tag) {
    using T = decltype(tag);
    scatter_nd_kernel<T><<<move_blocks(n), kMoveThreads, 0, stream>>>(indices, static_cast<const T*>(updates),
                                                                      static_cast<T*>(out), p);
  });
}

}  // namespace ember::cuda
