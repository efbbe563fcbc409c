// DeformConv against a direct loop written from the spec: every output sums, over its
// group's input channels and kernel taps, W times mask times X sampled bilinearly at
// the tap's position plus its offset (zero outside X).
#include "test_conv_util.h"

#include <thread>

namespace ember::test {
namespace {

// Tolerance: the kernel samples and sums in float32 (the reference in double), over at
// most ~100 terms of magnitude <= 1.
constexpr float kRtol = 1e-4f, kAtol = 1e-4f;

struct DeformParams {
  Shape strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};  // pads: top, left, bottom, right
  int64_t group = 1, offset_group = 1;
};

// X[n, c] at (y, x) by bilinear interpolation, zero outside the plane.
double sample(const Tensor& x, int64_t n, int64_t c, double y, double xf) {
  const int64_t h = x.shape()[2], w = x.shape()[3];
  if (y <= -1 || y >= h || xf <= -1 || xf >= w) return 0;
  const int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(xf));
  const double ly = y - y0, lx = xf - x0;
  auto at = [&](int64_t yy, int64_t xx) {
    return yy < 0 || yy >= h || xx < 0 || xx >= w ? 0.0 : double(x.data_as<float>()[((n * x.shape()[1] + c) * h + yy) * w + xx]);
  };
  return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) + ly * (1 - lx) * at(y0 + 1, x0) +
         ly * lx * at(y0 + 1, x0 + 1);
}

std::vector<float> reference_deform_conv(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor* b,
                                         const Tensor* mask, const DeformParams& p) {
  const int64_t n_batch = x.shape()[0], c_in = x.shape()[1], m = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t oh = offset.shape()[2], ow = offset.shape()[3];
  const int64_t cg = c_in / p.group, mg = m / p.group, per_offset_group = c_in / p.offset_group;
  auto off = [&](int64_t n, int64_t ch, int64_t y, int64_t xx) {
    return double(offset.data_as<float>()[((n * offset.shape()[1] + ch) * oh + y) * ow + xx]);
  };
  std::vector<float> y;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = b ? b->data_as<float>()[oc] : 0;
          for (int64_t ic = 0; ic < cg; ++ic) {
            const int64_t c = oc / mg * cg + ic, og = c / per_offset_group;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t tap = (og * kh + i) * kw + j;
                const double py = oy * p.strides[0] - p.pads[0] + i * p.dilations[0] + off(n, 2 * tap, oy, ox);
                const double px = ox * p.strides[1] - p.pads[1] + j * p.dilations[1] + off(n, 2 * tap + 1, oy, ox);
                const double mk =
                    mask ? mask->data_as<float>()[((n * mask->shape()[1] + tap) * oh + oy) * ow + ox] : 1.0;
                acc += w.data_as<float>()[((oc * cg + ic) * kh + i) * kw + j] * mk * sample(x, n, c, py, px);
              }
          }
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

Node deform_node(const DeformParams& p, size_t inputs) {
  Node node = make_node("DeformConv", inputs);
  node.attributes.set_ints("strides", p.strides);
  node.attributes.set_ints("dilations", p.dilations);
  node.attributes.set_ints("pads", p.pads);
  node.attributes.set_int("group", p.group);
  node.attributes.set_int("offset_group", p.offset_group);
  return node;
}

// Output spatial size as Conv's.
int64_t out_len(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pads) {
  return (in + pads - (k - 1) * dilation - 1) / stride + 1;
}

struct Inputs {
  Tensor x, w, offset, b, mask;
};

// Offsets in [-2.5, 2.5] move samples across the edges and outside X entirely; a few
// are whole numbers (samples exactly on a row or column).
Inputs random_inputs(const Shape& x_shape, const Shape& w_shape, const DeformParams& p, uint32_t seed) {
  const int64_t oh = out_len(x_shape[2], w_shape[2], p.strides[0], p.dilations[0], p.pads[0] + p.pads[2]);
  const int64_t ow = out_len(x_shape[3], w_shape[3], p.strides[1], p.dilations[1], p.pads[1] + p.pads[3]);
  const int64_t taps = p.offset_group * w_shape[2] * w_shape[3];
  Inputs in{random_floats(x_shape, seed), random_floats(w_shape, seed + 1),
            random_floats({x_shape[0], 2 * taps, oh, ow}, seed + 2, -2.5, 2.5), random_floats({w_shape[0]}, seed + 3),
            random_floats({x_shape[0], taps, oh, ow}, seed + 4, 0, 1)};
  float* o = in.offset.data_as<float>();
  for (int64_t i = 0; i < in.offset.numel(); i += 7) o[i] = std::round(o[i]);
  return in;
}

