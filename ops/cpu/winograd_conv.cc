#include "ops/cpu/winograd_conv.h"

#include "graph/elementwise_table.h"
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/packed_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace ember {

namespace {

using dnnl::memory;

constexpr int64_t kLanes = 8;  // one AVX2 vector per block

// The transforms of F(m, 3), one column or row of vectors at a time (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks"): B^T d takes kIn inputs into the
// transform domain, A^T m its kIn products back to kOut outputs, and G the filter's 3
// taps to kIn points.

// F(4x4, 3x3), on the points 0, 1, -1, 2, -2 and infinity: 36 products per 16 outputs.
struct F4x4 {
  static constexpr int kOut = 4, kIn = 6;
  static constexpr const char* kName = "winograd F(4x4,3x3)";
  static constexpr double kG[kIn][3] = {{1 / 4., 0, 0},           {-1 / 6., -1 / 6., -1 / 6.},
                                        {-1 / 6., 1 / 6., -1 / 6.}, {1 / 24., 1 / 12., 1 / 6.},
                                        {1 / 24., -1 / 12., 1 / 6.}, {0, 0, 1}};

  static void input(const __m256* d, __m256* r) {
    const __m256 four = _mm256_set1_ps(4.f), five = _mm256_set1_ps(5.f), two = _mm256_set1_ps(2.f);
    r[0] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[2], _mm256_mul_ps(four, d[0])), d[4]);
    const __m256 a = _mm256_fnmadd_ps(four, d[2], d[4]), b = _mm256_fnmadd_ps(four, d[1], d[3]);
    r[1] = _mm256_add_ps(a, b);
    r[2] = _mm256_sub_ps(a, b);
    const __m256 e = _mm256_sub_ps(d[4], d[2]), f = _mm256_mul_ps(two, _mm256_sub_ps(d[3], d[1]));
    r[3] = _mm256_add_ps(e, f);
    r[4] = _mm256_sub_ps(e, f);
    r[5] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[3], _mm256_mul_ps(four, d[1])), d[5]);
  }

  static void output(const __m256* m, __m256* o) {
    const __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
    const __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
    o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), d34, d12);
    o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), s34, s12);
    o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), d34, d12), m[5]);
  }
};

// F(2x2, 3x3), on the points 0, 1, -1 and infinity: 16 products per 4 outputs. Fewer
// saved multiplications (2.25x against 4x), but transformed filters 16/9 of the
// filters' bytes where F(4x4) has 36/9, and tiles that fit small images (7x7 is 16).
struct F2x2 {
  static constexpr int kOut = 2, kIn = 4;
  static constexpr const char* kName = "winograd F(2x2,3x3)";
  static constexpr double kG[kIn][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

  static void input(const __m256* d, __m256* r) {
    r[0] = _mm256_sub_ps(d[0], d[2]);
    r[1] = _mm256_add_ps(d[1], d[2]);
    r[2] = _mm256_sub_ps(d[2], d[1]);
    r[3] = _mm256_sub_ps(d[1], d[3]);
  }

  static void output(const __m256* m, __m256* o) {
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
    o[1] = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
  }
};

// The products' register block (ops/cpu/packed_gemm.h): kRows tiles by a panel of up
// to 16 filters.
constexpr int64_t kRows = kBlockRows;
constexpr int64_t kPanel = kPanelColumns;

int64_t panel_width(int64_t k0, int64_t filters) {
  return std::min(kPanel, filters - k0);  // 16, or 8 for the last panel of 8 * odd filters
}

// ONNX weights [K, C, 3, 3] transformed, U[point] = G g G^T (in double: the transform's
// rounding is then only the final one), and packed for the products: per point, the
// filters in panels of 16 (8 for an odd last one), each panel C rows of its width.
template <class Tile>
std::vector<float> transformed_filters(const float* w, int64_t channels, int64_t filters) {
  constexpr int kIn = Tile::kIn;
  std::vector<float> u(static_cast<size_t>(kIn * kIn * channels * filters));
  for (int64_t k = 0; k < filters; ++k) {
    const int64_t k0 = k / kPanel * kPanel, width = panel_width(k0, filters);
    for (int64_t c = 0; c < channels; ++c) {
      const float* g = w + (k * channels + c) * 9;
      double gg[kIn][3];  // G g
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < 3; ++j)
          gg[i][j] = Tile::kG[i][0] * g[j] + Tile::kG[i][1] * g[3 + j] + Tile::kG[i][2] * g[6 + j];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j)
          u[((i * kIn + j) * filters + k0) * channels + c * width + (k - k0)] = static_cast<float>(
              gg[i][0] * Tile::kG[j][0] + gg[i][1] * Tile::kG[j][1] + gg[i][2] * Tile::kG[j][2]);
    }
  }
  return u;
}

