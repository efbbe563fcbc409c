// CPU kernel for ReverseSequence: per batch entry b, the first sequence_lens[b] steps
// along the time axis are reversed and the rest copied. Elements move as bytes.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

class ReverseSequenceKernel final : public Kernel {
 public:
  ReverseSequenceKernel(bool batch_first, int64_t batch, int64_t time, int64_t inner, size_t elem)
      : batch_first_(batch_first), batch_(batch), time_(time), inner_bytes_(inner * elem) {}

  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const char*>(args.inputs[0]->data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const Tensor& lens = *args.inputs[1];
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t len = lens.dtype() == DType::Int32 ? lens.data_as<int32_t>()[b] : lens.data_as<int64_t>()[b];
      if (len < 0 || len > time_)
        throw Error("ReverseSequence: sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                    " is outside [0, " + std::to_string(time_) + "]");
      for (int64_t t = 0; t < time_; ++t) {
        const int64_t src = t < len ? len - 1 - t : t;
        std::memcpy(out + row(b, t) * inner_bytes_, in + row(b, src) * inner_bytes_, inner_bytes_);
      }
    }
  }

 private:
  size_t row(int64_t b, int64_t t) const { return static_cast<size_t>(batch_first_ ? b * time_ + t : t * batch_ + b); }

  bool batch_first_;
  int64_t batch_, time_;
  size_t inner_bytes_;
};

std::unique_ptr<Kernel> make_reverse_sequence(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  const DType lens = init.inputs[1].dtype;
  if (lens != DType::Int32 && lens != DType::Int64) init.fail("sequence_lens must be int32 or int64");
  const bool batch_first = init.node.attributes.get_int_or("batch_axis", 1) == 0;
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  return std::make_unique<ReverseSequenceKernel>(batch_first, s[batch_first ? 0 : 1], s[batch_first ? 1 : 0],
                                                 inner, elem);
}

}  // namespace

EMBER_KERNEL("ReverseSequence", "", 10, kMaxOpset, DeviceKind::Cpu, make_reverse_sequence);

}  // namespace ember
