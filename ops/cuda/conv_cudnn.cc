#include "ops/cuda/conv_cudnn.h"

#include <cstdint>

namespace ember::cuda {

bool conv_inputs_supported(const KernelInit& init, const char* op, const char* what, std::string* why_not) {
  const DType t = init.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16) {
    *why_not = std::string(op) + " on CUDA takes float32, float16 and bfloat16, got " + dtype_name(t);
    return false;
  }
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != t) {
      *why_not = "input " + std::to_string(i) + " is " + dtype_name(init.inputs[i].dtype) + ", X is " +
                 dtype_name(t) + " (mixed types are not supported on CUDA)";
      return false;
    }
  const Shape& x = init.inputs[0].shape;
  if (x.size() < 3 || x.size() > 5) {
    *why_not = std::string("cuDNN ") + what + " here have 1 to 3 spatial dims, X is " + shape_to_string(x);
    return false;
  }
  return true;
}

bool set_conv_desc(const ConvDesc& desc, bool half, int64_t group, const std::vector<int64_t>& pads,
                   const Shape& strides, const Shape& dilations, Shape* input, Shape* filter, Shape* output,
                   std::string* why_not) {
  const size_t sd = pads.size();
  std::vector<int> p(sd), s(sd), d(sd);
  for (size_t i = 0; i < sd; ++i) {
    if (pads[i] > INT32_MAX || strides[i] > INT32_MAX || dilations[i] > INT32_MAX) {
      *why_not = "pads, strides or dilations beyond cuDNN's int range";
      return false;
    }
    p[i] = static_cast<int>(pads[i]);
    s[i] = static_cast<int>(strides[i]);
    d[i] = static_cast<int>(dilations[i]);
  }
  if (sd == 1) {  // 1-D as 2-D with height 1
    for (Shape* shape : {input, filter, output}) shape->insert(shape->begin() + 2, 1);
    p.insert(p.begin(), 0);
    s.insert(s.begin(), 1);
    d.insert(d.begin(), 1);
  }
  if (!fits_cudnn(*input) || !fits_cudnn(*filter) || !fits_cudnn(*output) || group > INT32_MAX) {
    *why_not = "a tensor of more than 2^31 elements (cuDNN's legacy API counts in int)";
    return false;
  }
  check(cudnnSetConvolutionNdDescriptor(desc.get(), static_cast<int>(p.size()), p.data(), s.data(), d.data(),
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolutionNdDescriptor");
  check(cudnnSetConvolutionGroupCount(desc.get(), static_cast<int>(group)), "cudnnSetConvolutionGroupCount");
  // No TF32 for float32; tensor cores (float accumulation) for float16 and bfloat16.
  check(cudnnSetConvolutionMathType(desc.get(), half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");
  return true;
}

}  // namespace ember::cuda