// Where the output tiles are: tiles_h x tiles_w per image, numbered image by image.
struct TileGrid {
  int64_t blocks_in, blocks_out, h, w, oh, ow, pad_h, pad_w, tiles_h, tiles_w, tiles;
};

// The tiles a pass transforms, multiplies and writes back at once: V and M together
// about kChunkBytes, so they stay in the caches between the three steps (one pass over
// all of Inception's 147x147 image, V and M 19 MB, ran at half the direct conv's speed).
// Fewer than kMinChunk tiles per pass and the filters U, read once per pass, cost more.
constexpr int64_t kChunkBytes = int64_t{3} << 20;
constexpr int64_t kMinChunk = 64;

int64_t chunk_tiles(int64_t tiles, int64_t points, int64_t channels, int64_t filters) {
  const int64_t per_tile = points * (channels + filters) * static_cast<int64_t>(sizeof(float));
  const int64_t wanted = std::max(kMinChunk, kChunkBytes / per_tile);
  const int64_t chunks = (tiles + wanted - 1) / wanted;
  const int64_t even = (tiles + chunks - 1) / chunks;  // the last chunk is not a sliver
  return (even + kRows - 1) / kRows * kRows;            // whole register blocks
}

template <class Tile>
class WinogradConv final : public Kernel {
 public:
  WinogradConv(KernelInit& init, const ew::Activation& act, const TileGrid& grid)
      : grid_(grid), has_bias_(init.inputs.size() > 2 && init.inputs[2].present()),
        has_residual_(init.inputs.size() > 3 && init.inputs[3].present()) {
    if (act.is(ew::UnaryFunction::Relu)) lo_ = 0.f;
    else if (act.kind == ew::Activation::Kind::Clip) lo_ = act.params.alpha, hi_ = act.params.beta;
    else after_ = act;
    const int64_t channels = grid.blocks_in * kLanes, filters = grid.blocks_out * kLanes;
    chunk_ = chunk_tiles(grid.tiles, kPoints, channels, filters);

    u_ = transformed_weights(init);
    WorkspaceLayout ws;
    v_at_ = ws.take(static_cast<size_t>(kPoints * chunk_ * channels) * sizeof(float));
    m_at_ = ws.take(static_cast<size_t>(kPoints * chunk_ * filters) * sizeof(float));
    init.workspace_bytes = ws.total();
  }

