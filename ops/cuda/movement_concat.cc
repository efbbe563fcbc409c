// CUDA Concat and Split: viewed as [outer, axis * inner], each input (Concat) or output
// (Split) owns a column range of every outer row, so both are a set of 2-D block copies,
// up to kMaxPieces of them per launch. The bytes per thread step are the widest power
// of two (<= 16) that divides every width, pitch and column offset, and every pointer.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_util.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember::cuda {

namespace {

// Bytes per outer row that each piece owns, and where in the whole row it starts.
struct Blocks {
  int64_t outer = 1;
  std::vector<int64_t> bytes, offset;
  int64_t row = 0;
  size_t max_unit = 16;  // divides every byte count above
};

Blocks make_blocks(const Shape& whole, int64_t axis, const std::vector<int64_t>& sizes, size_t elem) {
  Blocks b;
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

// Launches the pieces in groups of kMaxPieces. src(i) and dst(i) are piece i's whole
// tensors of this run (dst(i) null for an absent output); in Concat the destination
// columns start at the piece's offset, in Split the source columns do.
template <class Src, class Dst>
void copy_pieces(const Blocks& b, size_t count, Src src, Dst dst, bool concat, cudaStream_t stream,
                 const char* what) {
  if (b.outer == 0) return;
  size_t unit = b.max_unit;
  for (size_t i = 0; i < count; ++i)
    while (b.bytes[i] && dst(i) && unit > 1 && !aligned_to(unit, {src(i), dst(i)})) unit /= 2;
  const int64_t u = static_cast<int64_t>(unit);
  CopyPieces p;
  p.unit = static_cast<int32_t>(unit);
  p.rows = b.outer;
  auto flush = [&] {
    launch_copy_pieces(p, stream);
    check_launch(what);
    p.count = 0;
    p.max_piece = 0;
  };
  for (size_t i = 0; i < count; ++i) {
    if (b.bytes[i] == 0 || !dst(i)) continue;  // an empty piece or an absent output
    CopyPieces::Piece& piece = p.pieces[p.count++];
    piece.width = b.bytes[i] / u;
    if (concat) {
      piece.src = src(i);
      piece.src_pitch = piece.width;
      piece.dst = static_cast<char*>(dst(i)) + b.offset[i];
      piece.dst_pitch = b.row / u;
    } else {
      piece.src = static_cast<const char*>(src(i)) + b.offset[i];
      piece.src_pitch = b.row / u;
      piece.dst = dst(i);
      piece.dst_pitch = piece.width;
    }
    p.max_piece = std::max(p.max_piece, p.rows * piece.width);
    if (p.count == kMaxPieces) flush();
  }
  if (p.count) flush();
}

class ConcatKernel final : public Kernel {
 public:
  explicit ConcatKernel(Blocks b) : b_(std::move(b)) {}
  void run(const RunArgs& args) const override {
    void* out = args.outputs[0]->data();
    copy_pieces(
        b_, args.inputs.size(), [&](size_t i) -> const void* { return args.inputs[i]->data(); },
        [&](size_t) { return out; }, true, stream_context(args).stream, "Concat on CUDA");
  }

 private:
  Blocks b_;
};

class SplitKernel final : public Kernel {
 public:
  explicit SplitKernel(Blocks b) : b_(std::move(b)) {}
  void run(const RunArgs& args) const override {
    const void* in = args.inputs[0]->data();
    copy_pieces(
        b_, args.outputs.size(), [&](size_t) { return in; },
        [&](size_t i) -> void* { return args.outputs[i] ? args.outputs[i]->data() : nullptr; }, false,
        stream_context(args).stream, "Split on CUDA");
  }

 private:
  Blocks b_;
};

std::unique_ptr<Kernel> make_concat(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.outputs[0].dtype, why_not);
  if (!elem) return nullptr;
  const Shape& out = init.outputs[0].shape;
  int64_t axis = init.node.attributes.get_int_or("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  std::vector<int64_t> sizes;
  for (const auto& t : init.inputs) sizes.push_back(t.shape[axis]);
  return std::make_unique<ConcatKernel>(make_blocks(out, axis, sizes, elem));
}

std::unique_ptr<Kernel> make_split(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return nullptr;
  if ((init.opset >= 13 || init.opset < 2) && !inputs_known(init, {1}, "split", why_not)) return nullptr;
  const SplitParams p = split_params(infer_context(init), init.node.outputs.size());
  return std::make_unique<SplitKernel>(make_blocks(init.inputs[0].shape, p.axis, p.sizes, elem));
}

}  // namespace

EMBER_KERNEL("Concat", "", 1, kMaxOpset, DeviceKind::Cuda, make_concat);
EMBER_KERNEL("Split", "", 1, kMaxOpset, DeviceKind::Cuda, make_split);

}  // namespace ember::cuda
