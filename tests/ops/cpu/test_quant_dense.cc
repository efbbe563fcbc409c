// MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv against plain loops:
// uint8/int8 mixes, odd sizes, batch broadcasting, vector operands, per-row/column
// zero points and scales, float16 scales; convolutions with pads, strides,
// dilations, groups, per-channel weight zero points/scales, bias, 1-D and 2-D.
#include "test_quant_util.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ember {
namespace {

using namespace quant_test;

template <class T> int at(const Tensor& t, int64_t i) { return static_cast<int>(t.data_as<T>()[i]); }

int value(const Tensor& t, int64_t i) { return t.dtype() == DType::Int8 ? at<int8_t>(t, i) : at<uint8_t>(t, i); }

Tensor random_q(DType t, const Shape& shape, unsigned seed) {
  return t == DType::Int8 ? seeded_tensor(t, shape, seed, -128, 127)
                          : seeded_tensor(t, shape, seed, 0, 255);
}

// Reference batched matmul of 3-D a [B or 1, M, K] and b [B or 1, K, N] with per-row a
// zero points azp[M] and per-column b zero points bzp[N] (empty: none).
std::vector<int64_t> ref_matmul(const Tensor& a, const Tensor& b, const std::vector<int>& azp,
                                const std::vector<int>& bzp, int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<int64_t> y(batch * m * n);
  const bool a_b = a.numel() == batch * m * k, b_b = b.numel() == batch * k * n;
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const int av = value(a, (a_b ? p : 0) * m * k + i * k + q) - (azp.empty() ? 0 : azp[i]);
          const int bv = value(b, (b_b ? p : 0) * k * n + q * n + j) - (bzp.empty() ? 0 : bzp[j]);
          s += av * bv;
        }
        y[(p * m + i) * n + j] = s;
      }
  return y;
}

std::vector<int> values(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(value(t, i));
  return v;
}

TEST(MatMulInteger, BroadcastBatchAndPerRowColumnZeroPoints) {
  for (auto [ta, tb] : {std::pair{DType::UInt8, DType::Int8}, std::pair{DType::Int8, DType::UInt8}}) {
    const int64_t batch = 3, m = 5, k = 7, n = 6;
    const Tensor a = random_q(ta, {batch, m, k}, 1), b = random_q(tb, {1, k, n}, 2);
    const Tensor azp = random_q(ta, {m}, 3), bzp = random_q(tb, {n}, 4);
    Node node = make_node("MatMulInteger", 4);
    const Tensor y = evaluate_node(node, 10, {&a, &b, &azp, &bzp})[0];
    ASSERT_EQ(y.dtype(), DType::Int32);
    ASSERT_EQ(y.shape(), (Shape{batch, m, n}));
    const auto want = ref_matmul(a, b, values(azp), values(bzp), batch, m, k, n);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data_as<int32_t>()[i], want[i]) << i;
  }
}

TEST(MatMulInteger, VectorOperandsAndNoZeroPoints) {
  const Tensor a = random_q(DType::UInt8, {9}, 5), b = random_q(DType::UInt8, {9, 4}, 6);
  Node node = make_node("MatMulInteger", 2);
  const Tensor y = evaluate_node(node, 10, {&a, &b})[0];
  ASSERT_EQ(y.shape(), (Shape{4}));
  const auto want = ref_matmul(a, b, {}, {}, 1, 1, 9, 4);
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(y.data_as<int32_t>()[j], want[j]);
  // Scalar zero points apply to every element; an [M, 1] a zero point is per row.
  const Tensor a2 = random_q(DType::Int8, {4, 9}, 7), azp = random_q(DType::Int8, {4, 1}, 8);
  const Tensor bzp = random_q(DType::UInt8, {}, 9);
  Node node4 = make_node("MatMulInteger", 4);
  const Tensor y2 = evaluate_node(node4, 10, {&a2, &b, &azp, &bzp})[0];
  const auto want2 = ref_matmul(a2, b, values(azp), std::vector<int>(4, value(bzp, 0)), 1, 4, 9, 4);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(y2.data_as<int32_t>()[i], want2[i]);
}

