// CPU kernel for CenterCropPad: each dim is cropped around the centre (the window
// starts at floor((in - out) / 2)) or zero-padded to centre the input (the odd pixel
// goes to the end). Output index o reads input index o + shift[d], when in range.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

class CenterCropPadKernel final : public Kernel {
 public:
  CenterCropPadKernel(Shape in, Shape out, std::vector<int64_t> shift, size_t elem)
      : in_(std::move(in)), out_(std::move(out)), shift_(std::move(shift)),
        in_strides_(contiguous_strides(in_)), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const char*>(args.inputs[0]->data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const int64_t rank = static_cast<int64_t>(out_.size());
    if (rank == 0) {  // a scalar has no axes to crop or pad
      std::memcpy(out, in, elem_);
      return;
    }
    const int64_t cols = out_.back(), rows = cols ? shape_numel(out_) / cols : 0;
    parallel_for(rows, cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        char* dst = out + static_cast<size_t>(r * cols) * elem_;
        std::memset(dst, 0, cols * elem_);
        int64_t rest = r, offset = 0;
        bool inside = true;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const int64_t i = rest % out_[d] + shift_[d];
          rest /= out_[d];
          inside = inside && i >= 0 && i < in_[d];
          offset += i * in_strides_[d];
        }
        if (!inside) continue;
        // Columns [lo, hi) of the output row come from the input row.
        const int64_t s = shift_[rank - 1];
        const int64_t lo = std::max<int64_t>(0, -s), hi = std::min(cols, in_[rank - 1] - s);
        if (hi > lo) std::memcpy(dst + lo * elem_, in + static_cast<size_t>(offset + lo + s) * elem_, (hi - lo) * elem_);
      }
    });
  }

 private:
  Shape in_, out_;
  std::vector<int64_t> shift_, in_strides_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_center_crop_pad(KernelInit& init, std::string* why_not) {
  const Shape& in = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  std::vector<int64_t> shift(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    shift[d] = in[d] >= out[d] ? (in[d] - out[d]) / 2 : -((out[d] - in[d]) / 2);
  return std::make_unique<CenterCropPadKernel>(in, out, shift, elem);
}

}  // namespace

EMBER_KERNEL("CenterCropPad", "", 18, kMaxOpset, DeviceKind::Cpu, make_center_crop_pad);

}  // namespace ember