  const char* variant() const override { return Tile::kName; }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    const float* bias = has_bias_ ? args.inputs[2]->data_as<float>() : nullptr;
    const float* z = has_residual_ ? args.inputs[3]->data_as<float>() : nullptr;
    float* y = args.outputs[0]->data_as<float>();
    float* v = static_cast<float*>(workspace_at(args, v_at_));
    float* m = static_cast<float*>(workspace_at(args, m_at_));
    for (int64_t first = 0; first < grid_.tiles; first += chunk_) {
      const int64_t count = std::min(chunk_, grid_.tiles - first);
      transform_inputs(x, v, first, count);
      const int64_t blocks = (count + kRows - 1) / kRows;
      clear_rows(v, count, blocks * kRows);
      multiply(v, m, blocks);
      transform_outputs(m, bias, z, y, first, count);
    }
    if (after_.kind == ew::Activation::Kind::Function) {
      parallel_for(args.outputs[0]->numel(), 8, [&](int64_t b, int64_t e) {
        vector_unary(after_.function, after_.params, y + b, y + b, e - b);
      });
    }
  }

 private:
  static constexpr int kOut = Tile::kOut, kIn = Tile::kIn;
  static constexpr int64_t kPoints = kIn * kIn;

  // U, packed: made once per session and weight (ops/cpu/dnnl_util.h's own_packed_form).
  std::shared_ptr<const std::vector<float>> transformed_weights(KernelInit& init) const {
    const int64_t channels = grid_.blocks_in * kLanes, filters = grid_.blocks_out * kLanes;
    const memory::desc w_plain = plain_f32_desc(init.inputs[1].shape);
    return own_packed_form(init, 1, w_plain, kPoints * channels * filters, [&] {
      const memory w = constant_as(init, 1, w_plain, w_plain);
      return transformed_filters<Tile>(static_cast<const float*>(w.get_data_handle()), channels, filters);
    });
  }

  // V's rows [from, to) of every point: zeros, so that the last register block's rows
  // past the pass's tiles, whose products no output reads, hold no stale or
  // uninitialized bytes (a NaN or a denormal there costs time, not correctness).
  void clear_rows(float* v, int64_t from, int64_t to) const {
    const int64_t channels = grid_.blocks_in * kLanes;
    if (from < to)
      for (int64_t point = 0; point < kPoints; ++point)
        std::fill(v + (point * chunk_ + from) * channels, v + (point * chunk_ + to) * channels, 0.f);
  }

  // M[point][tile][k] = sum over c of V[point][tile][c] * U[point][c][k], for `blocks`
  // blocks of kRows tiles: one point and panel of filters per item, so the panel stays
  // in L1 across the blocks. Against oneDNN 2.6's batched matmul (gemm:jit, which packs
  // its B on every call) on the same V and U, three convs in a row: 256 channels at
  // 14x14 batch 1  3.4 -> 2.5 ms, batch 8  19.6 -> 17.2; 512 at 7x7 (F(2x2))  5.4 ->
  // 4.15 and 31 -> 21.5; 512 at 14x14  13.6 -> 10.2 and 66 -> 62; 64 at 56x56 and 96
  // at 35x35 within 10% either way.
  void multiply(const float* v, float* m, int64_t blocks) const {
    const int64_t channels = grid_.blocks_in * kLanes, filters = grid_.blocks_out * kLanes;
    const int64_t panels = (filters + kPanel - 1) / kPanel;
    const float* u = u_->data();
    parallel_for(kPoints * panels, 2 * blocks * kRows * channels * kPanel, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t point = item / panels, k0 = item % panels * kPanel;
        const float* panel = u + (point * filters + k0) * channels;
        const bool wide = panel_width(k0, filters) == kPanel;
        for (int64_t block = 0; block < blocks; ++block) {
          const int64_t row = point * chunk_ + block * kRows;
          if (wide) multiply_block_16(v + row * channels, channels, panel, channels, m + row * filters + k0, filters);
          else multiply_block_8(v + row * channels, channels, panel, channels, m + row * filters + k0, filters);
        }
      }
    });
  }

  // V[point][tile][c] for the chunk's tiles, one tile and block of 8 channels per item.
  void transform_inputs(const float* x, float* v, int64_t first, int64_t count) const {
    const TileGrid& g = grid_;
    const int64_t channels = g.blocks_in * kLanes;
    parallel_for(count * g.blocks_in, 40 * kPoints, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t tile = item / g.blocks_in, block = item % g.blocks_in;
        const int64_t image = (first + tile) / (g.tiles_h * g.tiles_w), at = (first + tile) % (g.tiles_h * g.tiles_w);
        const int64_t y0 = at / g.tiles_w * kOut - g.pad_h, x0 = at % g.tiles_w * kOut - g.pad_w;
        const float* plane = x + (image * g.blocks_in + block) * g.h * g.w * kLanes;
        __m256 d[kIn][kIn];
        load_input_tile(plane, y0, x0, d);
        __m256 col[kIn], r[kIn][kIn];
        for (int j = 0; j < kIn; ++j) {
          for (int i = 0; i < kIn; ++i) col[i] = d[i][j];
          __m256 out[kIn];
          Tile::input(col, out);
          for (int i = 0; i < kIn; ++i) r[i][j] = out[i];
        }
        float* to = v + tile * channels + block * kLanes;
        for (int i = 0; i < kIn; ++i) {
          __m256 out[kIn];
          Tile::input(r[i], out);
          for (int j = 0; j < kIn; ++j) _mm256_storeu_ps(to + (i * kIn + j) * chunk_ * channels, out[j]);
        }
      }
    });
  }

  // The kIn x kIn input tile at (y0, x0) of one block's plane, zero outside it (the pads).
  void load_input_tile(const float* plane, int64_t y0, int64_t x0, __m256 (&d)[kIn][kIn]) const {
    const int64_t h = grid_.h, w = grid_.w;
    if (y0 >= 0 && x0 >= 0 && y0 + kIn <= h && x0 + kIn <= w) {
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) d[i][j] = _mm256_loadu_ps(plane + ((y0 + i) * w + x0 + j) * kLanes);
      return;
    }
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kIn; ++j) {
        const int64_t yy = y0 + i, xx = x0 + j;
        d[i][j] = yy >= 0 && yy < h && xx >= 0 && xx < w ? _mm256_loadu_ps(plane + (yy * w + xx) * kLanes)
                                                         : _mm256_setzero_ps();
      }
  }

  // Y's kOut x kOut tiles from M[point][tile][k], with bias, residual and bounds, one
  // tile and block of 8 filters per item.
  void transform_outputs(const float* m, const float* bias, const float* z, float* y, int64_t first,
                         int64_t count) const {
    const TileGrid& g = grid_;
    const int64_t filters = g.blocks_out * kLanes;
    const __m256 lo = _mm256_set1_ps(lo_), hi = _mm256_set1_ps(hi_);
    parallel_for(count * g.blocks_out, 30 * kPoints, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t tile = item / g.blocks_out, block = item % g.blocks_out;
        const int64_t image = (first + tile) / (g.tiles_h * g.tiles_w), at = (first + tile) % (g.tiles_h * g.tiles_w);
        const int64_t y0 = at / g.tiles_w * kOut, x0 = at % g.tiles_w * kOut;
        const float* from = m + tile * filters + block * kLanes;
        __m256 col[kIn], r[kOut][kIn];
        for (int j = 0; j < kIn; ++j) {
          for (int i = 0; i < kIn; ++i) col[i] = _mm256_loadu_ps(from + (i * kIn + j) * chunk_ * filters);
          __m256 out[kOut];
          Tile::output(col, out);
          for (int i = 0; i < kOut; ++i) r[i][j] = out[i];
        }
        const __m256 b = bias ? _mm256_loadu_ps(bias + block * kLanes) : _mm256_setzero_ps();
        const int64_t plane = (image * g.blocks_out + block) * g.oh * g.ow * kLanes;
        const int rows = static_cast<int>(std::min<int64_t>(kOut, g.oh - y0));
        const int cols = static_cast<int>(std::min<int64_t>(kOut, g.ow - x0));
        for (int i = 0; i < rows; ++i) {
          __m256 out[kOut];
          Tile::output(r[i], out);
          const int64_t row = plane + ((y0 + i) * g.ow + x0) * kLanes;
          for (int j = 0; j < cols; ++j) {
            __m256 value = _mm256_add_ps(out[j], b);
            if (z) value = _mm256_add_ps(value, _mm256_loadu_ps(z + row + j * kLanes));
            // The bound first: NaN stays NaN, as through max(0, x).
            value = _mm256_min_ps(hi, _mm256_max_ps(lo, value));
            _mm256_storeu_ps(y + row + j * kLanes, value);
          }
        }
      }
    });
  }

  TileGrid grid_;
  int64_t chunk_ = 0;
  bool has_bias_, has_residual_;
  float lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
  ew::Activation after_;  // kind None where the bounds do it all
  std::shared_ptr<const std::vector<float>> u_;
  size_t v_at_ = 0, m_at_ = 0;
};

