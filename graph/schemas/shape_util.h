// Helpers shared by the shape/movement schemas and their CPU kernels: reading
// shape-determining inputs and normalizing axes the same way in both places.
#pragma once

#include "graph/schema.h"

#include <ember/core/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

// The elements of an integer tensor (any int dtype) as int64; raises for other dtypes.
std::vector<int64_t> read_ints(const Tensor& t, const InferContext& ctx, const char* what);
// The elements of a float tensor (float32/float64/float16) as doubles.
std::vector<double> read_floats(const Tensor& t, const InferContext& ctx, const char* what);

// Maps axis in [-rank, rank) to [0, rank); raises naming the node otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const InferContext& ctx);
// The same for a list; raises on duplicates.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const InferContext& ctx);

// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Bytes per element for movement kernels; 0 when the dtype is not byte-addressable
// (strings, packed 4-bit types).
size_t movement_elem_size(DType dtype);

// Slice: per input dim, the first index, the step and the output length.
struct SliceParams {
  std::vector<int64_t> starts, steps;
  Shape out;
};
SliceParams slice_params(const InferContext& ctx);

// Split: the output lengths along the axis.
struct SplitParams {
  int64_t axis = 0;
  std::vector<int64_t> sizes;
};
SplitParams split_params(const InferContext& ctx, size_t num_outputs);

// Pad: per input dim, elements added before/after (negative removes), and the mode.
struct PadParams {
  std::vector<int64_t> begin, end;
  std::string mode;
};
PadParams pad_params(const InferContext& ctx);

// Resize/Upsample: output shape, per-dim scale and roi, and the attributes.
struct ResizeParams {
  Shape out;
  std::vector<double> scales;          // per dim, as used in coordinate transforms
  std::vector<double> out_lengths;     // per dim, scale * in unrounded (the reference's
                                       // align_corners/tf_crop_and_resize output length)
  std::vector<double> roi_start, roi_end;  // per dim (tf_crop_and_resize)
  std::string mode;                    // nearest, linear, cubic
  std::string coordinate_mode;         // half_pixel, asymmetric, ...
  std::string nearest_mode;            // round_prefer_floor, ..., or "simple" (opset < 11)
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;              // linear/cubic: stretch the filter when downsampling
  double extrapolation_value = 0;
};
ResizeParams resize_params(const InferContext& ctx);

}  // namespace ember
