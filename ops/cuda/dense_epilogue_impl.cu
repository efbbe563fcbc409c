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

template <class T>
void launch(const EpilogueArgs& a, cudaStream_t stream) {
  const unsigned threads = 256, blocks = dense_blocks(a.n, threads);
  // uint32 indices: i < n < 2^31 and i + stride < 2^31 + 2^27 never wrap; the add
  // index is at most the add tensor's size, which is at most n.
  if (a.n < (int64_t{1} << 31)) epilogue_kernel<T, uint32_t><<<blocks, threads, 0, stream>>>(a);
  else epilogue_kernel<T, int64_t><<<blocks, threads, 0, stream>>>(a);
}

}  // namespace

void launch_epilogue(bool half, const EpilogueArgs& args, cudaStream_t stream) {
  if (args.n <= 0) return;
  if (half) launch<__half>(args, stream);
  else launch<float>(args, stream);
}

}  // namespace ember::cuda
