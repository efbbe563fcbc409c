// com.ember RotateHalfEmbedding: rotary position embedding as transformers' models write
// it (Llama, Mistral, Qwen, Gemma, Phi-3, OLMo), found by graph/passes/fuse_rotate_half.cc:
//
//   Y = X * Cos + Concat(-X[..., SecondStart:second_end], X[..., 0:FirstEnd]) * Sin
//
// seven nodes (two Slices, Neg, Concat, two Muls, Add) and six passes over memory in
// one. With the split at h of X's width d, rotate_half(X)[j] = -X[j + h] for j < d - h
// and X[j - (d - h)] after.
//   inputs: X, Cos, Sin, FirstEnd, SecondStart (one-element integer tensors, as the
//     Slices read them; exporters compute h = d / 2 from X's shape)
//   attributes: slice_axis (the Slices' axes), concat_axis, second_end (the second
//     Slice's end), as the exporter wrote them
// Where rotate_half_fused_for does not hold, every kernel declines and the planner runs
// the decomposition, whose own inference then applies.
#include "graph/schemas/rotate_half_embedding.h"

#include "graph/schema.h"

#include <algorithm>
#include <string>

namespace ember {

namespace {

// A Slice bound on an axis of `width` entries, as Slice clamps it.
int64_t clamped(int64_t bound, int64_t width) {
  if (bound < 0) bound += width;
  return std::clamp<int64_t>(bound, 0, width);
}

bool one_integer(const Tensor* t, int64_t* out) {
  if (!t || t->numel() != 1) return false;
  if (t->dtype() == DType::Int64) *out = *t->data_as<int64_t>();
  else if (t->dtype() == DType::Int32) *out = *t->data_as<int32_t>();
  else return false;
  return true;
}

// X's type: exact where rotate_half_fused_for holds, and no kernel takes the node where
// it does not.
std::vector<TensorType> infer_rotate_half_embedding(const InferContext& ctx) {
  if (ctx.num_inputs() != 5)
    ctx.fail("takes 5 inputs (X, Cos, Sin, FirstEnd, SecondStart), got " + std::to_string(ctx.num_inputs()));
  return {ctx.input(0)};
}

}  // namespace

bool rotate_half_fused_for(const Node& node, const Shape& x, const Shape& cos, const Shape& sin,
                           const Tensor* first_end, const Tensor* second_start, RotateHalfSplit* split) {
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return false;
  const auto last = [&](int64_t axis) { return axis == -1 || axis == rank - 1; };
  if (!last(node.attributes.get_int_or("slice_axis", 0)) || !last(node.attributes.get_int_or("concat_axis", 0)))
    return false;
  const int64_t width = x.back();
  int64_t first = 0, second = 0;
  if (!one_integer(first_end, &first) || !one_integer(second_start, &second)) return false;
  const int64_t half = clamped(first, width);
  if (half != clamped(second, width) || half <= 0 || half >= width) return false;
  if (clamped(node.attributes.get_int_or("second_end", 0), width) != width) return false;
  if (cos.empty() || sin.empty() || cos.back() != width || sin.back() != width) return false;
  if (!broadcasts_onto(cos, x) || !broadcasts_onto(sin, x)) return false;
  *split = {width, half};
  return true;
}

EMBER_SCHEMA("RotateHalfEmbedding", "com.ember", infer_rotate_half_embedding);

}  // namespace ember