void check(const Shape& x_shape, const Shape& w_shape, const DeformParams& p, bool bias, bool mask,
           uint32_t seed = 1, int threads = 1) {
  const Inputs in = random_inputs(x_shape, w_shape, p, seed);
  const Tensor* b = bias ? &in.b : nullptr;
  const Tensor* mk = mask ? &in.mask : nullptr;
  std::vector<const Tensor*> inputs{&in.x, &in.w, &in.offset, b, mk};
  inputs.resize(mask ? 5 : bias ? 4 : 3);  // the node's input count
  const auto y = run_node(deform_node(p, inputs.size()), 19, inputs, threads);
  const Shape want{x_shape[0], w_shape[0], in.offset.shape()[2], in.offset.shape()[3]};
  ASSERT_EQ(y[0].shape(), want);
  expect_close(y[0], reference_deform_conv(in.x, in.w, in.offset, b, mk, p), kRtol, kAtol);
}

TEST(DeformConv, Plain3x3OddSizes) { check({1, 3, 7, 9}, {4, 3, 3, 3}, {}, false, false); }

TEST(DeformConv, StridesDilationsAsymmetricPadsBiasAndMask) {
  check({2, 3, 9, 8}, {5, 3, 3, 2}, {{2, 1}, {2, 1}, {1, 2, 0, 1}}, true, true, 11);
  check({1, 2, 6, 7}, {3, 2, 2, 3}, {{1, 3}, {1, 2}, {2, 0, 1, 3}}, true, false, 12);
}

TEST(DeformConv, GroupsAndOffsetGroups) {
  // 6 channels: 2 groups of 3 for W, 3 offset groups of 2 (they cut across the groups).
  check({1, 6, 7, 5}, {4, 3, 3, 2}, {{1, 1}, {1, 1}, {1, 0, 1, 1}, 2, 3}, true, true, 21);
  // Depthwise, an offset group per channel.
  check({2, 4, 5, 6}, {4, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1, 1, 1}, 4, 4}, false, true, 22);
}

TEST(DeformConv, WideRowsAndTwoThreads) {
  // Rows wider than the kernel's 64-sample chunks, work split between threads.
  check({2, 8, 5, 150}, {6, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1, 1, 1}, 1, 2}, true, true, 31, 2);
}

TEST(DeformConv, ZeroOffsetsAndNoMaskEqualConv) {
  const DeformParams p{{2, 1}, {1, 2}, {1, 1, 0, 2}};
  Inputs in = random_inputs({1, 4, 8, 7}, {3, 4, 3, 3}, p, 41);
  std::fill(in.offset.data_as<float>(), in.offset.data_as<float>() + in.offset.numel(), 0.f);
  const auto y = run_node(deform_node(p, 4), 19, {&in.x, &in.w, &in.offset, &in.b});
  Node conv = make_node("Conv", 3);
  conv.attributes.set_ints("strides", p.strides);
  conv.attributes.set_ints("dilations", p.dilations);
  conv.attributes.set_ints("pads", p.pads);
  const auto want = run_node(conv, 19, {&in.x, &in.w, &in.b});
  expect_close(y[0], want[0], kRtol, kAtol);
}

TEST(DeformConv, NoInputChannelsOrAnEmptyPlaneGiveTheBias) {
  check({1, 0, 4, 5}, {3, 0, 2, 2}, {}, true, false, 45);
  check({2, 2, 0, 5}, {3, 2, 1, 1}, {{1, 1}, {1, 1}, {1, 0, 1, 0}}, true, true, 46);
  check({0, 2, 4, 5}, {3, 2, 2, 2}, {}, true, true, 47);
}

