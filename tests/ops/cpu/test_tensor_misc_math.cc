// The computing tensor ops against plain loop references on random inputs: CumSum and
// CumProd (every axis, exclusive, reverse), Einsum (matmul, batch, diagonal, ellipsis
// broadcast, implicit output, sums), Det, Col2Im, Shrink, Swish and Unique.
#include "test_movement_util.h"

#include <cmath>
#include <map>

namespace ember::test {
namespace {

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = t.dtype() == DType::Float64 ? t.data_as<double>()[i]
           : t.dtype() == DType::Int64 ? double(t.data_as<int64_t>()[i])
                                       : t.data_as<float>()[i];
  return v;
}

void expect_near_all(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.shape(), shape);
  const std::vector<double> g = as_doubles(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

TEST(TensorMisc, CumSumAndCumProdMatchRunningLoops) {
  std::mt19937 rng(21);
  const Shape shape = {3, 4, 5};
  for (std::string op : {"CumSum", "CumProd"})
    for (int64_t axis : {0, 1, -1})
      for (int exclusive = 0; exclusive < 2; ++exclusive)
        for (int reverse = 0; reverse < 2; ++reverse) {
          const Tensor x = random_tensor(DType::Float64, shape, rng);
          const Tensor at = ints({axis}, {});
          Node node = make_node(op, 2);
          node.attributes.set_int("exclusive", exclusive);
          node.attributes.set_int("reverse", reverse);
          const auto y = run(node, op == "CumSum" ? 14 : 26, {&x, &at});
          const int64_t a = axis < 0 ? axis + 3 : axis, n = shape[a];
          std::vector<double> want(x.numel());
          for (int64_t o = 0; o < x.numel(); ++o) {
            std::vector<int64_t> i = unravel(o, shape);
            double acc = op == "CumSum" ? 0 : 1;
            const int64_t pos = i[a];
            for (int64_t k = 0; k < n; ++k) {
              const bool before = reverse ? k > pos : k < pos;
              if (!(before || (!exclusive && k == pos))) continue;
              i[a] = k;
              const double v = x.data_as<double>()[ravel(i, shape)];
              acc = op == "CumSum" ? acc + v : acc * v;
            }
            want[o] = acc;
          }
          expect_near_all(y[0], shape, want, 1e-12);
        }
}

TEST(TensorMisc, CumSumOnInt32WithInt32Axis) {
  Tensor x(DType::Int32, {5});
  for (int i = 0; i < 5; ++i) x.data_as<int32_t>()[i] = i * 3 - 4;
  Tensor axis(DType::Int32, {1});
  const auto y = run(make_node("CumSum", 2), 11, {&x, &axis});
  int32_t acc = 0;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[0].data_as<int32_t>()[i], acc += i * 3 - 4);
}

// Reference einsum over explicit per-operand label strings, no ellipsis.
std::vector<double> einsum_reference(const std::vector<std::string>& terms, const std::string& out,
                                     const std::vector<const Tensor*>& xs, std::map<char, int64_t> dims) {
  std::string labels = out;
  for (const auto& [c, d] : dims)
    if (out.find(c) == std::string::npos) labels += c;
  Shape all;
  for (char c : labels) all.push_back(dims[c]);
  int64_t out_n = 1;
  for (char c : out) out_n *= dims[c];
  std::vector<double> result(out_n, 0.0);
  for (int64_t f = 0; f < shape_numel(all); ++f) {
    const std::vector<int64_t> i = unravel(f, all);
    auto index_of = [&](char c) { return i[labels.find(c)]; };
    double prod = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      std::vector<int64_t> idx;
      for (char c : terms[k]) idx.push_back(index_of(c));
      prod *= as_doubles(*xs[k])[ravel(idx, xs[k]->shape())];
    }
    std::vector<int64_t> oi;
    for (char c : out) oi.push_back(index_of(c));
    Shape os;
    for (char c : out) os.push_back(dims[c]);
    result[ravel(oi, os)] += prod;
  }
  return result;
}

