#include "ops/cpu/blocked_max_pool.h"

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

template <int kVectors>  // 8-float vectors per block: 1 for nChw8c, 2 for nChw16c
class BlockedMaxPool2d final : public Kernel {
 public:
  BlockedMaxPool2d(const WindowGeometry& g, const Shape& x)
      : planes_(x[0] * x[1]), h_(x[2]), w_(x[3]), oh_(g.out[0]), ow_(g.out[1]), dh_(g.dilations[0]),
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
    // One output row of one block at a time.
    parallel_for(planes_ * oh_, ow_ * window_ * kLanes, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t plane = row / oh_;
        pool_row(x + plane * h_ * w_ * kLanes, y + row * ow_ * kLanes, rows_[row % oh_]);
      }
    });
  }

 private:
  static constexpr int64_t kLanes = 8 * kVectors;

  void pool_row(const float* x, float* y, const Span& rows) const {
    const int64_t w = w_, dh = dh_, dw = dw_;
    for (const Span& cols : cols_) {
      __m256 best[kVectors];
      for (int v = 0; v < kVectors; ++v) best[v] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
      for (int64_t i = rows.begin; i < rows.end; ++i) {
        const float* line = x + ((rows.start + i * dh) * w + cols.start) * kLanes;
        for (int64_t j = cols.begin; j < cols.end; ++j)
          for (int v = 0; v < kVectors; ++v)
            best[v] = _mm256_max_ps(best[v], _mm256_loadu_ps(line + j * dw * kLanes + 8 * v));
      }
      for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(y + 8 * v, best[v]);
      y += kLanes;
    }
  }

  int64_t planes_, h_, w_, oh_, ow_, dh_, dw_, window_ = 1;
  std::vector<Span> rows_, cols_;  // per output row, per output column
};

}  // namespace

std::unique_ptr<Kernel> make_blocked_max_pool_2d(const WindowGeometry& g, const Shape& x) {
  if (x.size() != 5 || g.kernel.size() != 2) return nullptr;
  if (x.back() == 8) return std::make_unique<BlockedMaxPool2d<1>>(g, x);
  if (x.back() == 16) return std::make_unique<BlockedMaxPool2d<2>>(g, x);
  return nullptr;
}

}  // namespace ember
