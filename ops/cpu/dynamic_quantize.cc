// DynamicQuantizeLinear: float32 -> uint8 with a scale and zero point computed from
// the data's range (widened to hold 0), all in float32 as the ONNX definition does.
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>

namespace ember {
namespace {

void run_dynamic_quantize(const RunArgs& args) {
  const Tensor& x = *args.inputs[0];
  const float* xs = x.data_as<float>();
  const int64_t n = x.numel();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) lo = std::min(lo, xs[i]), hi = std::max(hi, xs[i]);
  // A range of width 0 (all zeros) would divide by zero: ONNX uses 1/255 then.
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  uint8_t* y = args.outputs[0]->data_as<uint8_t>();
  parallel_for(n, 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(xs[i] / scale) + zero_point, 0.0f, 255.0f));
  });
  if (args.outputs.size() > 1 && args.outputs[1]) *args.outputs[1]->data_as<float>() = scale;
  if (args.outputs.size() > 2 && args.outputs[2])
    *args.outputs[2]->data_as<uint8_t>() = static_cast<uint8_t>(zero_point);
}

std::unique_ptr<Kernel> make_dynamic_quantize(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != DType::Float32) {
    *why_not = std::string("DynamicQuantizeLinear of ") + dtype_name(init.inputs[0].dtype) + " is not supported";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(run_dynamic_quantize);
}

}  // namespace

EMBER_KERNEL("DynamicQuantizeLinear", "", 11, kMaxOpset, DeviceKind::Cpu, make_dynamic_quantize);

}  // namespace ember
