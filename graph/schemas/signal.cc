// Shape/dtype inference for the signal ops: window functions, DFT and STFT. Their
// output lengths come from input values (window size, dft_length, frame_step), which
// ctx.value() provides or reports as data-dependent.
#include "graph/schema.h"
#include "graph/schemas/shape_util.h"

#include <string>
#include <vector>

namespace ember {

namespace {

int64_t scalar_int(const InferContext& ctx, size_t input, const char* what) {
  const std::vector<int64_t> v = read_ints(ctx.value(input), ctx, what);
  if (v.size() != 1) ctx.fail(std::string(what) + " must hold one value");
  return v[0];
}

DType output_dtype(const InferContext& ctx) {
  const int64_t to = ctx.node.attributes.get_int_or("output_datatype", 1);
  const DType d = static_cast<DType>(to);
  if (dtype_bits(d) == 0 || to > static_cast<int64_t>(DType::BFloat16))
    ctx.fail("output_datatype " + std::to_string(to) + " is not a numeric type");
  return d;
}

std::vector<TensorType> infer_window(const InferContext& ctx) {
  const int64_t size = scalar_int(ctx, 0, "size");
  if (size < 0) ctx.fail("size must not be negative");
  return {{output_dtype(ctx), {size}}};
}

std::vector<TensorType> infer_mel(const InferContext& ctx) {
  const int64_t dft_length = scalar_int(ctx, 1, "dft_length");
  const int64_t bins = scalar_int(ctx, 0, "num_mel_bins");
  if (dft_length <= 0 || bins <= 0) ctx.fail("num_mel_bins and dft_length must be positive");
  return {{output_dtype(ctx), {dft_length / 2 + 1, bins}}};
}

// The DFT's signal axis, in [0, rank - 1) (the last dim holds real/imaginary parts).
int64_t dft_axis(const InferContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  int64_t axis = ctx.opset < 20 ? ctx.node.attributes.get_int_or("axis", 1) : -2;
  if (ctx.opset >= 20 && ctx.has_input(2)) axis = scalar_int(ctx, 2, "axis");
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  if (axis == rank - 1) ctx.fail("axis must not be the last (complex) dim");
  return axis;
}

std::vector<TensorType> infer_dft(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() < 2 || (x.shape.back() != 1 && x.shape.back() != 2))
    ctx.fail("input must end in a dim of 1 (real) or 2 (complex), got " + shape_to_string(x.shape));
  const int64_t axis = dft_axis(ctx);
  const bool inverse = ctx.node.attributes.get_int_or("inverse", 0) != 0;
  const bool onesided = ctx.node.attributes.get_int_or("onesided", 0) != 0;
  int64_t n = inverse && onesided ? 2 * (x.shape[axis] - 1) : x.shape[axis];
  if (ctx.has_input(1)) n = scalar_int(ctx, 1, "dft_length");
  if (n <= 0) ctx.fail("dft_length must be positive");
  Shape out = x.shape;
  out[axis] = onesided && !inverse ? n / 2 + 1 : n;
  out.back() = inverse && onesided ? 1 : 2;
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_stft(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    ctx.fail("signal must be [batch, length, 1 or 2], got " + shape_to_string(x.shape));
  const int64_t step = scalar_int(ctx, 1, "frame_step");
  int64_t frame = x.shape[1];
  if (ctx.has_input(2)) frame = ctx.input(2).shape.at(0);
  if (ctx.has_input(3)) frame = scalar_int(ctx, 3, "frame_length");
  if (step <= 0 || frame <= 0 || frame > x.shape[1])
    ctx.fail("frame_step and frame_length must be positive and fit the signal");
  const bool onesided = ctx.node.attributes.get_int_or("onesided", 1) != 0;
  const int64_t frames = 1 + (x.shape[1] - frame) / step;
  return {{x.dtype, {x.shape[0], frames, onesided ? frame / 2 + 1 : frame, 2}}};
}

}  // namespace

EMBER_SCHEMA("HannWindow", "", infer_window);
EMBER_SCHEMA("HammingWindow", "", infer_window);
EMBER_SCHEMA("BlackmanWindow", "", infer_window);
EMBER_SCHEMA("MelWeightMatrix", "", infer_mel);
EMBER_SCHEMA("DFT", "", infer_dft);
EMBER_SCHEMA("STFT", "", infer_stft);

}  // namespace ember
