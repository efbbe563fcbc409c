// Pooling ops against a 2-D reference written from the ONNX spec.
#include "test_conv_util.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace ember::test {
namespace {

// Max is exact; averages of <= 25 terms in float.
constexpr float kRtol = 1e-5f, kAtol = 1e-6f;

struct Pool2d {
  int64_t kh, kw, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t top = 0, left = 0, bottom = 0, right = 0;  // explicit pads
  bool ceil = false;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;  // the last window must start before the end padding
  return out;
}

Node pool_node(const std::string& op, const Pool2d& p) {
  Node node = make_node(op, 1);
  node.attributes.set_ints("kernel_shape", {p.kh, p.kw});
  node.attributes.set_ints("strides", {p.sh, p.sw});
  node.attributes.set_ints("dilations", {p.dh, p.dw});
  node.attributes.set_ints("pads", {p.top, p.left, p.bottom, p.right});
  node.attributes.set_int("ceil_mode", p.ceil);
  return node;
}

// kind: "max", "avg" (count_pad as given), "lp<p>". Also returns row-major argmax indices.
std::vector<float> reference_pool(const Tensor& x, const Pool2d& p, const std::string& kind, bool count_pad,
                                  float lp, std::vector<int64_t>* indices = nullptr) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = out_size(h, p.kh, p.sh, p.dh, p.top, p.bottom, p.ceil);
  const int64_t ow = out_size(w, p.kw, p.sw, p.dw, p.left, p.right, p.ceil);
  std::vector<float> y;
  for (int64_t plane = 0; plane < n * c; ++plane)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double sum = 0;
        float best = -std::numeric_limits<float>::infinity();
        int64_t count = 0, best_at = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.sh - p.top + ky * p.dh, ix = ox * p.sw - p.left + kx * p.dw;
            const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
            if (count_pad ? (iy < h + p.bottom && ix < w + p.right) : inside) ++count;
            if (!inside) continue;
            const int64_t at = (plane * h + iy) * w + ix;
            const float v = x.data_as<float>()[at];
            if (v > best) best = v, best_at = at;
            sum += kind == "lp" ? std::pow(std::fabs(v), lp) : v;
          }
        y.push_back(kind == "max" ? best : kind == "avg" ? float(sum / count) : float(std::pow(sum, 1.0 / lp)));
        if (indices) indices->push_back(best_at);
      }
  return y;
}

void check(const std::string& op, const Pool2d& p, const Shape& x_shape, bool count_pad = false, int64_t lp = 2) {
  const Tensor x = random_floats(x_shape, 71);
  Node node = pool_node(op, p);
  if (op == "AveragePool") node.attributes.set_int("count_include_pad", count_pad);
  if (op == "LpPool") node.attributes.set_int("p", lp);
  const auto y = run_node(node, 22, {&x});
  const std::string kind = op == "MaxPool" ? "max" : op == "AveragePool" ? "avg" : "lp";
  SCOPED_TRACE(op + (count_pad ? " count_include_pad" : "") + (p.ceil ? " ceil" : ""));
  expect_close(y[0], reference_pool(x, p, kind, count_pad, float(lp)), kRtol, kAtol);
}

const Pool2d kCases[] = {
    {3, 3, 2, 2},                             // plain stride 2 on odd sizes
    {3, 2, 2, 1, 1, 1, 1, 0, 0, 1},           // asymmetric pads
    {2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true},     // ceil_mode with a partial last window
    {3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},     // ceil_mode past explicit pads
    {3, 2, 1, 2, 2, 1, 1, 0, 1, 1},           // dilations
    {3, 3, 3, 2, 2, 2, 0, 2, 1, 0, true},     // everything at once
};

TEST(MaxPool, OddSizesPadsCeilDilations) {
  for (const Pool2d& p : kCases) check("MaxPool", p, {2, 3, 7, 9});
}

