// The index arithmetic of the CUDA movement kernels, written once for the device and
// the host: the .cu kernels are grid-stride loops around these functions, and the
// host tests (tests/ops/cuda/test_movement_emulated.cc) run the very same functions
// over every output element against the CPU kernels, so the arithmetic is checked on
// machines without a GPU. Compiles as CUDA (nvcc) and as plain C++ (g++).
#pragma once

#include "ops/cuda/gather_impl.h"
#include "ops/cuda/movement_impl.h"
#include "ops/cuda/pad_impl.h"
#include "ops/cuda/resize_impl.h"

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define EMBER_HD __host__ __device__ __forceinline__
#else
#define EMBER_HD inline
#endif

namespace ember::cuda {

// ---- Strided copy ---------------------------------------------------------------------

// The input offset (units) that output element i of the copy reads. I is int32_t when
// the launcher has checked every partial sum fits, else int64_t.
template <class I> EMBER_HD I strided_offset(const StridedCopy& c, I i) {
  I rest = i, off = static_cast<I>(c.base);
  for (int d = c.rank - 1; d > 0; --d) {
    const I dim = static_cast<I>(c.dims[d]);
    const I q = rest / dim;
    off += (rest - q * dim) * static_cast<I>(c.strides[d]);
    rest = q;
  }
  return off + rest * static_cast<I>(c.strides[0]);
}

// ---- Tiled transpose ------------------------------------------------------------------

inline constexpr int kTile = 32, kTileRows = 8;

// The input and output offsets of batch `batch`.
EMBER_HD void tiled_batch_offsets(const TiledTranspose& t, int64_t batch, int64_t& in_off, int64_t& out_off) {
  in_off = out_off = 0;
  for (int d = t.batch_rank - 1; d >= 0; --d) {
    const int64_t i = batch % t.batch_dims[d];
    batch /= t.batch_dims[d];
    in_off += i * t.batch_in_strides[d];
    out_off += i * t.batch_out_strides[d];
  }
}

// Thread (tx, ty) of a 32x8 block loads its part of the tile at (a0, b0), reading
// along a (the input's contiguous dim): tile[b - b0][a - a0].
template <class T, class Tile>
EMBER_HD void tiled_load(const TiledTranspose& t, const T* in, Tile tile, int64_t in_off, int64_t a0, int64_t b0,
                         int tx, int ty) {
  for (int k = ty; k < kTile; k += kTileRows) {
    const int64_t a = a0 + tx, b = b0 + k;
    if (a < t.size_a && b < t.size_b) tile[k][tx] = in[in_off + b * t.in_stride_b + a];
  }
}

// After the whole block has loaded: writes along b (the output's contiguous dim).
template <class T, class Tile>
EMBER_HD void tiled_store(const TiledTranspose& t, T* out, Tile tile, int64_t out_off, int64_t a0, int64_t b0,
                          int tx, int ty) {
  for (int k = ty; k < kTile; k += kTileRows) {
    const int64_t b = b0 + tx, a = a0 + k;
    if (a < t.size_a && b < t.size_b) out[out_off + a * t.out_stride_a + b] = tile[tx][k];
  }
}

// ---- Concat / Split -------------------------------------------------------------------

EMBER_HD void piece_offsets(const CopyPieces::Piece& piece, int64_t i, int64_t& src, int64_t& dst) {
  const int64_t r = i / piece.width, c = i - r * piece.width;
  src = r * piece.src_pitch + c;
  dst = r * piece.dst_pitch + c;
}

// ---- Trilu / OneHot -------------------------------------------------------------------

EMBER_HD bool trilu_keeps(int64_t i, int64_t rows, int64_t cols, bool upper, int64_t k) {
  const int64_t col = i % cols, row = (i / cols) % rows;
  const int64_t diff = col - row;  // |diff| < rows + cols: no overflow against any k
  return upper ? diff >= k : diff <= k;
}

// Output element i of OneHot (viewed [outer, depth, inner]): the indices element it
// looks at, and its depth position.
EMBER_HD int64_t one_hot_source(int64_t i, int64_t depth, int64_t inner, int64_t& d) {
  const int64_t in = i % inner, rest = i / inner;
  d = rest % depth;
  return (rest / depth) * inner + in;
}

EMBER_HD bool one_hot_is_hot(int64_t index, int64_t d, int64_t depth) {
  if (index < 0) index += depth;
  return index == d;
}

// ---- Gather / Scatter -----------------------------------------------------------------

// The index in [0, n), or -1 when it is outside [-n, n).
EMBER_HD int64_t wrap_index(int64_t v, int64_t n) {
  if (v < 0) v += n;
  return v >= 0 && v < n ? v : -1;
}

// The data offset (units) output element i of Gather reads, or -1 (out of range).
template <class I> EMBER_HD int64_t gather_source(const GatherParams& p, const I* indices, int64_t i) {
  const int64_t j = i % p.inner, row = i / p.inner;
  const int64_t k = row % p.count, o = row / p.count;
  const int64_t idx = wrap_index(static_cast<int64_t>(indices[k]), p.axis_len);
  return idx < 0 ? -1 : (o * p.axis_len + idx) * p.inner + j;
}

// The data offset of indices element i (GatherElements/ScatterElements), or -1.
template <class I> EMBER_HD int64_t elements_offset(const ElementsParams& p, const I* indices, int64_t i) {
  int64_t off = 0, rest = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t c = rest % p.dims[d];
    rest /= p.dims[d];
    if (d == p.axis) {
      const int64_t idx = wrap_index(static_cast<int64_t>(indices[i]), p.axis_len);
      if (idx < 0) return -1;
      off += idx * p.data_strides[d];
    } else {
      off += c * p.data_strides[d];
    }
  }
  return off;
}