// One kernel, several threads running it at once, each with its own inputs and
// workspace (the column matrix lives there, so runs must not share it).
TEST(DeformConv, ConcurrentRunsOfOneKernel) {
  const DeformParams p{{1, 2}, {1, 1}, {1, 1, 1, 0}, 1, 2};
  const Node node = deform_node(p, 5);
  std::vector<Inputs> ins;
  for (uint32_t t = 0; t < 4; ++t) ins.push_back(random_inputs({1, 4, 9, 11}, {6, 4, 3, 3}, p, 80 + 10 * t));
  std::vector<TensorType> types;
  for (const Tensor* v : {&ins[0].x, &ins[0].w, &ins[0].offset, &ins[0].b, &ins[0].mask})
    types.push_back({v->dtype(), v->shape()});
  const std::vector<const Tensor*> unknown(5, nullptr);
  KernelInit init{node, 19, Device{}, types, unknown, infer_node(node, 19, types, unknown)};
  std::string why;
  const auto kernel = find_kernels("", "DeformConv", 19, DeviceKind::Cpu).at(0)->factory(init, &why);
  ASSERT_TRUE(kernel) << why;
  std::vector<Tensor> ys;
  std::vector<std::vector<char>> workspaces(4, std::vector<char>(init.workspace_bytes + 64));
  for (int t = 0; t < 4; ++t) ys.emplace_back(DType::Float32, init.outputs[0].shape);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const Tensor* in[] = {&ins[t].x, &ins[t].w, &ins[t].offset, &ins[t].b, &ins[t].mask};
      Tensor* out[] = {&ys[t]};
      void* ws = workspaces[t].data() + (64 - reinterpret_cast<uintptr_t>(workspaces[t].data()) % 64);
      for (int rep = 0; rep < 20; ++rep) kernel->run(RunArgs{in, out, ws, 1, nullptr});
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    expect_close(ys[t], reference_deform_conv(ins[t].x, ins[t].w, ins[t].offset, &ins[t].b, &ins[t].mask, p), kRtol,
                 kAtol);
}

TEST(DeformConv, RefusesFloat64) {
  const std::vector<TensorType> types{{DType::Float64, {1, 1, 3, 3}},
                                      {DType::Float64, {1, 1, 1, 1}},
                                      {DType::Float64, {1, 2, 3, 3}}};
  EXPECT_NE(why_refused(deform_node({}, 3), 19, types), "");
}

// Bad attributes and shapes raise one ember::Error naming the node and the problem.
TEST(DeformConv, BadShapesAndAttributesRaise) {
  const Tensor x = random_floats({1, 4, 5, 5}, 61), w = random_floats({2, 4, 3, 3}, 62);
  const Tensor offset = random_floats({1, 18, 3, 3}, 63), mask = random_floats({1, 9, 3, 3}, 64);
  auto expect_raise = [](const Node& node, const std::vector<const Tensor*>& inputs, const std::string& needle) {
    try {
      run_node(node, 19, inputs);
      ADD_FAILURE() << "expected an ember::Error containing '" << needle << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(node.label()), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    }
  };
  const Tensor short_offset = random_floats({1, 16, 3, 3}, 65);
  expect_raise(deform_node({}, 3), {&x, &w, &short_offset}, "offset must have shape [1, 18, 3, 3]");
  DeformParams two_groups;
  two_groups.offset_group = 2;
  expect_raise(deform_node(two_groups, 3), {&x, &w, &offset}, "offset must have shape [1, 36, 3, 3]");
  DeformParams three_groups;
  three_groups.group = 3;
  expect_raise(deform_node(three_groups, 3), {&x, &w, &offset}, "group 3 do not fit");
  DeformParams bad_offset_group;
  bad_offset_group.offset_group = 3;
  expect_raise(deform_node(bad_offset_group, 3), {&x, &w, &offset}, "offset_group 3 must be positive and divide");
  DeformParams negative_pad;
  negative_pad.pads = {0, -1, 0, 0};
  expect_raise(deform_node(negative_pad, 3), {&x, &w, &offset}, "pads has an invalid value -1");
  DeformParams zero_stride;
  zero_stride.strides = {0, 1};
  expect_raise(deform_node(zero_stride, 3), {&x, &w, &offset}, "strides has an invalid value 0");
  const Tensor wrong_mask = random_floats({1, 9, 3, 4}, 66), b = random_floats({2}, 67);
  expect_raise(deform_node({}, 5), {&x, &w, &offset, &b, &wrong_mask}, "mask must have shape [1, 9, 3, 3]");
  const Tensor wrong_bias = random_floats({3}, 68);
  expect_raise(deform_node({}, 4), {&x, &w, &offset, &wrong_bias}, "B must have shape [2]");
  const Tensor x1d = random_floats({1, 4, 5}, 69), w1d = random_floats({2, 4, 3}, 70);
  expect_raise(deform_node({}, 3), {&x1d, &w1d, &offset}, "only 2-D DeformConv is supported");
  std::mt19937 rng(71);
  const Tensor offset_int = random_tensor(DType::Int32, {1, 18, 3, 3}, 1, 2, rng);
  expect_raise(deform_node({}, 3), {&x, &w, &offset_int}, "all inputs must have X's type float32");
}

}  // namespace
}  // namespace ember::test