TEST(TensorMisc, EinsumMatchesTheDefinitionForManyEquations) {
  std::mt19937 rng(22);
  struct Case {
    std::string equation;
    std::vector<std::string> terms;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {"ij", "jk"}, "ik"},     {"bij,bjk->bik", {"bij", "bjk"}, "bik"},
      {"ij,jk", {"ij", "jk"}, "ik"},         {"ii->i", {"ii"}, "i"},
      {"ii", {"ii"}, ""},                    {"bii->bi", {"bii"}, "bi"},
      {"ij->ji", {"ij"}, "ji"},              {"i,i", {"i", "i"}, ""},
      {"i,j->ij", {"i", "j"}, "ij"},         {"ijk->", {"ijk"}, ""},
      {"ab, bc ,cd->da", {"ab", "bc", "cd"}, "da"}, {"Ba,aB->aB", {"Ba", "aB"}, "aB"},
  };
  const std::map<char, int64_t> sizes = {{'i', 3}, {'j', 4}, {'k', 5}, {'b', 2}, {'a', 3},
                                         {'c', 5}, {'d', 2}, {'B', 4}};
  for (const Case& c : cases) {
    std::vector<Tensor> xs;
    std::vector<const Tensor*> ptrs;
    std::map<char, int64_t> dims;
    for (const std::string& t : c.terms) {
      Shape s;
      for (char l : t) s.push_back(dims[l] = sizes.at(l));
      xs.push_back(random_tensor(DType::Float32, s, rng));
    }
    for (const Tensor& x : xs) ptrs.push_back(&x);
    Node node = make_node("Einsum", xs.size());
    node.attributes.set_string("equation", c.equation);
    const auto y = run(node, 12, ptrs);
    Shape os;
    for (char l : c.out) os.push_back(dims[l]);
    expect_near_all(y[0], os, einsum_reference(c.terms, c.out, ptrs, dims), 1e-5);
  }
}

TEST(TensorMisc, EinsumBroadcastsEllipsisDims) {
  std::mt19937 rng(23);
  const Tensor a = random_tensor(DType::Float32, {2, 1, 3, 4}, rng);
  const Tensor b = random_tensor(DType::Float32, {5, 4, 2}, rng);
  Node node = make_node("Einsum", 2);
  node.attributes.set_string("equation", "...ij,...jk->...ik");
  const auto y = run(node, 12, {&a, &b});
  std::vector<double> want(2 * 5 * 3 * 2, 0.0);
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 5; ++q)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 2; ++k)
          for (int64_t j = 0; j < 4; ++j)
            want[ravel({p, q, i, k}, {2, 5, 3, 2})] +=
                double(a.data_as<float>()[ravel({p, 0, i, j}, a.shape())]) * b.data_as<float>()[ravel({q, j, k}, b.shape())];
  expect_near_all(y[0], {2, 5, 3, 2}, want, 1e-5);
}

TEST(TensorMisc, DetMatchesCofactorExpansion) {
  std::mt19937 rng(24);
  std::function<double(const std::vector<double>&, int64_t)> cofactor = [&](const std::vector<double>& m, int64_t n) {
    if (n == 1) return m[0];
    double det = 0;
    for (int64_t c = 0; c < n; ++c) {
      std::vector<double> minor;
      for (int64_t r = 1; r < n; ++r)
        for (int64_t k = 0; k < n; ++k)
          if (k != c) minor.push_back(m[r * n + k]);
      det += (c % 2 ? -1 : 1) * m[c] * cofactor(minor, n - 1);
    }
    return det;
  };
  for (int64_t n : {1, 2, 3, 5}) {
    const Tensor x = random_tensor(DType::Float32, {2, 3, n, n}, rng);
    const auto y = run(make_node("Det", 1), 11, {&x});
    std::vector<double> want;
    const std::vector<double> v = as_doubles(x);
    for (int64_t m = 0; m < 6; ++m) want.push_back(cofactor({v.begin() + m * n * n, v.begin() + (m + 1) * n * n}, n));
    expect_near_all(y[0], {2, 3}, want, 1e-4);
  }
}

