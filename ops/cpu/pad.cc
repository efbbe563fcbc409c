// Pad (pads attribute before opset 11, inputs from 11, axes from 18, wrap from 19) as
// an IndexCopy: each output index maps to an input index by the mode, or to the fill
// value (constant mode). Negative pads crop first, then the mode applies to what is left.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/index_copy.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>

#include <algorithm>
#include <cstring>

namespace ember {

namespace {

// Index in [0, m) that output position j (relative to the kept input) reads, or -1.
int64_t map_index(int64_t j, int64_t m, const std::string& mode) {
  if (j >= 0 && j < m) return j;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(j, 0, m - 1);
  if (mode == "wrap") return ((j % m) + m) % m;
  if (m == 1) return 0;  // reflect on one element repeats it
  const int64_t period = 2 * (m - 1);
  j = std::abs(j) % period;
  return j < m ? j : period - j;
}

class PadKernel final : public Kernel {
 public:
  PadKernel(IndexCopy copy, bool fill_from_input) : copy_(std::move(copy)), fill_from_input_(fill_from_input) {}
  void run(const RunArgs& args) const override {
    const void* fill = fill_from_input_ ? args.inputs[2]->data() : nullptr;
    copy_.run(args.inputs[0]->data(), args.outputs[0]->data(), fill);
  }

 private:
  IndexCopy copy_;
  bool fill_from_input_;
};

std::unique_ptr<Kernel> make_pad(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const PadParams p = pad_params(infer_context(init));
  std::vector<uint8_t> fill;
  bool fill_from_input = false;
  if (init.opset < 11) {
    // Before opset 11 the pad value is a float attribute, converted to the data dtype.
    if (!scalar_bytes(init.node.attributes.get_float_or("value", 0.0f), init.inputs[0].dtype, fill)) {
      *why_not = std::string("a pad value for ") + dtype_name(init.inputs[0].dtype);
      return nullptr;
    }
  } else if (init.inputs.size() > 2 && init.inputs[2].present()) {
    if (init.inputs[2].dtype != init.inputs[0].dtype || shape_numel(init.inputs[2].shape) != 1)
      init.fail("constant_value must be one element of the data's dtype");
    fill_from_input = true;
  }
  const Shape& in = init.inputs[0].shape;
  if (shape_numel(init.outputs[0].shape) == 0)
    return std::make_unique<PadKernel>(IndexCopy::nothing(elem), fill_from_input);
  const auto strides = contiguous_strides(in);
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t lo = std::max<int64_t>(0, -p.begin[d]);
    const int64_t kept = in[d] - lo - std::max<int64_t>(0, -p.end[d]);
    const int64_t before = std::max<int64_t>(0, p.begin[d]);
    const int64_t len = kept + before + std::max<int64_t>(0, p.end[d]);
    if (kept <= 0 && len > 0 && p.mode != "constant")
      init.fail("cannot pad an empty dimension in " + p.mode + " mode");
    std::vector<int64_t> table(len);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t j = map_index(i - before, kept, p.mode);
      table[i] = j < 0 ? -1 : (lo + j) * strides[d];
    }
    tables.push_back(std::move(table));
  }
  return std::make_unique<PadKernel>(IndexCopy(std::move(tables), elem, std::move(fill)), fill_from_input);
}

}  // namespace

EMBER_KERNEL("Pad", "", 1, kMaxOpset, DeviceKind::Cpu, make_pad);

}  // namespace ember
