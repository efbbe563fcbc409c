// CPU kernel for OneHot: output[..., d, ...] = on_value where the index (negative
// ones count from depth) equals d, off_value elsewhere; out-of-range indices give a
// row of off_value. Indices of any numeric type are truncated to integers; the values
// are copied as bytes, so every fixed-size output dtype works.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

template <class I>
class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(int64_t outer, int64_t depth, int64_t inner, size_t elem)
      : outer_(outer), depth_(depth), inner_(inner), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const I* indices = args.inputs[0]->data_as<I>();
    const auto* values = static_cast<const char*>(args.inputs[2]->data());
    const char *off = values, *on = values + elem_;
    auto* out = static_cast<char*>(args.outputs[0]->data());
    parallel_for(outer_ * inner_, depth_, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        const int64_t o = s / inner_, i = s % inner_;
        int64_t hot = static_cast<int64_t>(compute_t<I>(indices[s]));
        if (hot < 0) hot += depth_;
        char* row = out + static_cast<size_t>(o * depth_ * inner_ + i) * elem_;
        for (int64_t d = 0; d < depth_; ++d) std::memcpy(row + d * inner_ * elem_, d == hot ? on : off, elem_);
      }
    });
  }

 private:
  int64_t outer_, depth_, inner_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_one_hot(KernelInit& init, std::string* why_not) {
  const Shape& out = init.outputs[0].shape;
  const int64_t rank = static_cast<int64_t>(out.size());
  int64_t axis = init.node.attributes.get_int_or("axis", -1);
  if (axis < 0) axis += rank;
  const size_t elem = movement_elem_size(init.inputs[2].dtype);
  if (elem == 0 || init.inputs[2].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[2].dtype);
    return nullptr;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out[d];
  std::unique_ptr<Kernel> kernel;
  dispatch(NumericTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<OneHotKernel<typename decltype(tag)::type>>(outer, out[axis], inner, elem);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("OneHot", "", 9, kMaxOpset, DeviceKind::Cpu, make_one_hot);

}  // namespace ember
