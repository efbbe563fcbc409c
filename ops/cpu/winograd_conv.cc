#include "ops/cpu/winograd_conv.h"

#include "graph/elementwise_table.h"
#include "graph/schemas/window.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/cpu/winograd_passes.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace ember {

namespace {

using dnnl::memory;
using winograd::Form;
using winograd::Grid;
using winograd::Passes;

const char* name_of(Form f) { return f == Form::F2x2 ? "winograd F(2x2,3x3)" : "winograd F(4x4,3x3)"; }

// The passes of X's and Y's block of `lanes` channels, or null where this CPU has none.
const Passes* passes_for(int64_t lanes) {
  if (lanes == 8) return &winograd::avx2_passes();
  if (lanes == 16 && cpu_supports(CpuIsa::Avx512)) return &winograd::avx512_passes();
  return nullptr;
}

// ONNX weights [K, C, 3, 3] transformed, U[point] = G g G^T (in double: the transform's
// rounding is then only the final one), and packed for the products: per point, the
// filters in panels of `panel` (half that for an odd last one), each panel C rows of its
// width.
std::vector<float> transformed_filters(Form f, const float* w, int64_t channels, int64_t filters, int64_t panel) {
  const int in = winograd::inputs_of(f);
  const auto& kg = f == Form::F2x2 ? winograd::kG2 : winograd::kG4;
  std::vector<float> u(static_cast<size_t>(in * in * channels * filters));
  for (int64_t k = 0; k < filters; ++k) {
    const int64_t k0 = k / panel * panel, width = std::min(panel, filters - k0);
    for (int64_t c = 0; c < channels; ++c) {
      const float* g = w + (k * channels + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < in; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = kg[i][0] * g[j] + kg[i][1] * g[3 + j] + kg[i][2] * g[6 + j];
      for (int i = 0; i < in; ++i)
        for (int j = 0; j < in; ++j)
          u[((i * in + j) * filters + k0) * channels + c * width + (k - k0)] =
              static_cast<float>(gg[i][0] * kg[j][0] + gg[i][1] * kg[j][1] + gg[i][2] * kg[j][2]);
    }
  }
  return u;
}

// The tiles a pass transforms, multiplies and writes back at once: V and M together
// about kChunkBytes, so they stay in the caches between the three steps (one pass over
// all of Inception's 147x147 image, V and M 19 MB, ran at half the direct conv's speed).
// Fewer than kMinChunk tiles per pass and the filters U, read once per pass, cost more.
constexpr int64_t kChunkBytes = int64_t{3} << 20;
constexpr int64_t kMinChunk = 64;

int64_t chunk_tiles(int64_t tiles, int64_t points, int64_t channels, int64_t filters, int64_t rows) {
  const int64_t per_tile = points * (channels + filters) * static_cast<int64_t>(sizeof(float));
  const int64_t wanted = std::max(kMinChunk, kChunkBytes / per_tile);
  const int64_t chunks = (tiles + wanted - 1) / wanted;
  const int64_t even = (tiles + chunks - 1) / chunks;  // the last chunk is not a sliver
  return (even + rows - 1) / rows * rows;               // whole register blocks
}

class WinogradConv final : public Kernel {
 public:
  WinogradConv(KernelInit& init, const ew::Activation& act, Form form, const Grid& grid, const Passes& passes)
      : form_(form), points_(winograd::points_of(form)), grid_(grid), passes_(passes),
        has_bias_(init.inputs.size() > 2 && init.inputs[2].present()),
        has_residual_(init.inputs.size() > 3 && init.inputs[3].present()) {
    if (act.is(ew::UnaryFunction::Relu)) lo_ = 0.f;
    else if (act.kind == ew::Activation::Kind::Clip) lo_ = act.params.alpha, hi_ = act.params.beta;
    else after_ = act;
    grid_.chunk = chunk_tiles(grid.tiles, points_, channels(), filters(), passes.block_rows);

    u_ = transformed_weights(init);
    WorkspaceLayout ws;
    v_at_ = ws.take(static_cast<size_t>(points_ * grid_.chunk * channels()) * sizeof(float));
    m_at_ = ws.take(static_cast<size_t>(points_ * grid_.chunk * filters()) * sizeof(float));
    init.workspace_bytes = ws.total();
  }

  const char* variant() const override { return name_of(form_); }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    const winograd::Epilogue epilogue{.bias = has_bias_ ? args.inputs[2]->data_as<float>() : nullptr,
                                      .residual = has_residual_ ? args.inputs[3]->data_as<float>() : nullptr,
                                      .lo = lo_,
                                      .hi = hi_};
    float* y = args.outputs[0]->data_as<float>();
    float* v = static_cast<float*>(workspace_at(args, v_at_));
    float* m = static_cast<float*>(workspace_at(args, m_at_));
    const int64_t rows = passes_.block_rows;
    for (int64_t first = 0; first < grid_.tiles; first += grid_.chunk) {
      const int64_t count = std::min(grid_.chunk, grid_.tiles - first);
      parallel_for(count * grid_.blocks_in, 40 * points_, [&](int64_t begin, int64_t end) {
        passes_.transform_inputs(form_, grid_, x, v, first, begin, end);
      });
      const int64_t blocks = (count + rows - 1) / rows;
      clear_rows(v, count, blocks * rows);
      multiply(v, m, blocks);
      parallel_for(count * grid_.blocks_out, 30 * points_, [&](int64_t begin, int64_t end) {
        passes_.transform_outputs(form_, grid_, m, epilogue, y, first, begin, end);
      });
    }
    if (after_.kind == ew::Activation::Kind::Function) {
      parallel_for(args.outputs[0]->numel(), 8, [&](int64_t b, int64_t e) {
        vector_unary(after_.function, after_.params, y + b, y + b, e - b);
      });
    }
  }

 private:
  int64_t channels() const { return grid_.blocks_in * passes_.lanes; }
  int64_t filters() const { return grid_.blocks_out * passes_.lanes; }
  // Filters per packed panel: two vectors, the register block's width.
  int64_t panel() const { return 2 * passes_.lanes; }

  // U, packed: made once per session and weight (ops/cpu/dnnl_util.h's own_packed_form).
  std::shared_ptr<const std::vector<float>> transformed_weights(KernelInit& init) const {
    const memory::desc w_plain = plain_f32_desc(init.inputs[1].shape);
    return own_packed_form(init, 1, w_plain, points_ * channels() * filters(), [&] {
      const memory w = constant_as(init, 1, w_plain, w_plain);
      return transformed_filters(form_, static_cast<const float*>(w.get_data_handle()), channels(), filters(),
                                 panel());
    });
  }

  // V's rows [from, to) of every point: zeros, so that the last register block's rows
  // past the pass's tiles, whose products no output reads, hold no stale or
  // uninitialized bytes (a NaN or a denormal there costs time, not correctness).
  void clear_rows(float* v, int64_t from, int64_t to) const {
    const int64_t chunk = grid_.chunk, c = channels();
    if (from < to)
      for (int64_t point = 0; point < points_; ++point)
        std::fill(v + (point * chunk + from) * c, v + (point * chunk + to) * c, 0.f);
  }

  // M[point][tile][k] = sum over c of V[point][tile][c] * U[point][c][k], for `blocks`
  // blocks of tiles: one point and panel of filters per item, so the panel stays in L1
  // across the blocks. Against oneDNN 2.6's batched matmul (gemm:jit, which packs its B
  // on every call) on the same V and U, AVX2, three convs in a row: 256 channels at
  // 14x14 batch 1  3.4 -> 2.5 ms, batch 8  19.6 -> 17.2; 512 at 7x7 (F(2x2))  5.4 ->
  // 4.15 and 31 -> 21.5; 512 at 14x14  13.6 -> 10.2 and 66 -> 62; 64 at 56x56 and 96
  // at 35x35 within 10% either way.
  void multiply(const float* v, float* m, int64_t blocks) const {
    const int64_t c = channels(), k = filters(), chunk = grid_.chunk, rows = passes_.block_rows;
    const int64_t panels = (k + panel() - 1) / panel();
    const float* u = u_->data();
    parallel_for(points_ * panels, 2 * blocks * rows * c * panel(), [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t point = item / panels, k0 = item % panels * panel();
        const float* weights = u + (point * k + k0) * c;
        const int64_t width = std::min(panel(), k - k0);
        for (int64_t block = 0; block < blocks; ++block) {
          const int64_t row = point * chunk + block * rows;
          passes_.multiply_block(v + row * c, c, weights, width, c, m + row * k + k0, k);
        }
      }
    });
  }