TEST(TensorMisc, Col2ImSumsOverlappingBlocks) {
  std::mt19937 rng(25);
  const int64_t n = 2, c = 3, kh = 2, kw = 3, ih = 5, iw = 6, sh = 2, sw = 1, dh = 1, dw = 2, p0 = 1, p1 = 0, p2 = 1, p3 = 2;
  const int64_t bh = (ih + p0 + p2 - dh * (kh - 1) - 1) / sh + 1, bw = (iw + p1 + p3 - dw * (kw - 1) - 1) / sw + 1;
  const Tensor x = random_tensor(DType::Float32, {n, c * kh * kw, bh * bw}, rng);
  const Tensor image = ints({ih, iw}), block = ints({kh, kw});
  Node node = make_node("Col2Im", 3);
  node.attributes.set_ints("strides", {sh, sw});
  node.attributes.set_ints("dilations", {dh, dw});
  node.attributes.set_ints("pads", {p0, p1, p2, p3});
  const auto y = run(node, 18, {&x, &image, &block});
  std::vector<double> want(n * c * ih * iw, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t e = 0; e < kw; ++e)
          for (int64_t r = 0; r < bh; ++r)
            for (int64_t s = 0; s < bw; ++s) {
              const int64_t h = r * sh - p0 + a * dh, w = s * sw - p1 + e * dw;
              if (h < 0 || h >= ih || w < 0 || w >= iw) continue;
              want[ravel({b, ch, h, w}, {n, c, ih, iw})] +=
                  x.data_as<float>()[ravel({b, (ch * kh + a) * kw + e, r * bw + s}, x.shape())];
            }
  expect_near_all(y[0], {n, c, ih, iw}, want, 1e-5);
}

TEST(TensorMisc, ShrinkAndSwishMatchTheirFormulas) {
  std::mt19937 rng(26);
  const Tensor x = random_tensor(DType::Float32, {7, 3}, rng);
  Node shrink = make_node("Shrink", 1);
  shrink.attributes.set_float("lambd", 1.5f);
  shrink.attributes.set_float("bias", 0.5f);
  Node swish = make_node("Swish", 1);
  swish.attributes.set_float("alpha", 0.7f);
  const auto s = run(shrink, 9, {&x});
  const auto w = run(swish, 24, {&x});
  std::vector<double> want_s, want_w;
  for (double v : as_doubles(x)) {
    want_s.push_back(v < -1.5 ? v + 0.5 : v > 1.5 ? v - 0.5 : 0.0);
    want_w.push_back(v / (1 + std::exp(-0.7 * v)));
  }
  expect_near_all(s[0], x.shape(), want_s, 1e-6);
  expect_near_all(w[0], x.shape(), want_w, 1e-6);
}

TEST(TensorMisc, UniqueFlattenedSortedAndInFirstOccurrenceOrder) {
  const Tensor x = ints({4, 1, 4, -2, 1, 9, 4}, {7});
  for (int sorted = 0; sorted < 2; ++sorted) {
    Node node = make_node("Unique", 1, 4);
    node.attributes.set_int("sorted", sorted);
    const auto y = run(node, 11, {&x});
    const std::vector<int64_t> values = sorted ? std::vector<int64_t>{-2, 1, 4, 9} : std::vector<int64_t>{4, 1, -2, 9};
    for (size_t u = 0; u < values.size(); ++u) {
      EXPECT_EQ(y[0].data_as<int64_t>()[u], values[u]);
      int64_t first = -1, count = 0;
      for (int64_t j = 0; j < 7; ++j)
        if (x.data_as<int64_t>()[j] == values[u]) count++, first = first < 0 ? j : first;
      EXPECT_EQ(y[1].data_as<int64_t>()[u], first);
      EXPECT_EQ(y[3].data_as<int64_t>()[u], count);
    }
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(values[y[2].data_as<int64_t>()[j]], x.data_as<int64_t>()[j]);
  }
}

TEST(TensorMisc, UniqueAlongAnAxisComparesWholeSlices) {
  // Columns of a 2x5 matrix: c0 = (1,2), c1 = (0,5), c2 = (1,2), c3 = (1,0), c4 = (0,5).
  const Tensor x = floats({1, 0, 1, 1, 0, 2, 5, 2, 0, 5}, {2, 5});
  Node node = make_node("Unique", 1, 4);
  node.attributes.set_int("axis", -1);
  const auto y = run(node, 11, {&x});
  expect_same(y[0], floats({0, 1, 1, 5, 0, 2}, {2, 3}));  // sorted columns (0,5) < (1,0) < (1,2)
  expect_same(y[1], ints({1, 3, 0}));
  expect_same(y[2], ints({2, 0, 2, 1, 0}));
  expect_same(y[3], ints({2, 1, 2}));
}

}  // namespace
}  // namespace ember::test
