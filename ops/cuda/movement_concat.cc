// CUDA Concat and Split: viewed as [outer, axis * inner], each input (Concat) or output
// (Split) owns a column range of every outer row, so both are a set of 2-D block copies,
// up to kMaxPieces of them per launch. The bytes per thread step are the widest power
// of two (<= 16) that divides every width, pitch and column offset, and every pointer.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_plans.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember::cuda {

namespace {

PieceBlocks make_blocks(const Shape& whole, int64_t axis, const std::vector<int64_t>& sizes, size_t elem,
                        bool concat) {
  PieceBlocks b;
  b.concat = concat;
  int64_t inner = static_cast<int64_t>(elem);
  for (size_t d = 0; d < whole.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) b.outer *= whole[d];
    if (static_cast<int64_t>(d) > axis) inner *= whole[d];
  }
  for (int64_t s : sizes) {
    b.offset.push_back(b.row);
    b.bytes.push_back(s * inner);
    b.row += s * inner;
    b.max_unit = std::min(b.max_unit, pow2_divisor(static_cast<uint64_t>(s * inner)));
  }
  return b;
}

class PiecesKernel final : public Kernel {
 public:
  explicit PiecesKernel(PieceBlocks b) : b_(std::move(b)) {}
  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    const char* what = b_.concat ? "Concat on CUDA" : "Split on CUDA";
    auto launch = [&](const CopyPieces& p) {
      launch_copy_pieces(p, stream);
      check_launch(what);
    };
    if (b_.concat) {
      void* out = args.outputs[0]->data();
      auto src = [&](size_t i) -> const void* { return args.inputs[i]->data(); };
      auto dst = [&](size_t) { return out; };
      for_each_piece_group(b_, pieces_unit(b_, src, dst), src, dst, launch);
    } else {
      const void* in = args.inputs[0]->data();
      auto src = [&](size_t) { return in; };
      auto dst = [&](size_t i) -> void* { return args.outputs[i] ? args.outputs[i]->data() : nullptr; };
      for_each_piece_group(b_, pieces_unit(b_, src, dst), src, dst, launch);
    }
  }

 private:
  PieceBlocks b_;
};

std::unique_ptr<Kernel> make_pieces(KernelInit& init, std::string* why_not) {
  PieceBlocks b;
  if (!plan_pieces(init, b, why_not)) return nullptr;
  return std::make_unique<PiecesKernel>(std::move(b));
}

}  // namespace

bool plan_pieces(const KernelInit& init, PieceBlocks& blocks, std::string* why_not) {
  if (init.node.op_type == "Concat") {
    const size_t elem = movement_elem(init.outputs[0].dtype, why_not);
    if (!elem) return false;
    const Shape& out = init.outputs[0].shape;
    int64_t axis = init.node.attributes.get_int_or("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    std::vector<int64_t> sizes;
    for (const auto& t : init.inputs) sizes.push_back(t.shape[axis]);
    blocks = make_blocks(out, axis, sizes, elem, true);
    return true;
  }
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  if ((init.opset >= 13 || init.opset < 2) && !inputs_known(init, {1}, "split", why_not)) return false;
  const SplitParams p = split_params(infer_context(init), init.node.outputs.size());
  blocks = make_blocks(init.inputs[0].shape, p.axis, p.sizes, elem, false);
  return true;
}

EMBER_KERNEL("Concat", "", 1, kMaxOpset, DeviceKind::Cuda, make_pieces);
EMBER_KERNEL("Split", "", 1, kMaxOpset, DeviceKind::Cuda, make_pieces);

}  // namespace ember::cuda
