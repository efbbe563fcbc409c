// cuDNN plumbing shared by the CUDA Conv and ConvTranspose kernels: descriptors that
// destroy themselves, and the tensor/filter descriptors of ember's NCHW tensors.
#pragma once

#include "ops/cuda/cuda_common.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cuda {

// The workspace cuDNN may ask for one convolution (the arena holds it).
inline constexpr size_t kConvWorkspaceLimit = size_t{64} << 20;

#define EMBER_CUDNN_DESCRIPTOR(Name, Type, create, destroy)                      \
  class Name {                                                                  \
   public:                                                                      \
    Name() { check(create(&d_), #create); }                                     \
    ~Name() { destroy(d_); }                                                    \
    Name(const Name&) = delete;                                                 \
    Name& operator=(const Name&) = delete;                                      \
    Type get() const { return d_; }                                             \
                                                                                \
   private:                                                                     \
    Type d_ = nullptr;                                                          \
  }

EMBER_CUDNN_DESCRIPTOR(TensorDesc, cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor);
EMBER_CUDNN_DESCRIPTOR(FilterDesc, cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor);
EMBER_CUDNN_DESCRIPTOR(ConvDesc, cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                       cudnnDestroyConvolutionDescriptor);
EMBER_CUDNN_DESCRIPTOR(ActivationDesc, cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                       cudnnDestroyActivationDescriptor);
#undef EMBER_CUDNN_DESCRIPTOR

inline cudnnDataType_t cudnn_type(DType t) { return t == DType::Float16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

// cuDNN's legacy API counts in int: every dim and every tensor's size must fit.
inline bool fits_cudnn(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d > INT32_MAX) return false;
    n *= d;
  }
  return n <= INT32_MAX;
}

inline std::vector<int> to_ints(const Shape& s) { return std::vector<int>(s.begin(), s.end()); }

// A packed NCHW (NCDHW) tensor descriptor.
inline void set_packed(const TensorDesc& d, DType t, const Shape& shape) {
  std::vector<int> dims = to_ints(shape), strides(dims.size());
  int stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  check(cudnnSetTensorNdDescriptor(d.get(), cudnn_type(t), static_cast<int>(dims.size()), dims.data(), strides.data()),
        "cudnnSetTensorNdDescriptor");
}

inline void set_filter(const FilterDesc& d, DType t, const Shape& shape) {
  const std::vector<int> dims = to_ints(shape);
  check(cudnnSetFilterNdDescriptor(d.get(), cudnn_type(t), CUDNN_TENSOR_NCHW, static_cast<int>(dims.size()), dims.data()),
        "cudnnSetFilterNdDescriptor");
}

// Whether an algorithm the cuDNN heuristic paired with `math` keeps ember's precision:
// float16 takes any (tensor cores accumulate in float); float32 only FMA math, since
// CUDNN_DEFAULT_MATH and the tensor-op types allow TF32 on Ampere and later.
inline bool usable_math_type(bool half, cudnnMathType_t math) { return half || math == CUDNN_FMA_MATH; }

// Rounds a workspace slice up so the next one stays 256-byte aligned.
inline size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The library's scratch is the workspace's first slice, its pointer raised to a
// 256-byte boundary (the arena promises 64): reserve library_bytes + kScratchSlack.
inline constexpr size_t kScratchSlack = 256;
inline void* scratch_start(void* workspace) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(workspace);
  return reinterpret_cast<void*>((p + 255) / 256 * 256);
}

}  // namespace ember::cuda
