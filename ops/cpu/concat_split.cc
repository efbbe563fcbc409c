// Concat and Split: both move contiguous blocks. Viewed as [outer, axis * inner], each
// input (Concat) or output (Split) owns a column range of every outer row.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

// Bytes per outer row that each of the pieces (inputs of Concat, outputs of Split) owns.
struct Blocks {
  int64_t outer = 1;
  std::vector<size_t> bytes;   // per piece
  std::vector<size_t> offset;  // per piece, within the whole row
  size_t row = 0;              // the whole row
};

Blocks make_blocks(const Shape& whole, int64_t axis, const std::vector<int64_t>& sizes, size_t elem) {
  Blocks b;
  size_t inner = elem;
  for (size_t d = 0; d < whole.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) b.outer *= whole[d];
    if (static_cast<int64_t>(d) > axis) inner *= whole[d];
  }
  for (int64_t s : sizes) {
    b.offset.push_back(b.row);
    b.bytes.push_back(s * inner);
    b.row += s * inner;
  }
  return b;
}

class ConcatKernel final : public Kernel {
 public:
  explicit ConcatKernel(Blocks b) : b_(std::move(b)) {}
  void run(const RunArgs& args) const override {
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const int64_t pieces = static_cast<int64_t>(b_.bytes.size());
    parallel_for(b_.outer * pieces, b_.row / pieces / 4 + 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t o = k / pieces, i = k % pieces;
        if (!b_.bytes[i]) continue;
        const auto* src = static_cast<const uint8_t*>(args.inputs[i]->data());
        std::memcpy(out + o * b_.row + b_.offset[i], src + o * b_.bytes[i], b_.bytes[i]);
      }
    });
  }

 private:
  Blocks b_;
};

class SplitKernel final : public Kernel {
 public:
  explicit SplitKernel(Blocks b) : b_(std::move(b)) {}
  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const uint8_t*>(args.inputs[0]->data());
    const int64_t pieces = static_cast<int64_t>(b_.bytes.size());
    parallel_for(b_.outer * pieces, b_.row / pieces / 4 + 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t o = k / pieces, i = k % pieces;
        if (!b_.bytes[i] || !args.outputs[i]) continue;
        auto* dst = static_cast<uint8_t*>(args.outputs[i]->data());
        std::memcpy(dst + o * b_.bytes[i], in + o * b_.row + b_.offset[i], b_.bytes[i]);
      }
    });
  }

 private:
  Blocks b_;
};

std::unique_ptr<Kernel> make_concat(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.outputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.outputs[0].dtype);
    return nullptr;
  }
  const Shape& out = init.outputs[0].shape;
  int64_t axis = init.node.attributes.get_int_or("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  std::vector<int64_t> sizes;
  for (const auto& t : init.inputs) sizes.push_back(t.shape[axis]);
  return std::make_unique<ConcatKernel>(make_blocks(out, axis, sizes, elem));
}

std::unique_ptr<Kernel> make_split(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const SplitParams p = split_params(infer_context(init), init.node.outputs.size());
  return std::make_unique<SplitKernel>(make_blocks(init.inputs[0].shape, p.axis, p.sizes, elem));
}

}  // namespace

EMBER_KERNEL("Concat", "", 1, kMaxOpset, DeviceKind::Cpu, make_concat);
EMBER_KERNEL("Split", "", 1, kMaxOpset, DeviceKind::Cpu, make_split);

}  // namespace ember