// The grid of `init`'s conv in output tiles of `tile` x `tile`, or "" with the reason it
// is not a Winograd conv in blocks of 8.
std::string grid_of(const KernelInit& init, int64_t tile, TileGrid* grid) {
  const Shape& x = init.inputs[0].shape;
  const Shape& w = init.inputs[1].shape;
  const Shape& y = init.outputs[0].shape;
  if (x.size() != 5 || x.back() != kLanes || y.size() != 5 || y.back() != kLanes)
    return "X and Y are not 2-D images in blocks of 8";
  if (init.values[1] == nullptr) return "the weights are not constant";
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != DType::Float32) return "not float32";
  if (init.outputs[0].dtype != DType::Float32 || init.dense_math != DenseMath::Float32) return "not float32 math";
  if (init.node.attributes.get_int_or("group", 1) != 1) return "a grouped convolution";
  if (w.size() != 4 || w[2] != 3 || w[3] != 3) return "not a 3x3 filter";
  const WindowGeometry g = forward_window(init.node, spatial_dims(x, Layout::ChannelsBlocked), {3, 3}, false);
  for (int d = 0; d < 2; ++d)
    if (g.strides[d] != 1 || g.dilations[d] != 1) return "strided or dilated";
  if (init.inputs.size() > 3 && init.inputs[3].present() && init.inputs[3].shape != y)
    return "the residual broadcasts";
  *grid = {.blocks_in = x[1], .blocks_out = y[1], .h = x[2], .w = x[3], .oh = y[2], .ow = y[3],
           .pad_h = g.pads_begin[0], .pad_w = g.pads_begin[1], .tiles_h = (y[2] + tile - 1) / tile,
           .tiles_w = (y[3] + tile - 1) / tile, .tiles = 0};
  grid->tiles = x[0] * grid->tiles_h * grid->tiles_w;
  return "";
}

}  // namespace

