#include "ops/cuda/dense_device.cuh"
#include "ops/cuda/dense_epilogue_impl.h"

namespace ember::cuda {

namespace {

// I is the index type: 32-bit when every index fits (cheaper division), else 64-bit.
template <class T, class I>
__global__ void epilogue_kernel(EpilogueArgs a) {
  T* y = static_cast<T*>(a.y);
  const T* bias = static_cast<const T*>(a.bias);
  const T* add = static_cast<const T*>(a.add);
  const I n = static_cast<I>(a.n), bias_inner = static_cast<I>(a.bias_inner),
          bias_count = static_cast<I>(a.bias_count), add_cols = static_cast<I>(a.add_cols),
          add_rs = static_cast<I>(a.add_row_stride), add_cs = static_cast<I>(a.add_col_stride);
  const I stride = static_cast<I>(blockDim.x) * gridDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = to_float(y[i]);
    if (bias) v += to_float(bias[(i / bias_inner) % bias_count]);
    if (add) {
      const I row = i / add_cols, col = i - row * add_cols;
      v += a.add_scale * to_float(add[row * add_rs + col * add_cs]);
    }
    y[i] = from_float<T>(apply_activation(a.act, v));
  }
}

// 16 bytes of T per thread: where the bias (if any) is indexed by i % bias_count (a row
// or channels-last bias), every add element is y's own (a residual), and the counts and
// pointers keep each 16-byte group whole and aligned. Memory-bound like the scalar
// kernel, at a quarter of its instructions (float16: an eighth).
template <class T>
__global__ void epilogue_vector_kernel(EpilogueArgs a) {
  constexpr int kWidth = 16 / sizeof(T);
  union Group {
    uint4 bits;
    T v[kWidth];
  };
  uint4* y = static_cast<uint4*>(a.y);
  const uint4* bias = static_cast<const uint4*>(a.bias);
  const uint4* add = static_cast<const uint4*>(a.add);
  const uint32_t groups = static_cast<uint32_t>(a.n / kWidth), bias_groups = static_cast<uint32_t>(a.bias_count / kWidth);
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
    Group out, b, r;
    out.bits = y[g];
    if (bias) b.bits = bias[g % bias_groups];
    if (add) r.bits = add[g];
#pragma unroll
    for (int e = 0; e < kWidth; ++e) {
      float v = to_float(out.v[e]);
      if (bias) v += to_float(b.v[e]);
      if (add) v += a.add_scale * to_float(r.v[e]);
      out.v[e] = from_float<T>(apply_activation(a.act, v));
    }
    y[g] = out.bits;
  }
}

template <class T>
bool vector_epilogue(const EpilogueArgs& a) {
  constexpr int64_t kWidth = 16 / sizeof(T);
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool bias_ok = !a.bias || (a.bias_inner == 1 && a.bias_count % kWidth == 0 && aligned(a.bias));
  const bool add_ok = !a.add || (a.add_cols == a.n && a.add_col_stride == 1 && aligned(a.add));
  return a.n % kWidth == 0 && a.n < (int64_t{1} << 31) && aligned(a.y) && bias_ok && add_ok;
}

template <class T>
void launch(const EpilogueArgs& a, cudaStream_t stream) {
  const unsigned threads = 256;
  if (vector_epilogue<T>(a)) {
    epilogue_vector_kernel<T><<<dense_blocks(a.n / (16 / sizeof(T)), threads), threads, 0, stream>>>(a);
    return;
  }
  const unsigned blocks = dense_blocks(a.n, threads);
  // uint32 indices: i < n < 2^31 and i + stride < 2^31 + 2^27 never wrap; the add
  // index is at most the add tensor's size, which is at most n.
  if (a.n < (int64_t{1} << 31)) epilogue_kernel<T, uint32_t><<<blocks, threads, 0, stream>>>(a);
  else epilogue_kernel<T, int64_t><<<blocks, threads, 0, stream>>>(a);
}

}  // namespace

void launch_epilogue(FloatStorage storage, const EpilogueArgs& args, cudaStream_t stream) {
  if (args.n <= 0) return;
  dispatch_storage(storage, [&](auto tag) { launch<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