// The data offset (units) of element i of the gathered (or scattered) slices, or -1
// when its tuple has an out-of-range index.
EMBER_HD int64_t nd_offset(const NDParams& p, const int64_t* indices, int64_t i) {
  const int64_t t = i / p.slice, j = i - t * p.slice;
  int64_t off = (t / p.tuples) * p.batch_stride;
  for (int q = 0; q < p.k; ++q) {
    const int64_t idx = wrap_index(indices[t * p.k + q], p.dims[q]);
    if (idx < 0) return -1;
    off += idx * p.strides[q];
  }
  return off + j;
}

// ---- Pad ------------------------------------------------------------------------------

// Index in [0, m) that position j (relative to the kept input) reads, or -1 (fill):
// ops/cpu/pad.cc's map_index.
EMBER_HD int64_t pad_index(int64_t j, int64_t m, PadMode mode) {
  if (j >= 0 && j < m) return j;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return j < 0 ? 0 : m - 1;
    case PadMode::Wrap: return ((j % m) + m) % m;
    default: {  // reflect: mirror without repeating the edge
      if (m == 1) return 0;
      const int64_t period = 2 * (m - 1);
      j = (j < 0 ? -j : j) % period;
      return j < m ? j : period - j;
    }
  }
}

// The input offset output element i reads, or -1 where it takes the fill value.
EMBER_HD int64_t pad_source(const PadDims& p, int64_t i) {
  int64_t rest = i, off = 0;
  bool filled = false;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t c = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    const int64_t j = pad_index(c - p.before[d], p.kept[d], p.mode);
    if (j < 0) filled = true;
    else off += (p.lo[d] + j) * p.in_strides[d];
  }
  return filled ? -1 : off;
}

// ---- Resize ---------------------------------------------------------------------------

// Double operations rounded one at a time, never fused into an fma, so the device
// and the host (the CPU kernel) compute the same coordinates bit for bit.
EMBER_HD double rn_add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
EMBER_HD double rn_mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
EMBER_HD double rn_div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// ops/cpu/resize.cc's source_coordinate, for the modes the CUDA kernel takes.
EMBER_HD double source_coordinate(const ResizeAxis& a, ResizeCoord m, int64_t i) {
  const double x = static_cast<double>(i);
  switch (m) {
    case ResizeCoord::Asymmetric: return rn_div(x, a.scale);
    case ResizeCoord::AlignCorners:
      return a.length == 1 ? 0.0 : rn_div(rn_mul(x, static_cast<double>(a.in_len - 1)), rn_add(a.length, -1.0));
    case ResizeCoord::PytorchHalfPixel:
      return a.out_len > 1 ? rn_add(rn_div(rn_add(x, 0.5), a.scale), -0.5) : 0.0;
    case ResizeCoord::TfHalfPixelForNN: return rn_div(rn_add(x, 0.5), a.scale);
    default: return rn_add(rn_div(rn_add(x, 0.5), a.scale), -0.5);  // half_pixel
  }
}