  Form form_;
  int64_t points_;
  Grid grid_;
  const Passes& passes_;
  bool has_bias_, has_residual_;
  float lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
  ew::Activation after_;  // kind None where the bounds do it all
  std::shared_ptr<const std::vector<float>> u_;
  size_t v_at_ = 0, m_at_ = 0;
};

// The grid of `init`'s conv in output tiles of `tile` x `tile` and the passes of its
// block, or "" with the reason it is not a Winograd conv this CPU runs.
std::string grid_of(const KernelInit& init, int64_t tile, Grid* grid, const Passes** passes) {
  const Shape& x = init.inputs[0].shape;
  const Shape& w = init.inputs[1].shape;
  const Shape& y = init.outputs[0].shape;
  if (x.size() != 5 || y.size() != 5 || x.back() != y.back()) return "X and Y are not 2-D images in blocks";
  if ((*passes = passes_for(x.back())) == nullptr) return "no Winograd passes for this block on this CPU";
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

// Blocks of 8, AVX2, against oneDNN 2.6's jit:avx2 direct conv (2 threads, Zen 3; three
// such convs in a row, their profiled times, direct -> Winograd, ms):
//   64 -> 64 at 56x56:  batch 1  3.4 -> 1.5,   batch 8  27-36 -> 21-24
//   96 -> 96 at 35x35:  batch 1  3.4 -> 1.3,   batch 8  26.5 -> 12.2
//   256 -> 256 at 14x14 (16 tiles an image): batch 1  5.2 -> 3.2,  batch 8  33 -> 15
//   32 -> 32 at 147x147 (Inception's stem; one conv): batch 1  2.25 -> 1.6, batch 8
//     24 -> 23; 32 -> 64 there: 4.45 -> 3.0 and 49 -> 36;
//   16 -> 16 at 112x112 (one conv): batch 1 even, batch 8  3.6 -> 5.5: the transforms,
//     linear in the channels where the products are quadratic, pay from 32 channels.
WinogradTile tile_in_blocks_of_8(const Grid& g4, const Grid& g2, int64_t channels_in, int64_t channels_out) {
  if (channels_in < 32 || channels_out < 32) return WinogradTile::None;
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
  if (channels_in < 64 || channels_out < 64) return WinogradTile::None;
  return g2.tiles >= 16 ? WinogradTile::F2x2 : WinogradTile::None;
}

// Blocks of 16, AVX-512, against oneDNN 2.6's jit:avx512_core direct conv, whose 3x3
// kernel runs near the FMA peak there (2 threads, an Intel Xeon with AVX-512; three
// such convs with ReLU in a row, p50 ms, direct -> F(4x4) / F(2x2)):
//   64 -> 64 at 56x56:    batch 1  1.94 -> 1.14 / 1.67,   batch 8  14.1 -> 9.2 / 13.2
//   128 -> 128 at 28x28:  batch 1  2.07 -> 1.46 / 2.50,   batch 8  15.3 -> 7.5 / 10.5
//   256 -> 256 at 14x14:  batch 1  1.71 -> 1.82 / 1.44,   batch 4  7.2 -> 4.2 / 5.1
//   512 -> 512 at 7x7:    batch 1  2.19 -> - / 2.78,      batch 4  7.3 -> - / 7.5,
//                         batch 8  14.8 -> - / 14.2
// With few tiles the products stream more transformed filters U (4x or 1.8x the
// filters' bytes) from beyond L2 than they save multiplies: 48 tiles or more pay. As
// in blocks of 8, F(4x4) only on images of 16 tiles or more: on 7x7 its U, 4x a
// network's widest filters, made a fourth form of ResNet-50's layer4 weights from
// batch 12 (packed weights 269 MiB over batches 1-14, `tools/shape_walk`).
WinogradTile tile_in_blocks_of_16(const Grid& g4, const Grid& g2, int64_t channels_in, int64_t channels_out) {
  constexpr int64_t kMinTiles = 48;
  if (channels_in < 32 || channels_out < 32) return WinogradTile::None;
  if (g4.tiles_h * g4.tiles_w >= 16 && g4.tiles >= kMinTiles) return WinogradTile::F4x4;
  if (channels_in < 64 || channels_out < 64) return WinogradTile::None;
  return g2.tiles >= kMinTiles ? WinogradTile::F2x2 : WinogradTile::None;
}

}  // namespace

