#include "ops/cpu/max_pool_channels_inner.h"

#include "ops/cpu/parallel.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace ember {

namespace {

// A window along one axis: its first input position (maybe in the padding) and its
// positions k in [begin, end) that fall inside the input.
struct Span {
  int64_t start, begin, end;
};

Span window(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  const int64_t begin = start < 0 ? (-start + dilation - 1) / dilation : 0;
  const int64_t end = std::min(kernel, start >= size ? int64_t{0} : (size - start + dilation - 1) / dilation);
  return {start, begin, std::max(begin, end)};
}

// A window's maximum for `kVectors` x 8 channels at `x`, input positions `lanes` apart.
template <int kVectors>
void max_of_window(const float* x, float* y, const Span& rows, const Span& cols, int64_t row_stride,
                   int64_t col_stride) {
  __m256 best[kVectors];
  for (int v = 0; v < kVectors; ++v) best[v] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t i = rows.begin; i < rows.end; ++i)
    for (int64_t j = cols.begin; j < cols.end; ++j) {
      const float* at = x + i * row_stride + j * col_stride;
      for (int v = 0; v < kVectors; ++v) best[v] = _mm256_max_ps(best[v], _mm256_loadu_ps(at + 8 * v));
    }
  for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(y + 8 * v, best[v]);
}

// The same for fewer than 8 channels (NaN propagates as in _mm256_max_ps: the later
// operand is kept when either is NaN, so a NaN input wins here too).
void max_of_window_tail(const float* x, float* y, int64_t channels, const Span& rows, const Span& cols,
                        int64_t row_stride, int64_t col_stride) {
  for (int64_t c = 0; c < channels; ++c) {
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t i = rows.begin; i < rows.end; ++i)
      for (int64_t j = cols.begin; j < cols.end; ++j) {
        const float v = x[i * row_stride + j * col_stride + c];
        best = best > v ? best : v;
      }
    y[c] = best;
  }
}

// x viewed as [planes, H, W, lanes]: a blocked value's planes are its images' channel
// blocks, a channels-last value's its images, with all C channels as lanes.
// kVectors > 0: lanes is 8 kVectors, known when compiled (a blocked value's 8 or 16
// lanes: no chunk loop per output); 0: any lanes, 64 at a time.
template <int kVectors>
class ChannelsInnerMaxPool2d final : public Kernel {
 public:
  ChannelsInnerMaxPool2d(const WindowGeometry& g, int64_t planes, int64_t h, int64_t w, int64_t lanes)
      : planes_(planes), h_(h), w_(w), lanes_(lanes), oh_(g.out[0]), ow_(g.out[1]), dh_(g.dilations[0]),
        dw_(g.dilations[1]) {
    // Where each output row's and column's window starts, and its part inside the input
    // (worked out here: per output, the divisions cost more than the maxima).
    for (int64_t o = 0; o < oh_; ++o) rows_.push_back(window(o * g.strides[0] - g.pads_begin[0], g.kernel[0], dh_, h_));
    for (int64_t o = 0; o < ow_; ++o) cols_.push_back(window(o * g.strides[1] - g.pads_begin[1], g.kernel[1], dw_, w_));
    window_ = g.kernel[0] * g.kernel[1];
  }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    float* y = args.outputs[0]->data_as<float>();
    // One output row of one plane at a time.
    parallel_for(planes_ * oh_, ow_ * window_ * lanes_, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t plane = row / oh_;
        pool_row(x + plane * h_ * w_ * lanes_, y + row * ow_ * lanes_, rows_[row % oh_]);
      }
    });
  }

 private:
  static constexpr int64_t kChunk = 64;  // channels at a time: 8 vectors of accumulators

  void pool_row(const float* x, float* y, const Span& rows) const {
    const int64_t row_stride = dh_ * w_ * lanes_, col_stride = dw_ * lanes_;
    for (const Span& cols : cols_) {
      const float* corner = x + (rows.start * w_ + cols.start) * lanes_;
      if constexpr (kVectors > 0) {
        max_of_window<kVectors>(corner, y, rows, cols, row_stride, col_stride);
      } else {
        for (int64_t c = 0; c < lanes_; c += kChunk)
          pool_chunk(corner + c, y + c, std::min(kChunk, lanes_ - c), rows, cols, row_stride, col_stride);
      }
      y += lanes_;
    }
  }

  static void pool_chunk(const float* x, float* y, int64_t n, const Span& rows, const Span& cols, int64_t rs,
                         int64_t cs) {
    switch (n / 8) {
      case 8: max_of_window<8>(x, y, rows, cols, rs, cs); break;
      case 7: max_of_window<7>(x, y, rows, cols, rs, cs); break;
      case 6: max_of_window<6>(x, y, rows, cols, rs, cs); break;
      case 5: max_of_window<5>(x, y, rows, cols, rs, cs); break;
      case 4: max_of_window<4>(x, y, rows, cols, rs, cs); break;
      case 3: max_of_window<3>(x, y, rows, cols, rs, cs); break;
      case 2: max_of_window<2>(x, y, rows, cols, rs, cs); break;
      case 1: max_of_window<1>(x, y, rows, cols, rs, cs); break;
      default: break;
    }
    const int64_t done = n / 8 * 8;
    if (done < n) max_of_window_tail(x + done, y + done, n - done, rows, cols, rs, cs);
  }

  int64_t planes_, h_, w_, lanes_, oh_, ow_, dh_, dw_, window_ = 1;
  std::vector<Span> rows_, cols_;  // per output row, per output column
};

}  // namespace

namespace {

std::unique_ptr<Kernel> pool_of_lanes(const WindowGeometry& g, int64_t planes, int64_t h, int64_t w, int64_t lanes) {
  switch (lanes % 8 == 0 ? lanes / 8 : 0) {
    case 1: return std::make_unique<ChannelsInnerMaxPool2d<1>>(g, planes, h, w, lanes);
    case 2: return std::make_unique<ChannelsInnerMaxPool2d<2>>(g, planes, h, w, lanes);
    case 4: return std::make_unique<ChannelsInnerMaxPool2d<4>>(g, planes, h, w, lanes);
    case 8: return std::make_unique<ChannelsInnerMaxPool2d<8>>(g, planes, h, w, lanes);
    default: return std::make_unique<ChannelsInnerMaxPool2d<0>>(g, planes, h, w, lanes);
  }
}

}  // namespace

std::unique_ptr<Kernel> make_max_pool_channels_inner(const WindowGeometry& g, const Shape& x, bool channels_last) {
  if (g.kernel.size() != 2) return nullptr;
  if (channels_last && x.size() == 4) return pool_of_lanes(g, x[0], x[1], x[2], x[3]);
  if (!channels_last && x.size() == 5 && (x.back() == 8 || x.back() == 16))
    return pool_of_lanes(g, x[0] * x[1], x[2], x[3], x[4]);
  return nullptr;
}

}  // namespace ember