// QLinearMatMul reference: exact sums, multiplier a_s * b_s / y_s rounded to the
// scales' type after each operation, round half even, saturate.
void check_qlinear_matmul(DType t, DType scale_type, bool per_row_col) {
  const int64_t batch = 2, m = 3, k = 11, n = 5;
  const Tensor a = random_q(t, {batch, m, k}, 11), b = random_q(t, {batch, k, n}, 12);
  const Shape as = per_row_col ? Shape{m} : Shape{}, bs = per_row_col ? Shape{n} : Shape{};
  const Tensor azp = random_q(t, as, 13), bzp = random_q(t, bs, 14), yzp = random_q(t, {}, 15);
  const Tensor asf = random_floats(as, 16, 0.005f, 0.02f), bsf = random_floats(bs, 17, 0.005f, 0.02f);
  const Tensor ysf = random_floats({}, 18, 0.2f, 0.4f);
  auto to_scale = [&](const Tensor& f) {
    if (scale_type == DType::Float32) return f;
    Tensor h(DType::Float16, f.shape());
    for (int64_t i = 0; i < f.numel(); ++i) h.data_as<Float16>()[i] = Float16(f.data_as<float>()[i]);
    return h;
  };
  const Tensor a_s = to_scale(asf), b_s = to_scale(bsf), y_s = to_scale(ysf);
  auto sv = [&](const Tensor& s, int64_t i) {
    return scale_type == DType::Float32 ? (double)s.data_as<float>()[i] : (double)(float)s.data_as<Float16>()[i];
  };
  auto round_s = [&](double v) { return scale_type == DType::Float32 ? (double)(float)v : (double)(float)Float16(v); };
  Node node = make_node("QLinearMatMul", 8);
  const Tensor y = evaluate_node(node, 21, {&a, &a_s, &azp, &b, &b_s, &bzp, &y_s, &yzp})[0];
  ASSERT_EQ(y.dtype(), t);
  const auto za = values(azp), zb = values(bzp);
  const auto sums = ref_matmul(a, b, per_row_col ? za : std::vector<int>(m, za[0]),
                               per_row_col ? zb : std::vector<int>(n, zb[0]), batch, m, k, n);
  const double lo = t == DType::Int8 ? -128 : 0, hi = t == DType::Int8 ? 127 : 255;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t r = i / n % m, c = i % n;
    const double mult = round_s(round_s(sv(a_s, per_row_col ? r : 0) * sv(b_s, per_row_col ? c : 0)) / sv(y_s, 0));
    const double want = std::clamp(round_half_even(sums[i] * mult) + value(yzp, 0), lo, hi);
    ASSERT_EQ(value(y, i), want) << i;
  }
}

TEST(QLinearMatMul, PerTensorAndPerRowColumnFloat32AndFloat16Scales) {
  for (DType t : {DType::UInt8, DType::Int8})
    for (DType s : {DType::Float32, DType::Float16})
      for (bool per : {false, true}) check_qlinear_matmul(t, s, per);
}

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr;
};

// Reference 2-D convolution sums with x zero point xzp, per-channel w zero points.
std::vector<int64_t> ref_conv(const ConvCase& p, const Tensor& x, const Tensor& w, int xzp, const std::vector<int>& wzp,
                              int64_t oh, int64_t ow) {
  std::vector<int64_t> y(p.n * p.m * oh * ow);
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t s = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t u = 0; u < p.kh; ++u)
              for (int64_t v = 0; v < p.kw; ++v) {
                const int64_t yy = i * p.sh - p.pt + u * p.dh, xx = j * p.sw - p.pl + v * p.dw;
                if (yy < 0 || yy >= p.h || xx < 0 || xx >= p.w) continue;
                const int64_t ch = m / mg * cg + c;
                s += (value(x, ((b * p.c + ch) * p.h + yy) * p.w + xx) - xzp) *
                     (value(w, ((m * cg + c) * p.kh + u) * p.kw + v) - wzp[m]);
              }
          y[((b * p.m + m) * oh + i) * ow + j] = s;
        }
  return y;
}