TEST(AveragePool, CountIncludePadAndCeilMode) {
  for (const Pool2d& p : kCases)
    for (bool count_pad : {false, true}) check("AveragePool", p, {2, 3, 7, 9}, count_pad);
}

TEST(LpPool, P1P2P3) {
  for (int64_t lp : {1, 2, 3}) check("LpPool", kCases[1], {1, 2, 7, 9}, false, lp);
}

TEST(MaxPool, IndicesRowAndColumnMajor) {
  const Pool2d p{3, 3, 2, 2, 1, 1, 1, 0, 0, 1, true};
  const Tensor x = random_floats({2, 3, 7, 8}, 72);
  std::vector<int64_t> want_idx;
  const auto want = reference_pool(x, p, "max", false, 0, &want_idx);
  for (int64_t order : {0, 1}) {
    Node node = pool_node("MaxPool", p);
    node.outputs.push_back("indices");
    node.attributes.set_int("storage_order", order);
    const auto y = run_node(node, 12, {&x});
    expect_close(y[0], want, 0, 0);
    ASSERT_EQ(y[1].numel(), static_cast<int64_t>(want_idx.size()));
    for (size_t i = 0; i < want_idx.size(); ++i) {
      int64_t expected = want_idx[i];
      if (order == 1) {  // column-major within the plane: h + H * w
        const int64_t plane = expected / 56, r = expected % 56;
        expected = plane * 56 + (r % 8) * 7 + r / 8;
      }
      ASSERT_EQ(y[1].data_as<int64_t>()[i], expected) << "order " << order << " at " << i;
    }
  }
}

TEST(Pool, AutoPadSameUpperAndLower) {
  // H: in 7, k 3, s 2 -> out 4, total pad 2 (1/1). W: in 8, k 3, s 2 -> out 4, total pad 1,
  // at the end for SAME_UPPER, at the start for SAME_LOWER.
  for (const std::string pad : {"SAME_UPPER", "SAME_LOWER"}) {
    const Tensor x = random_floats({1, 2, 7, 8}, 73);
    Node node = make_node("AveragePool", 1);
    node.attributes.set_ints("kernel_shape", {3, 3});
    node.attributes.set_ints("strides", {2, 2});
    node.attributes.set_string("auto_pad", pad);
    const auto y = run_node(node, 19, {&x});
    const bool upper = pad == "SAME_UPPER";
    const Pool2d p{3, 3, 2, 2, 1, 1, 1, upper ? 0 : 1, 1, upper ? 1 : 0};
    ASSERT_EQ(y[0].shape(), (Shape{1, 2, 4, 4}));
    expect_close(y[0], reference_pool(x, p, "avg", false, 0), kRtol, kAtol);
  }
}

TEST(Pool, OneSpatialDimMatches2dWithUnitHeight) {
  const Tensor x = random_floats({2, 3, 11}, 74);
  Node node = make_node("MaxPool", 1);
  node.attributes.set_ints("kernel_shape", {3});
  node.attributes.set_ints("strides", {2});
  node.attributes.set_ints("pads", {1, 1});
  const auto y = run_node(node, 12, {&x});
  const Tensor x2 = Tensor::view(DType::Float32, {2, 3, 1, 11}, const_cast<void*>(x.data()));
  expect_close(y[0], reference_pool(x2, {1, 3, 1, 2, 1, 1, 0, 1, 0, 1}, "max", false, 0), 0, 0);
}

TEST(GlobalPool, AverageAndMax) {
  const Tensor x = random_floats({2, 3, 5, 7}, 75);
  const auto avg = run_node(make_node("GlobalAveragePool", 1), 22, {&x});
  const auto max = run_node(make_node("GlobalMaxPool", 1), 22, {&x});
  ASSERT_EQ(avg[0].shape(), (Shape{2, 3, 1, 1}));
  std::vector<float> want_avg, want_max;
  for (int64_t pl = 0; pl < 6; ++pl) {
    double s = 0;
    float m = -1e30f;
    for (int64_t i = 0; i < 35; ++i) s += x.data_as<float>()[pl * 35 + i], m = std::max(m, x.data_as<float>()[pl * 35 + i]);
    want_avg.push_back(float(s / 35));
    want_max.push_back(m);
  }
  expect_close(avg[0], want_avg, kRtol, kAtol);
  expect_close(max[0], want_max, 0, 0);
}

