// Device code of the CUDA Gather/Scatter family. Every index is wrapped (negative
// counts from the end) and bounds-checked on the device; see gather_impl.h for what an
// out-of-range index does.
#include "ops/cuda/gather_impl.h"
#include "ops/cuda/movement_unit.cuh"

namespace ember::cuda {

namespace {

// The index in [0, n), or -1 when it is outside [-n, n).
template <class I> __device__ __forceinline__ int64_t wrap_index(I raw, int64_t n) {
  int64_t v = static_cast<int64_t>(raw);
  if (v < 0) v += n;
  return v >= 0 && v < n ? v : -1;
}

template <class T, class I>
__global__ void gather_kernel(const T* __restrict__ data, const I* __restrict__ indices, T* __restrict__ out,
                              GatherParams p) {
  EMBER_CUDA_LOOP(i, p.outer * p.count * p.inner) {
    const int64_t j = i % p.inner, row = i / p.inner;
    const int64_t k = row % p.count, o = row / p.count;
    const int64_t idx = wrap_index(indices[k], p.axis_len);
    out[i] = idx < 0 ? T{} : data[(o * p.axis_len + idx) * p.inner + j];
  }
}

// The data offset of indices element i, or -1 for an out-of-range index.
template <class I>
__device__ __forceinline__ int64_t elements_offset(const ElementsParams& p, const I* __restrict__ indices, int64_t i) {
  int64_t off = 0, rest = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t c = rest % p.dims[d];
    rest /= p.dims[d];
    if (d == p.axis) {
      const int64_t idx = wrap_index(indices[i], p.axis_len);
      if (idx < 0) return -1;
      off += idx * p.data_strides[d];
    } else {
      off += c * p.data_strides[d];
    }
  }
  return off;
}

template <class T, class I>
__global__ void gather_elements_kernel(const T* __restrict__ data, const I* __restrict__ indices,
                                       T* __restrict__ out, ElementsParams p) {
  EMBER_CUDA_LOOP(i, p.numel) {
    const int64_t off = elements_offset(p, indices, i);
    out[i] = off < 0 ? T{} : data[off];
  }
}

// Reduction "none": with duplicate indices which update lands is unspecified (ONNX
// leaves it undefined too).
template <class T, class I>
__global__ void scatter_elements_kernel(const I* __restrict__ indices, const T* __restrict__ updates,
                                        T* __restrict__ out, ElementsParams p) {
  EMBER_CUDA_LOOP(i, p.numel) {
    const int64_t off = elements_offset(p, indices, i);
    if (off >= 0) out[off] = updates[i];
  }
}

// The data offset (units) of tuple t, or -1 when one of its indices is out of range.
__device__ __forceinline__ int64_t nd_offset(const NDParams& p, const int64_t* __restrict__ indices, int64_t t) {
  int64_t off = (t / p.tuples) * p.batch_stride;
  for (int j = 0; j < p.k; ++j) {
    const int64_t idx = wrap_index(indices[t * p.k + j], p.dims[j]);
    if (idx < 0) return -1;
    off += idx * p.strides[j];
  }
  return off;
}

template <class T>
__global__ void gather_nd_kernel(const T* __restrict__ data, const int64_t* __restrict__ indices,
                                 T* __restrict__ out, NDParams p) {
  EMBER_CUDA_LOOP(i, p.total_tuples * p.slice) {
    const int64_t t = i / p.slice, j = i - t * p.slice;
    const int64_t off = nd_offset(p, indices, t);
    out[i] = off < 0 ? T{} : data[off + j];
  }
}

template <class T>
__global__ void scatter_nd_kernel(const int64_t* __restrict__ indices, const T* __restrict__ updates,
                                  T* __restrict__ out, NDParams p) {
  EMBER_CUDA_LOOP(i, p.total_tuples * p.slice) {
    const int64_t t = i / p.slice, j = i - t * p.slice;
    const int64_t off = nd_offset(p, indices, t);
    if (off >= 0) out[off + j] = updates[i];
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
