// LRN, GlobalLpPool, MaxUnpool, AffineGrid and RoiAlign against plain loops.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ember {
namespace {

using test::make_node;
using test::random_floats;

TEST(VisionPool, LrnMatchesLoopWithEvenSize) {
  const int64_t n = 2, c = 5, s = 3, size = 4;
  const Tensor x = random_floats({n, c, s}, 1, -2, 2);
  Node node = make_node("LRN", {"x"}, {"y"});
  node.attributes.set_int("size", size);
  node.attributes.set_float("alpha", 0.3f);
  node.attributes.set_float("beta", 0.6f);
  node.attributes.set_float("bias", 1.5f);
  const Tensor y = evaluate_node(node, 13, {&x})[0];
  const float* xs = x.data_as<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < s; ++i) {
        double sum = 0;  // window: 1 channel before, 2 after
        for (int64_t j = std::max<int64_t>(0, ch - 1); j <= std::min<int64_t>(c - 1, ch + 2); ++j)
          sum += std::pow(xs[(b * c + j) * s + i], 2);
        const int64_t at = (b * c + ch) * s + i;
        EXPECT_NEAR(y.data_as<float>()[at], xs[at] / std::pow(1.5 + 0.3 / size * sum, 0.6), 1e-5);
      }
}

TEST(VisionPool, GlobalLpPoolIsThePNormOfEachPlane) {
  const Tensor x = random_floats({2, 3, 4, 5}, 2, -2, 2);
  Node node = make_node("GlobalLpPool", {"x"}, {"y"});
  node.attributes.set_int("p", 3);
  const Tensor y = evaluate_node(node, 2, {&x})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 1, 1}));
  for (int64_t plane = 0; plane < 6; ++plane) {
    double sum = 0;
    for (int64_t i = 0; i < 20; ++i) sum += std::pow(std::fabs(x.data_as<float>()[plane * 20 + i]), 3);
    EXPECT_NEAR(y.data_as<float>()[plane], std::cbrt(sum), 1e-4);
  }
}

TEST(VisionPool, MaxUnpoolScattersAtIndices) {
  const Tensor x = random_floats({1, 2, 2, 2}, 3, 1, 2);
  Tensor indices(DType::Int64, {1, 2, 2, 2});
  const int64_t idx[8] = {0, 3, 9, 14, 17, 18, 28, 31};  // flat over [1, 2, 4, 4]
  std::copy(idx, idx + 8, indices.data_as<int64_t>());
  Node node = make_node("MaxUnpool", {"x", "i"}, {"y"});
  node.attributes.set_ints("kernel_shape", {2, 2});
  node.attributes.set_ints("strides", {2, 2});
  const Tensor y = evaluate_node(node, 11, {&x, &indices})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 4}));
  std::vector<float> expected(32, 0.f);
  for (int i = 0; i < 8; ++i) expected[idx[i]] = x.data_as<float>()[i];
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y.data_as<float>()[i], expected[i]) << i;
}

TEST(VisionPool, AffineGrid2dMapsBaseCoordinates) {
  const Tensor theta = random_floats({2, 2, 3}, 4, -1, 1);
  Tensor size(DType::Int64, {4});
  const int64_t sz[4] = {2, 1, 3, 5};
  std::copy(sz, sz + 4, size.data_as<int64_t>());
  for (bool align : {false, true}) {
    Node node = make_node("AffineGrid", {"theta", "size"}, {"y"});
    node.attributes.set_int("align_corners", align);
    const Tensor y = evaluate_node(node, 20, {&theta, &size})[0];
    ASSERT_EQ(y.shape(), (Shape{2, 3, 5, 2}));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 5; ++w) {
          const double bx = align ? -1 + 2.0 * w / 4 : (2.0 * w + 1) / 5 - 1;
          const double by = align ? -1 + 2.0 * h / 2 : (2.0 * h + 1) / 3 - 1;
          const float* t = theta.data_as<float>() + n * 6;
          for (int r = 0; r < 2; ++r)
            EXPECT_NEAR(y.data_as<float>()[((n * 3 + h) * 5 + w) * 2 + r], t[r * 3] * bx + t[r * 3 + 1] * by + t[r * 3 + 2], 1e-5);
        }
  }
}

// One roi inside the image, sampling_ratio 2, half_pixel: each output averages four
// bilinear samples.
TEST(VisionPool, RoiAlignAverageMatchesLoop) {
  const int64_t h = 6, w = 7;
  const Tensor x = random_floats({1, 1, h, w}, 5, -1, 1);
  Tensor rois(DType::Float32, {1, 4});
  const float box[4] = {1.2f, 0.7f, 5.9f, 4.4f};
  std::copy(box, box + 4, rois.data_as<float>());
  Tensor batch(DType::Int64, {1});
  Node node = make_node("RoiAlign", {"x", "rois", "b"}, {"y"});
  node.attributes.set_int("output_height", 2);
  node.attributes.set_int("output_width", 3);
  node.attributes.set_int("sampling_ratio", 2);
  const Tensor y = evaluate_node(node, 16, {&x, &rois, &batch})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 3}));
  const auto at = [&](double yy, double xx) {
    const int64_t y0 = int64_t(yy), x0 = int64_t(xx);
    const double ly = yy - y0, lx = xx - x0;
    const float* p = x.data_as<float>();
    return (1 - ly) * (1 - lx) * p[y0 * w + x0] + (1 - ly) * lx * p[y0 * w + x0 + 1] +
           ly * (1 - lx) * p[(y0 + 1) * w + x0] + ly * lx * p[(y0 + 1) * w + x0 + 1];
  };
  const double x1 = box[0] - 0.5, y1 = box[1] - 0.5, bw = (box[2] - box[0]) / 3.0, bh = (box[3] - box[1]) / 2.0;
  for (int ph = 0; ph < 2; ++ph)
    for (int pw = 0; pw < 3; ++pw) {
      double sum = 0;
      for (int iy = 0; iy < 2; ++iy)
        for (int ix = 0; ix < 2; ++ix) sum += at(y1 + ph * bh + (iy + 0.5) * bh / 2, x1 + pw * bw + (ix + 0.5) * bw / 2);
      EXPECT_NEAR(y.data_as<float>()[ph * 3 + pw], sum / 4, 1e-5) << ph << "," << pw;
    }
}

}  // namespace
}  // namespace ember
