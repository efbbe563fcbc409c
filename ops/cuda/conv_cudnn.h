// cuDNN plumbing shared by the CUDA Conv and ConvTranspose kernels: descriptors that
// destroy themselves, the tensor/filter descriptors of ember's NCHW (and NHWC) tensors, the
// convolution descriptor and the dtype/rank checks both kernels make.
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

inline cudnnDataType_t cudnn_type(DType t) {
  return t == DType::Float16 ? CUDNN_DATA_HALF : t == DType::BFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

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

// A packed NHWC tensor descriptor; `nchw` gives the dims in N, C, H, W order.
inline void set_nhwc(const TensorDesc& d, DType t, const Shape& nchw) {
  const std::vector<int> v = to_ints(nchw);
  check(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, cudnn_type(t), v[0], v[1], v[2], v[3]),
        "cudnnSetTensor4dDescriptor");
}

// A KRSC filter (what NHWC convolutions read); `kcrs` gives the dims in K, C, R, S order.
inline void set_nhwc_filter(const FilterDesc& d, DType t, const Shape& kcrs) {
  const std::vector<int> v = to_ints(kcrs);
  check(cudnnSetFilter4dDescriptor(d.get(), cudnn_type(t), CUDNN_TENSOR_NHWC, v[0], v[1], v[2], v[3]),
        "cudnnSetFilter4dDescriptor");
}

inline void set_filter(const FilterDesc& d, DType t, const Shape& shape) {
  const std::vector<int> dims = to_ints(shape);
  check(cudnnSetFilterNdDescriptor(d.get(), cudnn_type(t), CUDNN_TENSOR_NCHW, static_cast<int>(dims.size()), dims.data()),
        "cudnnSetFilterNdDescriptor");
}

// Whether an algorithm the cuDNN heuristic paired with `math` keeps ember's precision:
// float16 and bfloat16 (`half`: 16-bit storage) take any (tensor cores accumulate in
// float); float32 only FMA math, since
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

// Declines (false, with the reason) what the cuDNN Conv and ConvTranspose kernels do
// not take: X not float32/float16/bfloat16, W/B/Z of another dtype than X, or other than 1 to
// 3 spatial dims. `op` and `what` name the kernel in the reasons ("Conv",
// "convolutions").
bool conv_inputs_supported(const KernelInit& init, const char* op, const char* what, std::string* why_not);

// The cuDNN convolution of Conv (forward) and ConvTranspose (its data gradient):
// converts pads, strides and dilations to cuDNN's int, runs 1-D as 2-D with a unit
// height (inserting that dim into `input`, `filter` and `output`), checks that every
// tensor fits cuDNN's int, and sets `desc` (cross-correlation, float compute, `group`,
// FMA math for float32 so no TF32, tensor-op math for float16 and bfloat16). False with the reason
// when a value is beyond cuDNN's int range.
bool set_conv_desc(const ConvDesc& desc, bool half, int64_t group, const std::vector<int64_t>& pads,
                   const Shape& strides, const Shape& dilations, Shape* input, Shape* filter, Shape* output,
                   std::string* why_not);

}  // namespace ember::cuda