WinogradTile winograd_tile_for(const KernelInit& init) {
  Grid g4, g2;
  const Passes* passes = nullptr;
  if (!grid_of(init, 4, &g4, &passes).empty() || !grid_of(init, 2, &g2, &passes).empty()) return WinogradTile::None;
  const int64_t channels_in = g4.blocks_in * passes->lanes, channels_out = g4.blocks_out * passes->lanes;
  return passes->lanes == 8 ? tile_in_blocks_of_8(g4, g2, channels_in, channels_out)
                            : tile_in_blocks_of_16(g4, g2, channels_in, channels_out);
}

std::unique_ptr<Kernel> make_winograd_conv(KernelInit& init, const ew::Activation& act, WinogradTile tile,
                                           std::string* why_not) {
  if (tile == WinogradTile::None) {
    *why_not = "no Winograd tile was chosen";
    return nullptr;
  }
  const Form form = tile == WinogradTile::F2x2 ? Form::F2x2 : Form::F4x4;
  Grid grid;
  const Passes* passes = nullptr;
  if (!(*why_not = grid_of(init, winograd::outputs_of(form), &grid, &passes)).empty()) return nullptr;
  if (act.kind == ew::Activation::Kind::Function && !act.is(ew::UnaryFunction::Relu) &&
      !has_vector_form(act.function)) {
    *why_not = "its fused activation has no vector form";
    return nullptr;
  }
  if (grid.tiles == 0 || grid.blocks_out == 0) {
    *why_not = "an empty output";
    return nullptr;
  }
  return std::make_unique<WinogradConv>(init, act, form, grid, *passes);
}

}  // namespace ember
