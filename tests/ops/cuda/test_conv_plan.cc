// The geometry of the CUDA convolutions checked on the CPU, without a GPU: a Conv on
// the padded copy of X with only symmetric pads, and a ConvTranspose computed
// unpadded then cropped, must equal the CPU's Conv/ConvTranspose with ONNX's
// attributes. (cuDNN's own arithmetic is what the GPU tests check.)
#include "cuda_harness.h"
#include "ops/cuda/conv_plan.h"
#include "ops/cuda/cuda_common.h"
#include "ops/evaluate.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace ember::test {
namespace {

// What launch_shift_copy does, on the host (float32).
Tensor shift_copy(const Tensor& x, const cuda::ShiftCopyArgs& a, const Shape& y_shape) {
  Tensor y(DType::Float32, y_shape);
  const int64_t in_plane = a.in[0] * a.in[1] * a.in[2], out_plane = a.out[0] * a.out[1] * a.out[2];
  EXPECT_EQ(a.planes * in_plane, x.numel());
  EXPECT_EQ(a.planes * out_plane, y.numel());
  for (int64_t p = 0; p < a.planes; ++p)
    for (int64_t o0 = 0; o0 < a.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < a.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < a.out[2]; ++o2) {
          const int64_t s0 = o0 - a.shift[0], s1 = o1 - a.shift[1], s2 = o2 - a.shift[2];
          const bool inside = s0 >= 0 && s0 < a.in[0] && s1 >= 0 && s1 < a.in[1] && s2 >= 0 && s2 < a.in[2];
          y.data_as<float>()[p * out_plane + (o0 * a.out[1] + o1) * a.out[2] + o2] =
              inside ? x.data_as<float>()[p * in_plane + (s0 * a.in[1] + s1) * a.in[2] + s2] : 0.f;
        }
  return y;
}

void check_conv(const Shape& xs, const Shape& ws, const Attributes& at) {
  SCOPED_TRACE("Conv X " + shape_to_string(xs) + " W " + shape_to_string(ws));
  const Tensor x = seeded_tensor(DType::Float32, xs, 1), w = seeded_tensor(DType::Float32, ws, 2);
  Node node = make_node("Conv", 2, 1, at);
  const Tensor want = evaluate_node(node, 22, {&x, &w})[0];

  const WindowGeometry g = forward_window(node, Shape(xs.begin() + 2, xs.end()), conv_kernel_shape(node, ws), false);
  const cuda::ConvPadding p = cuda::conv_padding(xs, g);
  const Tensor xp = p.copy ? shift_copy(x, p.copy_args, p.padded_x) : x;
  Node sym = make_node("Conv", 2, 1, at);
  sym.attributes.set_string("auto_pad", "NOTSET");
  Shape pads(p.symmetric.begin(), p.symmetric.end());
  pads.insert(pads.end(), p.symmetric.begin(), p.symmetric.end());
  sym.attributes.set_ints("pads", pads);
  const Tensor got = evaluate_node(sym, 22, {&xp, &w})[0];
  expect_close(got, want, 1e-5, 1e-6, "padded copy + symmetric pads");
}

TEST(CudaConvPlan, AsymmetricPadsThroughAPaddedCopy) {
  auto at = [](Shape strides, Shape dilations, Shape pads, int64_t group = 1, std::string auto_pad = "") {
    Attributes a;
    a.set_ints("strides", strides);
    a.set_ints("dilations", dilations);
    if (!pads.empty()) a.set_ints("pads", pads);
    a.set_int("group", group);
    if (!auto_pad.empty()) a.set_string("auto_pad", auto_pad);
    return a;
  };
  check_conv({1, 8, 7, 9}, {6, 4, 3, 3}, at({1, 2}, {1, 1}, {0, 1, 2, 1}, 2));
  check_conv({1, 3, 11, 13}, {4, 3, 3, 2}, at({1, 1}, {2, 1}, {1, 0, 2, 3}));
  check_conv({1, 4, 7, 9}, {5, 4, 3, 3}, at({2, 2}, {1, 1}, {}, 1, "SAME_UPPER"));
  check_conv({1, 4, 7, 9}, {5, 4, 4, 4}, at({1, 1}, {1, 1}, {}, 1, "SAME_LOWER"));
  check_conv({1, 4, 17}, {6, 2, 5}, at({1}, {2}, {3, 1}, 2));
  check_conv({1, 4, 5, 6, 7}, {4, 2, 2, 3, 3}, at({2, 1, 2}, {1, 1, 1}, {0, 1, 1, 1, 1, 0}, 2));
  check_conv({2, 8, 9, 11}, {16, 8, 3, 3}, at({1, 1}, {1, 1}, {1, 1, 1, 1}));  // symmetric: no copy
}

void check_deconv(const Shape& xs, const Shape& ws, const Attributes& at) {
  SCOPED_TRACE("ConvTranspose X " + shape_to_string(xs) + " W " + shape_to_string(ws));
  const Tensor x = seeded_tensor(DType::Float32, xs, 3), w = seeded_tensor(DType::Float32, ws, 4);
  Node node = make_node("ConvTranspose", 2, 1, at);
  const Tensor want = evaluate_node(node, 22, {&x, &w})[0];

  const TransposedWindow t = transposed_window(node, Shape(xs.begin() + 2, xs.end()), conv_kernel_shape(node, ws));
  const cuda::DeconvGeometry d = cuda::deconv_geometry(xs, want.shape(), t);
  // What cuDNN's backward data writes: the transposed convolution with these pads only.
  Node plain = make_node("ConvTranspose", 2, 1);
  plain.attributes.set_ints("strides", t.window.strides);
  plain.attributes.set_ints("dilations", t.window.dilations);
  plain.attributes.set_int("group", node.attributes.get_int_or("group", 1));
  Shape pads(d.pads.begin(), d.pads.end());
  pads.insert(pads.end(), d.pads.begin(), d.pads.end());
  plain.attributes.set_ints("pads", pads);
  const Tensor full = evaluate_node(plain, 22, {&x, &w})[0];
  ASSERT_EQ(full.shape(), d.full);
  const Tensor got = d.direct ? full : shift_copy(full, d.crop, want.shape());
  expect_close(got, want, 1e-5, 1e-6, d.direct ? "direct" : "full + crop");
}

TEST(CudaConvPlan, TransposedFullThenCropped) {
  auto at = [](Shape strides, Shape pads, Shape output_padding = {}, Shape output_shape = {}, int64_t group = 1,
               std::string auto_pad = "", Shape dilations = {}) {
    Attributes a;
    a.set_ints("strides", strides);
    if (!pads.empty()) a.set_ints("pads", pads);
    if (!output_padding.empty()) a.set_ints("output_padding", output_padding);
    if (!output_shape.empty()) a.set_ints("output_shape", output_shape);
    a.set_int("group", group);
    if (!auto_pad.empty()) a.set_string("auto_pad", auto_pad);
    if (!dilations.empty()) a.set_ints("dilations", dilations);
    return a;
  };
  check_deconv({1, 8, 5, 7}, {8, 4, 3, 3}, at({2, 2}, {1, 1, 1, 1}));
  check_deconv({1, 8, 5, 7}, {8, 4, 3, 3}, at({2, 2}, {1, 1, 1, 1}, {1, 1}));
  check_deconv({1, 4, 5, 7}, {4, 3, 4, 3}, at({2, 3}, {0, 1, 2, 0}));
  check_deconv({1, 4, 6, 6}, {4, 2, 3, 3}, at({2, 2}, {1, 1, 1, 1}, {}, {}, 2, "", {2, 1}));
  check_deconv({1, 4, 5, 5}, {4, 3, 3, 3}, at({2, 2}, {}, {}, {12, 11}));
  check_deconv({1, 4, 5, 5}, {4, 3, 3, 3}, at({2, 2}, {}, {}, {}, 1, "SAME_UPPER"));
  check_deconv({2, 4, 9}, {4, 5, 4}, at({3}, {1, 2}));
  check_deconv({1, 2, 3, 4, 5}, {2, 3, 3, 3, 3}, at({2, 1, 2}, {1, 1, 1, 1, 1, 1}));
}

// The KRSC filter NhwcConv makes once per session weight: W transposed to [K, R, S, C],
// the same bytes as the CPU's Transpose with perm [0, 2, 3, 1], in both float types;
// with more channels than W has, the extra ones are zero.
TEST(CudaConvPlan, FilterToKrscIsTheTranspose) {
  Attributes at;
  at.set_ints("perm", {0, 2, 3, 1});
  for (DType t : {DType::Float32, DType::Float16})
    for (const Shape& ws : {Shape{5, 3, 7, 2}, Shape{4, 16, 3, 3}, Shape{2, 1, 1, 5}})
      for (int64_t extra : {0, 5}) {
        SCOPED_TRACE(testing::Message() << shape_to_string(ws) << " " << dtype_name(t) << ", extra channels: " << extra);
        const Tensor w = seeded_tensor(t, ws, 3);
        const int64_t c = ws[1], channels = c + extra;
        const Tensor got = cuda::filter_to_krsc(w, channels);
        const Tensor want = evaluate_node(make_node("Transpose", 1, 1, at), 21, {&w})[0];
        ASSERT_EQ(got.shape(), (Shape{ws[0], ws[2], ws[3], channels}));
        const size_t esize = dtype_bytes(t, 1);
        const auto* g = static_cast<const unsigned char*>(got.data());
        const auto* e = static_cast<const unsigned char*>(want.data());
        for (int64_t pixel = 0; pixel < ws[0] * ws[2] * ws[3]; ++pixel) {
          ASSERT_EQ(std::memcmp(g + pixel * channels * esize, e + pixel * c * esize, c * esize), 0) << pixel;
          for (size_t b = c * esize; b < channels * esize; ++b) ASSERT_EQ(g[pixel * channels * esize + b], 0) << pixel;
        }
      }
}

// W [K, C, R, S] with zero channels up to `channels` (what the packed KRSC filter holds,
// in KCRS order for the CPU's NhwcConv).
Tensor zero_channels(const Tensor& w, int64_t channels) {
  const Shape& s = w.shape();
  Tensor out(DType::Float32, {s[0], channels, s[2], s[3]});
  const int64_t rs = s[2] * s[3];
  for (int64_t k = 0; k < s[0]; ++k)
    std::memcpy(out.data_as<float>() + k * channels * rs, w.data_as<float>() + k * s[1] * rs, s[1] * rs * sizeof(float));
  return out;
}

// NhwcConv's copy of X: the extra (asymmetric) pads and zero channels added, then a
// convolution with symmetric pads over the copy and the zero-channel filter equals the
// CPU's NhwcConv with ONNX's attributes.
void check_nhwc_conv(const Shape& xs, const Shape& ws, const Attributes& at, int64_t channels) {
  SCOPED_TRACE("NhwcConv X " + shape_to_string(xs) + " W " + shape_to_string(ws) + " to " + std::to_string(channels) +
               " channels");
  const Tensor x = seeded_tensor(DType::Float32, {xs[0], xs[2], xs[3], xs[1]}, 5);
  const Tensor w = seeded_tensor(DType::Float32, ws, 6);
  Node node = make_node("NhwcConv", 2, 1, at, "com.ember");
  const Tensor want = evaluate_node(node, 1, {&x, &w})[0];

  const WindowGeometry g = forward_window(node, Shape(xs.begin() + 2, xs.end()), conv_kernel_shape(node, ws), false);
  const cuda::ConvPadding p = cuda::conv_padding_nhwc(xs, g, channels);
  ASSERT_TRUE(p.copy);
  const Shape& pn = p.padded_x;  // NCHW order
  const Tensor xp = shift_copy(x, p.copy_args, {pn[0], pn[2], pn[3], pn[1]});
  const Tensor wp = zero_channels(w, channels);
  Node sym = make_node("NhwcConv", 2, 1, at, "com.ember");
  sym.attributes.set_string("auto_pad", "NOTSET");
  Shape pads(p.symmetric.begin(), p.symmetric.end());
  pads.insert(pads.end(), p.symmetric.begin(), p.symmetric.end());
  sym.attributes.set_ints("pads", pads);
  const Tensor got = evaluate_node(sym, 1, {&xp, &wp})[0];
  expect_close(got, want, 1e-5, 1e-6, "NHWC padded copy + zero channels + symmetric pads");
}

// A 2-D window's attributes: strides, and pads or auto_pad where given.
Attributes window(Shape strides, Shape pads, std::string auto_pad = "") {
  Attributes a;
  a.set_ints("strides", strides);
  if (!pads.empty()) a.set_ints("pads", pads);
  if (!auto_pad.empty()) a.set_string("auto_pad", auto_pad);
  return a;
}

TEST(CudaConvPlan, NhwcCopyAddsPadsAndZeroChannels) {
  check_nhwc_conv({2, 3, 19, 17}, {8, 3, 7, 7}, window({2, 2}, {3, 3, 3, 3}), 8);        // a stem: channels only
  check_nhwc_conv({1, 3, 11, 13}, {4, 3, 3, 3}, window({2, 2}, {}, "SAME_UPPER"), 8);     // and pads
  check_nhwc_conv({1, 4, 7, 9}, {5, 4, 3, 3}, window({1, 1}, {0, 1, 2, 1}), 4);           // pads only
  check_nhwc_conv({1, 12, 6, 5}, {3, 12, 2, 2}, window({1, 1}, {1, 0, 0, 1}), 16);
}

// What launch_space_to_depth does, on the host (float32): X' [N, H', W', 32] from an
// NHWC X, as conv_impl.h states it.
Tensor space_to_depth_copy(const Tensor& x, const cuda::SpaceToDepthArgs& a) {
  const int64_t channels = cuda::kSpaceToDepthChannels, s = a.stride;
  Tensor y(DType::Float32, {a.n, a.out_h, a.out_w, channels});  // zero-filled
  EXPECT_EQ(x.numel(), a.n * a.h * a.w * a.c);
  for (int64_t n = 0; n < a.n; ++n)
    for (int64_t u = 0; u < a.out_h; ++u)
      for (int64_t v = 0; v < a.out_w; ++v)
        for (int64_t i = 0; i < s; ++i)
          for (int64_t j = 0; j < s; ++j)
            for (int64_t c = 0; c < a.c; ++c) {
              const int64_t row = s * u + i - a.pad_top, col = s * v + j - a.pad_left;
              if (row < 0 || row >= a.h || col < 0 || col >= a.w) continue;
              y.data_as<float>()[((n * a.out_h + u) * a.out_w + v) * channels + (i * s + j) * a.c + c] =
                  x.data_as<float>()[((n * a.h + row) * a.w + col) * a.c + c];
            }
  return y;
}

// A stem convolution rewritten by space-to-depth: the copy of X, then a stride-1
// convolution without pads over it and the regrouped filter, equals the CPU's NhwcConv
// with ONNX's attributes.
void check_space_to_depth(const Shape& xs, const Shape& ws, const Attributes& at) {
  SCOPED_TRACE("space-to-depth NhwcConv X " + shape_to_string(xs) + " W " + shape_to_string(ws));
  const Tensor x = seeded_tensor(DType::Float32, {xs[0], xs[2], xs[3], xs[1]}, 8);
  const Tensor w = seeded_tensor(DType::Float32, ws, 9);
  Node node = make_node("NhwcConv", 2, 1, at, "com.ember");
  const Tensor want = evaluate_node(node, 1, {&x, &w})[0];

  const WindowGeometry g = forward_window(node, Shape(xs.begin() + 2, xs.end()), conv_kernel_shape(node, ws), false);
  const cuda::SpaceToDepthConv r = cuda::space_to_depth_conv(xs, ws, g);
  const Tensor xp = space_to_depth_copy(x, r.copy);
  ASSERT_EQ(xp.shape(), (Shape{r.x[0], r.x[2], r.x[3], r.x[1]}));
  const Tensor krsc = cuda::filter_to_space_to_depth_krsc(w, g.strides[0]);
  ASSERT_EQ(krsc.shape(), (Shape{r.w[0], r.w[2], r.w[3], r.w[1]}));
  Attributes to_kcrs;
  to_kcrs.set_ints("perm", {0, 3, 1, 2});
  const Tensor wp = evaluate_node(make_node("Transpose", 1, 1, to_kcrs), 21, {&krsc})[0];
  const Tensor got = evaluate_node(make_node("NhwcConv", 2, 1, {}, "com.ember"), 1, {&xp, &wp})[0];
  expect_close(got, want, 1e-5, 1e-6, "space-to-depth copy + stride-1 convolution");
}

TEST(CudaConvPlan, SpaceToDepthStemIsTheSameConvolution) {
  check_space_to_depth({2, 3, 19, 17}, {8, 3, 7, 7}, window({2, 2}, {3, 3, 3, 3}));    // ResNet's stem, odd sizes
  check_space_to_depth({1, 3, 11, 13}, {4, 3, 3, 3}, window({2, 2}, {}, "SAME_UPPER"));  // asymmetric pads
  check_space_to_depth({1, 2, 13, 14}, {5, 2, 5, 6}, window({3, 3}, {1, 2, 2, 0}));     // stride 3, R != S
  check_space_to_depth({1, 7, 9, 8}, {3, 7, 3, 3}, window({2, 2}, {1, 1, 1, 1}));      // 28 of the 32 channels
  check_space_to_depth({2, 1, 10, 10}, {6, 1, 5, 4}, window({4, 4}, {0, 0, 0, 0}));    // a filter narrower than s
  // Where the kernel uses it: ResNet's stem and wider filters; not a filter no wider
  // than the stride, too many channels, different strides, dilations, or where the
  // rewrite does more than 1.5 times the work (MobileNet's 3x3 stem: 4 taps x 32
  // channels against 9 x 8).
  const auto applies = [&](const Shape& xs, const Shape& ws, const Attributes& a) {
    Node node = make_node("NhwcConv", 2, 1, a, "com.ember");
    const WindowGeometry g = forward_window(node, Shape(xs.begin() + 2, xs.end()), conv_kernel_shape(node, ws), false);
    return cuda::space_to_depth_applies(xs, ws, g, 1);
  };
  EXPECT_TRUE(applies({1, 3, 224, 224}, {64, 3, 7, 7}, window({2, 2}, {3, 3, 3, 3})));
  EXPECT_TRUE(applies({1, 2, 13, 14}, {5, 2, 5, 6}, window({3, 3}, {1, 2, 2, 0})));
  EXPECT_FALSE(applies({1, 3, 224, 224}, {32, 3, 3, 3}, window({2, 2}, {1, 1, 1, 1})));
  EXPECT_FALSE(applies({1, 3, 16, 16}, {8, 3, 2, 2}, window({2, 2}, {})));
  EXPECT_FALSE(applies({1, 9, 16, 16}, {8, 9, 3, 3}, window({2, 2}, {})));
  EXPECT_FALSE(applies({1, 3, 16, 16}, {8, 3, 3, 3}, window({2, 1}, {})));
  Attributes dilated = window({2, 2}, {});
  dilated.set_ints("dilations", {2, 2});
  EXPECT_FALSE(applies({1, 3, 16, 16}, {8, 3, 3, 3}, dilated));
}

// A device copy checked bit for bit: x and the expected y narrowed to 2- or 4-byte bit
// patterns (the copies move bits, whatever the type), x uploaded, y poisoned, `launch`
// run with the device pointers, y downloaded and compared.
template <class Launch>
void expect_device_copy(const Tensor& x, const Tensor& want, int bytes, Launch launch) {
  const auto narrow = [&](const Tensor& t) {
    std::vector<uint8_t> out(t.numel() * bytes);
    for (int64_t i = 0; i < t.numel(); ++i) std::memcpy(&out[i * bytes], t.data_as<float>() + i, bytes);
    return out;
  };
  const std::vector<uint8_t> host_x = narrow(x), host_want = narrow(want);
  cuda::StreamContext* context = cuda::create_stream_context(0);
  void *dx = nullptr, *dy = nullptr;
  cuda::check(cudaMalloc(&dx, host_x.size()), "cudaMalloc");
  cuda::check(cudaMalloc(&dy, host_want.size()), "cudaMalloc");
  cuda::check(cudaMemcpy(dx, host_x.data(), host_x.size(), cudaMemcpyHostToDevice), "upload");
  cuda::check(cudaMemset(dy, 0x7f, host_want.size()), "cudaMemset");
  launch(dx, dy, context->stream);
  std::vector<uint8_t> got(host_want.size());
  cuda::check(cudaMemcpyAsync(got.data(), dy, got.size(), cudaMemcpyDeviceToHost, context->stream), "download");
  cuda::check(cudaStreamSynchronize(context->stream), "device copy");
  cudaFree(dx);
  cudaFree(dy);
  cuda::destroy_stream_context(context);
  EXPECT_EQ(got, host_want);
}

// launch_space_to_depth against the host copy above, bit for bit, in 2- and 4-byte
// values.
TEST(CudaConvPlan, SpaceToDepthOnTheDeviceMatchesTheHostCopy) {
  EMBER_REQUIRE_GPU();
  struct Case {
    int64_t n, h, w, c, out_h, out_w, stride, pad_top, pad_left;
  };
  const Case cases[] = {
      {2, 19, 17, 3, 13, 12, 2, 3, 3},  // ResNet's stem, odd sizes
      {1, 11, 13, 7, 6, 7, 2, 0, 1},    // 28 channels of 32
      {1, 13, 14, 2, 6, 6, 3, 1, 2},    // stride 3
  };
  for (const Case& c : cases)
    for (int bytes : {2, 4}) {
      SCOPED_TRACE(testing::Message() << "X " << c.n << "x" << c.h << "x" << c.w << "x" << c.c << ", stride "
                                      << c.stride << ", " << bytes << "-byte values");
      cuda::SpaceToDepthArgs a;
      a.n = c.n, a.h = c.h, a.w = c.w, a.c = c.c, a.out_h = c.out_h, a.out_w = c.out_w;
      a.stride = c.stride, a.pad_top = c.pad_top, a.pad_left = c.pad_left;
      const Tensor x = seeded_tensor(DType::Float32, {c.n, c.h, c.w, c.c}, 10);
      const Tensor want = space_to_depth_copy(x, a);
      expect_device_copy(x, want, bytes, [&](const void* dx, void* dy, cudaStream_t stream) {
        a.x = dx;
        a.y = dy;
        cuda::launch_space_to_depth(bytes, a, cuda::space_to_depth_taps(a), stream);
      });
    }
}

// launch_shift_copy against the host copy above, both kernels: the general one, and the
// one that writes a 16-byte row per thread (float16 channels padded to 8, float32 to 4).
TEST(CudaConvPlan, ShiftCopyOnTheDeviceMatchesTheHostCopy) {
  EMBER_REQUIRE_GPU();
  struct Case {
    int64_t planes, in[3], out[3], shift[3];
  };
  const Case cases[] = {
      {2, {5, 7, 3}, {5, 7, 8}, {0, 0, 0}},  // channels 3 -> 8 (16 bytes in float16)
      {2, {5, 7, 3}, {7, 9, 8}, {1, 2, 0}},  // and pads
      {3, {5, 7, 3}, {5, 7, 4}, {0, 0, 0}},  // channels 3 -> 4 (16 bytes in float32)
      {2, {4, 6, 5}, {6, 9, 7}, {1, 0, 1}},  // the general kernel
  };
  for (const Case& c : cases)
    for (int bytes : {2, 4}) {
      SCOPED_TRACE(testing::Message() << "in " << c.in[0] << "x" << c.in[1] << "x" << c.in[2] << " out " << c.out[0]
                                      << "x" << c.out[1] << "x" << c.out[2] << ", " << bytes << "-byte values");
      cuda::ShiftCopyArgs a;
      a.planes = c.planes;
      for (int i = 0; i < 3; ++i) a.in[i] = c.in[i], a.out[i] = c.out[i], a.shift[i] = c.shift[i];
      const Tensor x = seeded_tensor(DType::Float32, {c.planes, c.in[0], c.in[1], c.in[2]}, 7);
      const Tensor want = shift_copy(x, a, {c.planes, c.out[0], c.out[1], c.out[2]});
      expect_device_copy(x, want, bytes, [&](const void* dx, void* dy, cudaStream_t stream) {
        a.x = dx;
        a.y = dy;
        cuda::launch_shift_copy(bytes, a, stream);
      });
    }
}

}  // namespace
}  // namespace ember::test
