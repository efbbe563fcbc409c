// CUDA Pad (pads attribute before opset 11, inputs from 11, axes from 18, wrap from 19),
// modes constant, reflect, edge and wrap, on bytes (every dtype of 1, 2, 4 or 8 bytes).
// pads and axes must be plan-time constants; constant_value is read on the device.
// Negative pads crop first, then the mode applies to what is left (as on the CPU).
#include "graph/schemas/shape_util.h"
#include <ember/core/element_types.h>
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_plans.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstring>

namespace ember::cuda {

namespace {

class PadKernel final : public Kernel {
 public:
  PadKernel(PadDims p, uint64_t fill_bits, bool fill_from_input)
      : p_(p), fill_bits_(fill_bits), fill_from_input_(fill_from_input) {}
  void run(const RunArgs& args) const override {
    const void* fill = fill_from_input_ ? args.inputs[2]->data() : nullptr;
    launch_pad(p_, args.inputs[0]->data(), args.outputs[0]->data(), fill, fill_bits_, stream_context(args).stream);
    check_launch("Pad on CUDA");
  }

 private:
  PadDims p_;
  uint64_t fill_bits_;
  bool fill_from_input_;
};

std::unique_ptr<Kernel> make_pad(KernelInit& init, std::string* why_not) {
  PadDims p;
  uint64_t fill_bits = 0;
  bool fill_from_input = false;
  if (!plan_pad(init, p, fill_bits, fill_from_input, why_not)) return nullptr;
  return std::make_unique<PadKernel>(p, fill_bits, fill_from_input);
}

}  // namespace

bool plan_pad(const KernelInit& init, PadDims& p, uint64_t& fill_bits, bool& fill_from_input, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  if (init.opset >= 11 && !inputs_known(init, {1, 3}, "pads and axes", why_not)) return false;
  const Shape& in = init.inputs[0].shape;
  if (in.size() > static_cast<size_t>(kPadMaxRank)) {
    *why_not = "rank above " + std::to_string(kPadMaxRank) + " is not supported on CUDA";
    return false;
  }
  const PadParams pads = pad_params(infer_context(init));

  fill_bits = 0;
  fill_from_input = false;
  if (init.opset < 11) {
    // Before opset 11 the pad value is a float attribute, converted to the data dtype.
    std::vector<uint8_t> bytes;
    if (!scalar_bytes(init.node.attributes.get_float_or("value", 0.0f), init.inputs[0].dtype, bytes) ||
        bytes.size() != elem) {
      *why_not = std::string("a pad value for ") + dtype_name(init.inputs[0].dtype);
      return false;
    }
    std::memcpy(&fill_bits, bytes.data(), elem);
  } else if (init.inputs.size() > 2 && init.inputs[2].present()) {
    if (init.inputs[2].dtype != init.inputs[0].dtype || shape_numel(init.inputs[2].shape) != 1) {
      *why_not = "constant_value must be one element of the data's dtype";
      return false;
    }
    fill_from_input = true;
  }

  const std::string& mode = pads.mode;
  p = PadDims{};
  p.rank = static_cast<int32_t>(in.size());
  p.elem = static_cast<int32_t>(elem);
  p.mode = mode == "reflect" ? PadMode::Reflect : mode == "edge" ? PadMode::Edge : mode == "wrap" ? PadMode::Wrap
                                                                                                   : PadMode::Constant;
  p.numel = shape_numel(init.outputs[0].shape);
  const auto strides = contiguous_strides(in);
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t lo = std::max<int64_t>(0, -pads.begin[d]);
    const int64_t kept = in[d] - lo - std::max<int64_t>(0, -pads.end[d]);
    const int64_t before = std::max<int64_t>(0, pads.begin[d]);
    const int64_t len = kept + before + std::max<int64_t>(0, pads.end[d]);
    if (kept <= 0 && len > 0 && p.mode != PadMode::Constant) {
      *why_not = "cannot pad an empty dimension in " + mode + " mode";
      return false;
    }
    p.out_dims[d] = len;
    p.before[d] = before;
    p.lo[d] = lo;
    p.kept[d] = kept;
    p.in_strides[d] = strides[d];
  }
  return true;
}

EMBER_KERNEL("Pad", "", 1, kMaxOpset, DeviceKind::Cuda, make_pad);

}  // namespace ember::cuda