EMBER_HD int64_t clamp_index(int64_t j, int64_t n) { return j < 0 ? 0 : j >= n ? n - 1 : j; }

// ops/cpu/resize.cc's nearest_index, clamped into the input.
EMBER_HD int64_t nearest_source(const ResizeAxis& a, ResizeCoord coord, ResizeNearest m, int64_t i) {
  if (a.identity) return i;
  const double x = source_coordinate(a, coord, i);
  const double fl = floor(x);
  int64_t j;
  if (x == fl) {
    j = static_cast<int64_t>(x);
  } else {
    switch (m) {
      case ResizeNearest::Floor: j = static_cast<int64_t>(fl); break;
      case ResizeNearest::Ceil: j = static_cast<int64_t>(fl) + 1; break;
      // Opset < 11 and Upsample: round up when shrinking, truncate when enlarging.
      case ResizeNearest::Simple: j = a.scale < 1 ? static_cast<int64_t>(ceil(x)) : static_cast<int64_t>(x); break;
      default: {
        const double frac = rn_add(x, -fl);
        const bool up = m == ResizeNearest::RoundPreferCeil ? frac >= 0.5 : frac > 0.5;
        j = static_cast<int64_t>(fl) + (up ? 1 : 0);
      }
    }
  }
  return clamp_index(j, a.in_len);
}

// One dim's linear taps: one tap (weight 1) on a dim left as it is, as the CPU does;
// else floor(x) and floor(x) + 1 clamped into the input, weighted 1 - r and r.
struct LinearTaps {
  int count;
  int64_t index[2];
  float weight[2];
};

EMBER_HD LinearTaps linear_taps(const ResizeAxis& a, ResizeCoord coord, int64_t i) {
  LinearTaps t;
  if (a.identity) {
    t.count = 1;
    t.index[0] = t.index[1] = i;
    t.weight[0] = 1.f;
    t.weight[1] = 0.f;
    return t;
  }
  const double x = source_coordinate(a, coord, i);
  const double fl = floor(x), r = rn_add(x, -fl);
  const int64_t first = static_cast<int64_t>(fl);
  t.count = 2;
  t.index[0] = clamp_index(first, a.in_len);
  t.index[1] = clamp_index(first + 1, a.in_len);
  t.weight[0] = static_cast<float>(rn_add(1.0, -r));
  t.weight[1] = static_cast<float>(r);
  return t;
}

// Output element i of the resize as (plane, oy, ox).
EMBER_HD void resize_position(const ResizeDesc& d, int64_t i, int64_t& plane, int64_t& oy, int64_t& ox) {
  ox = i % d.w.out_len;
  const int64_t row = i / d.w.out_len;
  oy = row % d.h.out_len;
  plane = row / d.h.out_len;
}

// The input offset output element i of a nearest resize reads.
EMBER_HD int64_t resize_nearest_offset(const ResizeDesc& d, int64_t i) {
  int64_t plane, oy, ox;
  resize_position(d, i, plane, oy, ox);
  const int64_t iy = nearest_source(d.h, d.coord, d.nearest, oy);
  const int64_t ix = nearest_source(d.w, d.coord, d.nearest, ox);
  return (plane * d.h.in_len + iy) * d.w.in_len + ix;
}

// Output element i of a bilinear resize, in float; load(offset) reads the input as float.
template <class Load> EMBER_HD float resize_linear_value(const ResizeDesc& d, int64_t i, Load load) {
  int64_t plane, oy, ox;
  resize_position(d, i, plane, oy, ox);
  const LinearTaps ty = linear_taps(d.h, d.coord, oy), tx = linear_taps(d.w, d.coord, ox);
  const int64_t base = plane * d.h.in_len * d.w.in_len;
  float acc = 0.f;
  // Fixed trip counts (taps past count skipped) keep the tap arrays in registers.
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int a = 0; a < 2; ++a) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int b = 0; b < 2; ++b)
      if (a < ty.count && b < tx.count)
        acc += ty.weight[a] * tx.weight[b] * load(base + ty.index[a] * d.w.in_len + tx.index[b]);
  }
  return acc;
}

}  // namespace ember::cuda