// com.ember's channels-last global pools, [N, H, W, C] -> [N, 1, 1, C], against sums in
// double: the kernel splits the positions into parts as well as the channels into slices
// (two items a thread at least), and combines the parts' partials. Shapes: few channels
// over many positions (four parts), slices of uneven channel counts (144 = 3 x 48, 200 =
// 4 x 50), a batch, one position. Tolerance: a float sum of n terms of |x| <= 1, in any
// order, is within n * n * FLT_EPSILON of exact, so the average is within n * FLT_EPSILON
// (a loose bound); the maximum is exact.
TEST(NhwcGlobalPool, AverageAndMaxInPartsAndSlicesMatchSums) {
  const Shape shapes[] = {{1, 112, 112, 32}, {1, 56, 56, 144}, {2, 9, 7, 200}, {3, 5, 5, 3}, {1, 1, 1, 70}};
  for (const Shape& s : shapes)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(shape_to_string(s) + ", threads " + std::to_string(threads));
      const Tensor x = random_floats(s, 78);
      const int64_t n = s[0], c = s[3], positions = s[1] * s[2];
      std::vector<float> want_avg, want_max;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < c; ++k) {
          double sum = 0;
          float most = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < positions; ++i) {
            const float v = x.data_as<float>()[(b * positions + i) * c + k];
            sum += v, most = std::max(most, v);
          }
          want_avg.push_back(static_cast<float>(sum / static_cast<double>(positions)));
          want_max.push_back(most);
        }
      const auto avg = run_node(make_node("NhwcGlobalAveragePool", 1, 1, {}, "com.ember"), 1, {&x}, threads);
      const auto max = run_node(make_node("NhwcGlobalMaxPool", 1, 1, {}, "com.ember"), 1, {&x}, threads);
      ASSERT_EQ(avg[0].shape(), (Shape{n, 1, 1, c}));
      expect_close(avg[0], want_avg, 0, FLT_EPSILON * static_cast<float>(positions));
      expect_close(max[0], want_max, 0, 0);
    }
}

// com.ember's Blocked* pools (the CPU's blocked layout) compute what the plain ones do,
// in blocks of 8 and 16 channels.
TEST(BlockedPool, MaxAverageAndGlobalMatchThePlainOnes) {
  const Tensor x = random_floats({2, 16, 9, 7}, 76);
  const Pool2d window{3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  for (int64_t b : {8, 16}) {
    SCOPED_TRACE("block " + std::to_string(b));
    const Tensor xb = blocked(x, b);
    for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
      SCOPED_TRACE(op);
      const bool global = std::string(op).rfind("Global", 0) == 0;
      Node plain = global ? make_node(op, 1) : pool_node(op, window);
      Node blocked_pool = plain;
      blocked_pool.op_type = std::string("Blocked") + op;
      blocked_pool.domain = "com.ember";
      const Tensor want = run_node(plain, 22, {&x})[0];
      expect_close(run_node(blocked_pool, 1, {&xb})[0], values_of(blocked(want, b)), kRtol, kAtol);
    }
  }
}