WinogradTile winograd_tile_for(const KernelInit& init) {
  TileGrid g4, g2;
  if (!grid_of(init, F4x4::kOut, &g4).empty() || !grid_of(init, F2x2::kOut, &g2).empty()) return WinogradTile::None;
  // Measured against oneDNN 2.6's jit:avx2 direct conv (2 threads, Zen 3; three such
  // convs in a row, their profiled times, direct -> Winograd, ms):
  //   64 -> 64 at 56x56:  batch 1  3.4 -> 1.5,   batch 8  27-36 -> 21-24
  //   96 -> 96 at 35x35:  batch 1  3.4 -> 1.3,   batch 8  26.5 -> 12.2
  //   256 -> 256 at 14x14 (16 tiles an image): batch 1  5.2 -> 3.2,  batch 8  33 -> 15
  //   32 -> 32 at 147x147 (Inception's stem; one conv): batch 1  2.25 -> 1.6, batch 8
  //     24 -> 23; 32 -> 64 there: 4.45 -> 3.0 and 49 -> 36;
  //   16 -> 16 at 112x112 (one conv): batch 1 even, batch 8  3.6 -> 5.5: the transforms,
  //     linear in the channels where the products are quadratic, pay from 32 channels.
  if (g4.blocks_in < 4 || g4.blocks_out < 4) return WinogradTile::None;
  if (g4.tiles_h * g4.tiles_w >= 16) return WinogradTile::F4x4;
  // Smaller images: F(4x4) ran 512 -> 512 at 7x7 (4 tiles an image) slower at batch 1
  // and 2 (5.5 -> 11.5, 7.0 -> 10.5) and faster from batch 4 (17.7 -> 12.5; batch 8
  // 44 -> 19), but its U, 4x the filters of a network's widest layers, grew ResNet-18's
  // packed weights at batch 8 from 72 to 153 MiB. F(2x2) at 7x7 (16 tiles an image),
  // its U 1.8x the filters:
  //   512 -> 512 (two convs): batch 1  6.0 -> 5.1,  batch 2  9.1 -> 8.3,  batch 8  43 -> 29
  //   256 -> 256: batch 1  1.1 -> 0.7,  batch 8  11 -> 7;  128 -> 128: 0.33 -> 0.23 and
  //     2.25 -> 1.32;  64 -> 64: batch 1 even, batch 8  0.71 -> 0.57
  //   128 -> 32 (DenseNet's; one conv): batch 1  0.06 -> 0.08, batch 8  0.29 -> 0.22;
  //     32 -> 32: 0.018 -> 0.033 and even: convs this small cost less than the passes.
  if (g2.blocks_in < 8 || g2.blocks_out < 8) return WinogradTile::None;
  return g2.tiles >= 16 ? WinogradTile::F2x2 : WinogradTile::None;
}

std::unique_ptr<Kernel> make_winograd_conv(KernelInit& init, const ew::Activation& act, WinogradTile tile,
                                           std::string* why_not) {
  if (tile == WinogradTile::None) {
    *why_not = "no Winograd tile was chosen";
    return nullptr;
  }
  TileGrid grid;
  const int64_t side = tile == WinogradTile::F2x2 ? F2x2::kOut : F4x4::kOut;
  if (!(*why_not = grid_of(init, side, &grid)).empty()) return nullptr;
  if (act.kind == ew::Activation::Kind::Function && !act.is(ew::UnaryFunction::Relu) &&
      !has_vector_form(act.function)) {
    *why_not = "its fused activation has no vector form";
    return nullptr;
  }
  if (grid.tiles == 0 || grid.blocks_out == 0) {
    *why_not = "an empty output";
    return nullptr;
  }
  if (tile == WinogradTile::F2x2) return std::make_unique<WinogradConv<F2x2>>(init, act, grid);
  return std::make_unique<WinogradConv<F4x4>>(init, act, grid);
}

}  // namespace ember
