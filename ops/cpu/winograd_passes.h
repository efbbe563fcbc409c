// The per-instruction-set passes of the Winograd convolution (ops/cpu/winograd_conv.cc):
// the input and output transforms of a chunk of tiles and the register block of the
// products. Blocks of 8 channels run on AVX2 (winograd_passes_avx2.cc), blocks of 16 on
// AVX-512 (winograd_passes_avx512.cc, the one file compiled for AVX-512, called only on
// a CPU that has it). Both instantiate winograd_passes_body.h, written once over a
// vector type.
#pragma once

#include <cstdint>

namespace ember::winograd {

// F(m x m, 3x3): m x m outputs per tile from (m + 2) x (m + 2) inputs, (m + 2)^2 points.
enum class Form { F2x2, F4x4 };

constexpr int outputs_of(Form f) { return f == Form::F2x2 ? 2 : 4; }
constexpr int inputs_of(Form f) { return outputs_of(f) + 2; }
constexpr int points_of(Form f) { return inputs_of(f) * inputs_of(f); }

// G, which takes a filter's 3 taps to the form's points (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks"): F(4x4) on the points 0, 1, -1, 2, -2
// and infinity, F(2x2) on 0, 1, -1 and infinity.
inline constexpr double kG4[6][3] = {{1 / 4., 0, 0},           {-1 / 6., -1 / 6., -1 / 6.},
                                     {-1 / 6., 1 / 6., -1 / 6.}, {1 / 24., 1 / 12., 1 / 6.},
                                     {1 / 24., -1 / 12., 1 / 6.}, {0, 0, 1}};
inline constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

// Where the output tiles are: tiles_h x tiles_w per image, numbered image by image; and
// how many tile rows V and M hold per point (a pass's chunk).
struct Grid {
  int64_t blocks_in, blocks_out, h, w, oh, ow, pad_h, pad_w, tiles_h, tiles_w, tiles;
  int64_t chunk = 0;
};

// What the output transform adds and bounds as it writes Y: min(hi, max(lo, y + bias +
// residual)); bias and residual may be null.
struct Epilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;
  float lo = -__builtin_inff(), hi = __builtin_inff();
};

struct Passes {
  int64_t lanes;       // channels per block: one vector
  int64_t block_rows;  // tiles per register block of the products
  // V[point][tile - first][c] for the items [begin, end), an item being one tile of
  // the chunk from `first` and one block of input channels (item = tile * blocks_in +
  // block); zeros where the tile reaches into the pads.
  void (*transform_inputs)(Form, const Grid&, const float* x, float* v, int64_t first, int64_t begin, int64_t end);
  // Y's tiles from M[point][tile - first][k] for the items [begin, end) (one tile and
  // block of filters each), through the epilogue.
  void (*transform_outputs)(Form, const Grid&, const float* m, const Epilogue&, float* y, int64_t first,
                            int64_t begin, int64_t end);
  // m[r][0, width) = sum over d < depth of v[r * v_stride + d] * u[d * width + j], for r
  // < block_rows; width is 2 * lanes, or lanes for a last, narrow panel of filters.
  void (*multiply_block)(const float* v, int64_t v_stride, const float* u, int64_t width, int64_t depth, float* m,
                         int64_t m_stride);
};

const Passes& avx2_passes();
// Only on a CPU with AVX-512 F/BW/DQ/VL (vector_math.h's cpu_supports).
const Passes& avx512_passes();

}  // namespace ember::winograd
