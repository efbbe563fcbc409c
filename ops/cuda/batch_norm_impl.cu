#include "ops/cuda/batch_norm_impl.h"
#include "ops/cuda/dense_device.cuh"

namespace ember::cuda {

namespace {

__device__ __forceinline__ float load(const void* p, FloatStorage storage, int64_t i) {
  switch (storage) {
    case FloatStorage::Float16: return __half2float(static_cast<const __half*>(p)[i]);
    case FloatStorage::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// a = scale / sqrt(var + eps), b = bias - mean * a (the CPU kernel's arithmetic).
__global__ void fold_kernel(BatchNormArgs p) {
  EMBER_CUDA_LOOP(c, p.channels) {
    const float a = load(p.scale, p.scale_bias_storage, c) / sqrtf(load(p.var, p.stats_storage, c) + p.epsilon);
    p.folded[c] = a;
    p.folded[p.channels + c] = load(p.bias, p.scale_bias_storage, c) - load(p.mean, p.stats_storage, c) * a;
  }
}

// Large planes: a block walks one (n, c) plane at a time, its channel known once.
template <class T>
__global__ void apply_planes_kernel(BatchNormArgs p) {
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int64_t planes = p.outer * p.channels;
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int64_t c = plane % p.channels;
    const float a = p.folded[c], b = p.folded[p.channels + c];
    const T* xp = x + plane * p.inner;
    T* yp = y + plane * p.inner;
    for (int64_t i = threadIdx.x; i < p.inner; i += blockDim.x) yp[i] = from_float<T>(to_float(xp[i]) * a + b);
  }
}

// Small planes (e.g. [N, C] or 7x7): one thread per element.
template <class T>
__global__ void apply_flat_kernel(BatchNormArgs p) {
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int64_t n = p.outer * p.channels * p.inner;
  EMBER_CUDA_LOOP(i, n) {
    const int64_t c = (i / p.inner) % p.channels;
    y[i] = from_float<T>(to_float(x[i]) * p.folded[c] + p.folded[p.channels + c]);
  }
}

template <class T>
void apply(const BatchNormArgs& p, cudaStream_t stream) {
  const unsigned threads = 256;
  const int64_t planes = p.outer * p.channels;
  if (p.inner >= threads) {
    const int64_t blocks = planes < 65535 * 8 ? planes : 65535 * 8;
    apply_planes_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p);
  } else {
    apply_flat_kernel<T><<<dense_blocks(planes * p.inner, threads), threads, 0, stream>>>(p);
  }
}

}  // namespace

void launch_batch_norm(const BatchNormArgs& args, cudaStream_t stream) {
  if (args.channels <= 0) return;
  fold_kernel<<<dense_blocks(args.channels), 256, 0, stream>>>(args);
  if (args.outer * args.inner <= 0) return;
  dispatch_storage(args.x_storage, [&](auto tag) { apply<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