Node conv_node(const std::string& op, size_t inputs, const ConvCase& p, bool one_d) {
  Node node = make_node(op, inputs);
  node.attributes.set_int("group", p.group);
  if (one_d) {
    node.attributes.set_ints("strides", {p.sw});
    node.attributes.set_ints("dilations", {p.dw});
    node.attributes.set_ints("pads", {p.pl, p.pr});
  } else {
    node.attributes.set_ints("strides", {p.sh, p.sw});
    node.attributes.set_ints("dilations", {p.dh, p.dw});
    node.attributes.set_ints("pads", {p.pt, p.pl, p.pb, p.pr});
  }
  return node;
}

int64_t out_h(const ConvCase& p) { return (p.h + p.pt + p.pb - ((p.kh - 1) * p.dh + 1)) / p.sh + 1; }
int64_t out_w(const ConvCase& p) { return (p.w + p.pl + p.pr - ((p.kw - 1) * p.dw + 1)) / p.sw + 1; }

const ConvCase kConvCases[] = {
    {2, 4, 7, 6, 6, 3, 2, 2, 2, 1, 1, 2, 1, 0, 2, 1},  // groups, strides, dilations, uneven pads
    {1, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 2, 1, 9, 3, 1, 3, 1, 1, 2, 1, 1, 0, 2, 0, 1},  // 1-D as H = 1
};

TEST(ConvInteger, GroupsStridesDilationsPadsPerChannelZeroPoint) {
  for (const ConvCase& p : kConvCases) {
    const bool one_d = p.h == 1 && p.kh == 1;
    const int64_t oh = out_h(p), ow = out_w(p);
    const Shape xs = one_d ? Shape{p.n, p.c, p.w} : Shape{p.n, p.c, p.h, p.w};
    const Shape ws = one_d ? Shape{p.m, p.c / p.group, p.kw} : Shape{p.m, p.c / p.group, p.kh, p.kw};
    const Tensor x = random_q(DType::UInt8, xs, 21), w = random_q(DType::Int8, ws, 22);
    const Tensor xzp = random_q(DType::UInt8, {}, 23), wzp = random_q(DType::Int8, {p.m}, 24);
    Node node = conv_node("ConvInteger", 4, p, one_d);
    const Tensor y = evaluate_node(node, 10, {&x, &w, &xzp, &wzp})[0];
    ASSERT_EQ(y.dtype(), DType::Int32);
    ASSERT_EQ(y.numel(), p.n * p.m * oh * ow);
    const auto want = ref_conv(p, x, w, value(xzp, 0), values(wzp), oh, ow);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data_as<int32_t>()[i], want[i]) << i;
  }
}

TEST(QLinearConv, PerChannelWeightScaleAndBiasRequantizes) {
  for (DType t : {DType::UInt8, DType::Int8}) {
    const ConvCase& p = kConvCases[0];
    const int64_t oh = out_h(p), ow = out_w(p);
    const Tensor x = random_q(t, {p.n, p.c, p.h, p.w}, 31), w = random_q(DType::Int8, {p.m, p.c / p.group, p.kh, p.kw}, 32);
    const Tensor xzp = random_q(t, {}, 33), wzp = random_q(DType::Int8, {p.m}, 34), yzp = random_q(t, {}, 35);
    const Tensor xs = random_floats({}, 36, 0.01f, 0.03f), ws = random_floats({p.m}, 37, 0.01f, 0.03f);
    const Tensor ys = random_floats({}, 38, 0.05f, 0.1f);
    const Tensor bias = seeded_tensor(DType::Int32, {p.m}, 39, -3000, 3000);
    Node node = conv_node("QLinearConv", 9, p, false);
    const Tensor y = evaluate_node(node, 10, {&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &bias})[0];
    ASSERT_EQ(y.dtype(), t);
    ASSERT_EQ(y.shape(), (Shape{p.n, p.m, oh, ow}));
    const auto sums = ref_conv(p, x, w, value(xzp, 0), values(wzp), oh, ow);
    const double lo = t == DType::Int8 ? -128 : 0, hi = t == DType::Int8 ? 127 : 255;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t m = i / (oh * ow) % p.m;
      const float mult = xs.data_as<float>()[0] * ws.data_as<float>()[m] / ys.data_as<float>()[0];
      const double r = (double)(sums[i] + bias.data_as<int32_t>()[m]) * mult;
      ASSERT_EQ(value(y, i), std::clamp(round_half_even(r) + value(yzp, 0), lo, hi)) << i;
    }
  }
}

}  // namespace
}  // namespace ember
