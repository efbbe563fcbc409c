// ConvTranspose against a scatter-loop reference (every input pixel times every tap
// added to the output pixel it reaches).
#include "test_conv_util.h"

namespace ember::test {
namespace {

constexpr float kRtol = 1e-4f, kAtol = 1e-5f;

struct Deconv2d {
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, top = 0, left = 0, bottom = 0, right = 0;
  int64_t oph = 0, opw = 0, group = 1;
};

// Output size by the ONNX formula; pads are the effective ones.
std::vector<float> reference_deconv(const Tensor& x, const Tensor& w, const Tensor* b, const Deconv2d& p,
                                    Shape* y_shape) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t kh = w.shape()[2], kw = w.shape()[3], ocg = w.shape()[1], icg = c / p.group, m = ocg * p.group;
  const int64_t oh = p.sh * (h - 1) + p.oph + (kh - 1) * p.dh + 1 - p.top - p.bottom;
  const int64_t ow = p.sw * (wd - 1) + p.opw + (kw - 1) * p.dw + 1 - p.left - p.right;
  *y_shape = {n, m, oh, ow};
  std::vector<double> y(n * m * oh * ow);
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t i = 0; i < oh * ow; ++i) y[(bn * m + oc) * oh * ow + i] = b ? b->data_as<float>()[oc] : 0;
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wd; ++ix)
          for (int64_t oc = 0; oc < ocg; ++oc)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t oy = iy * p.sh - p.top + ky * p.dh, ox = ix * p.sw - p.left + kx * p.dw;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int64_t out_c = (ci / icg) * ocg + oc;
                y[((bn * m + out_c) * oh + oy) * ow + ox] +=
                    double(x.data_as<float>()[((bn * c + ci) * h + iy) * wd + ix]) *
                    w.data_as<float>()[((ci * ocg + oc) * kh + ky) * kw + kx];
              }
  return {y.begin(), y.end()};
}

Node deconv_node(const Deconv2d& p) {
  Node node = make_node("ConvTranspose", 3);
  node.attributes.set_ints("strides", {p.sh, p.sw});
  node.attributes.set_ints("dilations", {p.dh, p.dw});
  node.attributes.set_ints("pads", {p.top, p.left, p.bottom, p.right});
  node.attributes.set_ints("output_padding", {p.oph, p.opw});
  node.attributes.set_int("group", p.group);
  return node;
}

void check(const Node& node, const Shape& x_shape, const Shape& w_shape, const Deconv2d& effective,
           bool runtime_weights = false) {
  const Tensor x = random_floats(x_shape, 91), w = random_floats(w_shape, 92);
  const Tensor b = random_floats({w_shape[1] * effective.group}, 93);
  const auto y = runtime_weights ? run_node_runtime_inputs(node, 22, {&x, &w, &b}) : run_node(node, 22, {&x, &w, &b});
  Shape want_shape;
  const std::vector<float> want = reference_deconv(x, w, &b, effective, &want_shape);
  ASSERT_EQ(y[0].shape(), want_shape);
  expect_close(y[0], want, kRtol, kAtol);
}

TEST(ConvTranspose, StridesPadsDilationsGroups) {
  const Deconv2d cases[] = {
      {},                                           // plain
      {2, 2, 1, 1, 1, 1, 1, 1, 1, 1},               // stride 2 with output_padding inside the pads
      {2, 3, 1, 1, 0, 0, 0, 0, 1, 2},               // output_padding beyond the pads
      {1, 2, 2, 1, 1, 0, 2, 1, 0, 0, 2},            // dilation, asymmetric pads, group 2
      {2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 4},            // depthwise-like: group = C
  };
  for (const Deconv2d& p : cases) {
    check(deconv_node(p), {1, 4, 5, 7}, {4, 3, 3, 2}, p);
  }
  check(deconv_node(cases[3]), {1, 4, 5, 7}, {4, 3, 3, 2}, cases[3], /*runtime_weights=*/true);
}

TEST(ConvTranspose, OutputShapeAndAutoPad) {
  // x 5x7, k 3x3, stride 2: full size 11x15. output_shape 10x14 -> total pad 1 each:
  // SAME_UPPER puts it at the end, NOTSET and SAME_LOWER at the start.
  Node node = make_node("ConvTranspose", 3);
  node.attributes.set_ints("strides", {2, 2});
  node.attributes.set_ints("output_shape", {10, 14});
  check(node, {1, 2, 5, 7}, {2, 3, 3, 3}, {2, 2, 1, 1, 1, 1, 0, 0});
  node.attributes.set_string("auto_pad", "SAME_UPPER");
  check(node, {1, 2, 5, 7}, {2, 3, 3, 3}, {2, 2, 1, 1, 0, 0, 1, 1});
  node.attributes.erase("output_shape");  // SAME without output_shape: in * stride
  check(node, {1, 2, 5, 7}, {2, 3, 3, 3}, {2, 2, 1, 1, 0, 0, 1, 1});
  node.attributes.set_string("auto_pad", "SAME_LOWER");
  check(node, {1, 2, 5, 7}, {2, 3, 3, 3}, {2, 2, 1, 1, 1, 1, 0, 0});
}

TEST(ConvTranspose, OutputShapeOneLargerAddsARowAtTheEnd) {
  // x 3x3, k 3x3, strides 3x2: full size 9x7. output_shape 10x8 is a total padding of
  // -1 per dim, split as the ONNX reference does: 0 at the start, -1 at the end.
  Node node = make_node("ConvTranspose", 3);
  node.attributes.set_ints("strides", {3, 2});
  node.attributes.set_ints("output_shape", {10, 8});
  check(node, {1, 2, 3, 3}, {2, 3, 3, 3}, {3, 2, 1, 1, 0, 0, -1, -1});
  node.attributes.set_ints("output_shape", {11, 8});  // -2: the start would be padded by -1
  const Tensor x = random_floats({1, 2, 3, 3}, 96), w = random_floats({2, 3, 3, 3}, 97);
  try {
    run_node(node, 22, {&x, &w});
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("negative padding"), std::string::npos) << e.what();
  }
}

TEST(ConvTranspose, OneSpatialDim) {
  const Tensor x = random_floats({1, 3, 6}, 94), w = random_floats({3, 2, 3}, 95);
  Node node = make_node("ConvTranspose", 2);
  node.attributes.set_ints("strides", {2});
  node.attributes.set_ints("pads", {1, 0});
  const auto y = run_node(node, 11, {&x, &w});
  const Tensor x2 = Tensor::view(DType::Float32, {1, 3, 1, 6}, const_cast<void*>(x.data()));
  const Tensor w2 = Tensor::view(DType::Float32, {3, 2, 1, 3}, const_cast<void*>(w.data()));
  Shape shape;
  expect_close(y[0], reference_deconv(x2, w2, nullptr, {1, 2, 1, 1, 0, 1, 0, 0}, &shape), kRtol, kAtol);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 12}));
}

}  // namespace
}  // namespace ember::test