// The blocked MaxPool's own loop (ops/cpu/max_pool_channels_inner.cc) on every window
// shape above: pads, ceil_mode windows past them, dilations. Max is exact.
TEST(BlockedPool, MaxOnOddSizesPadsCeilDilations) {
  const Tensor x = random_floats({2, 16, 7, 9}, 77);
  for (int64_t b : {8, 16}) {
    const Tensor xb = blocked(x, b);
    for (const Pool2d& p : kCases) {
      Node node = pool_node("BlockedMaxPool", p);
      node.domain = "com.ember";
      const std::vector<float> plain = reference_pool(x, p, "max", false, 0);
      Tensor want_plain(DType::Float32, {2, 16, out_size(7, p.kh, p.sh, p.dh, p.top, p.bottom, p.ceil),
                                         out_size(9, p.kw, p.sw, p.dw, p.left, p.right, p.ceil)});
      std::copy(plain.begin(), plain.end(), want_plain.data_as<float>());
      SCOPED_TRACE("block " + std::to_string(b) + ", window " + std::to_string(p.kh) + "x" + std::to_string(p.kw));
      expect_close(run_node(node, 1, {&xb}, 2)[0], values_of(blocked(want_plain, b)), 0, 0);
    }
  }
}

// The channels-last MaxPool, the same loop with every channel innermost, on every window
// shape above: channel counts its compiled widths take (32, 64), and the run-time loop's
// (64-channel chunks, part of one, whole vectors and less than one: its scalar tail).
TEST(NhwcPool, MaxOnOddSizesPadsCeilDilationsAndChannelCounts) {
  for (int64_t c : {3, 13, 32, 64, 72, 136}) {
    const Tensor x = random_floats({2, c, 7, 9}, 78);
    const Tensor last = blocked(x, c);  // [N, 1, H, W, C]: the NHWC bytes
    Tensor x_nhwc(DType::Float32, {2, 7, 9, c});
    std::copy_n(last.data_as<float>(), last.numel(), x_nhwc.data_as<float>());
    for (const Pool2d& p : kCases) {
      Node node = pool_node("NhwcMaxPool", p);
      node.domain = "com.ember";
      const std::vector<float> plain = reference_pool(x, p, "max", false, 0);
      Tensor want_plain(DType::Float32, {2, c, out_size(7, p.kh, p.sh, p.dh, p.top, p.bottom, p.ceil),
                                         out_size(9, p.kw, p.sw, p.dw, p.left, p.right, p.ceil)});
      std::copy(plain.begin(), plain.end(), want_plain.data_as<float>());
      SCOPED_TRACE(std::to_string(c) + " channels, window " + std::to_string(p.kh) + "x" + std::to_string(p.kw));
      expect_close(run_node(node, 1, {&x_nhwc}, 2)[0], values_of(blocked(want_plain, c)), 0, 0);
    }
  }
}

// 8-bit MaxPool (opset 12+) runs the plain loop; the float reference is exact on it.
template <class T>
void check_int8_max_pool(DType dtype, const Pool2d& p) {
  const Tensor r = random_floats({2, 3, 7, 9}, 73, -200.f, 300.f);
  Tensor x(dtype, r.shape()), xf(DType::Float32, r.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    x.data_as<T>()[i] = static_cast<T>(std::clamp(std::round(r.data_as<float>()[i]), lo, hi));
    xf.data_as<float>()[i] = x.data_as<T>()[i];
  }
  Node node = pool_node("MaxPool", p);
  node.outputs.push_back("indices");
  const auto y = run_node(node, 12, {&x});
  std::vector<int64_t> want_idx;
  const auto want = reference_pool(xf, p, "max", false, 0, &want_idx);
  ASSERT_EQ(y[0].dtype(), dtype);
  ASSERT_EQ(y[0].numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(float(y[0].data_as<T>()[i]), want[i]) << i;
    ASSERT_EQ(xf.data_as<float>()[y[1].data_as<int64_t>()[i]], want[i]) << i;  // ties may pick any
  }
}

TEST(MaxPool, Int8AndUInt8) {
  for (const Pool2d& p : kCases) {
    check_int8_max_pool<int8_t>(DType::Int8, p);
    check_int8_max_pool<uint8_t>(DType::UInt8, p);
  }
  Node node = make_node("AveragePool", 1);
  node.attributes.set_ints("kernel_shape", {2, 2});
  EXPECT_NE(why_refused(node, 12, {{DType::Int8, {1, 1, 4, 4}}}), "");
}

}  // namespace
}  // namespace ember::test
