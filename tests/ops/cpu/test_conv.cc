// Conv, FusedConv, NhwcConv (with its bfloat16 values) and BlockedConv against a
// direct-loop convolution.
#include "test_conv_util.h"

#include <ember/core/float16.h>

#include <thread>

namespace ember::test {
namespace {

// Tolerance: float32 sums of at most a few hundred terms in another order.
constexpr float kRtol = 1e-4f, kAtol = 1e-5f;

void check_conv(const Shape& x_shape, const Shape& w_shape, const ConvParams& p, const Shape& y_shape,
                const std::string& auto_pad = "NOTSET", uint32_t seed = 1) {
  const Tensor x = random_floats(x_shape, seed), w = random_floats(w_shape, seed + 1);
  const Tensor b = random_floats({w_shape[0]}, seed + 2);
  const auto y = run_node(conv_node(p, true, auto_pad), 22, {&x, &w, &b});
  ASSERT_EQ(y[0].shape(), y_shape);
  expect_close(y[0], reference_conv(x, w, &b, p, y_shape), kRtol, kAtol);
}

TEST(Conv, Plain2dOddSizes3x3) {
  check_conv({1, 3, 7, 9}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, {1, 4, 7, 9});
}

TEST(Conv, Stride2AsymmetricPads5x5) {
  check_conv({2, 3, 7, 9}, {5, 3, 5, 5}, {{2, 2}, {1, 1}, {2, 1}, {0, 2}}, {2, 5, 3, 4});
}

TEST(Conv, Dilation2And1x1) {
  check_conv({1, 3, 9, 8}, {4, 3, 3, 3}, {{1, 1}, {2, 2}, {0, 1}, {1, 0}}, {1, 4, 6, 5});
  check_conv({1, 6, 5, 7}, {3, 6, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {1, 3, 5, 7});
}

TEST(Conv, Groups2AndDepthwise) {
  check_conv({1, 4, 7, 9}, {6, 2, 3, 3}, {{1, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, {1, 6, 7, 5});
  check_conv({1, 5, 7, 9}, {5, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 5}, {1, 5, 4, 5});
}

TEST(Conv, OneAndThreeSpatialDims) {
  check_conv({2, 3, 11}, {4, 3, 3}, {{2}, {2}, {1}, {2}}, {2, 4, 5});
  check_conv({1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {{1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}}, {1, 3, 4, 3, 5});
}

TEST(Conv, AutoPadSameUpperLowerAndValid) {
  // in 7, kernel 4, stride 2: out 4, total pad (4-1)*2+4-7 = 3 -> upper 1/2, lower 2/1.
  check_conv({1, 2, 7, 7}, {3, 2, 4, 4}, {{2, 2}, {1, 1}, {1, 1}, {2, 2}}, {1, 3, 4, 4}, "SAME_UPPER");
  check_conv({1, 2, 7, 7}, {3, 2, 4, 4}, {{2, 2}, {1, 1}, {2, 2}, {1, 1}}, {1, 3, 4, 4}, "SAME_LOWER");
  check_conv({1, 2, 7, 8}, {3, 2, 3, 2}, {{2, 3}, {1, 1}, {0, 0}, {0, 0}}, {1, 3, 3, 3}, "VALID");
}

TEST(Conv, NoBiasAndKernelShapeAttribute) {
  const Tensor x = random_floats({1, 3, 6, 5}, 7), w = random_floats({2, 3, 3, 3}, 8);
  Node node = make_node("Conv", 2);
  node.attributes.set_ints("kernel_shape", {3, 3});
  const auto y = run_node(node, 11, {&x, &w});
  const ConvParams p{{1, 1}, {1, 1}, {0, 0}, {0, 0}};
  expect_close(y[0], reference_conv(x, w, nullptr, p, {1, 2, 4, 3}), kRtol, kAtol);
}

TEST(Conv, TwoIntraOpThreads) {
  const ConvParams p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  const Tensor x = random_floats({2, 8, 15, 17}, 6), w = random_floats({16, 8, 3, 3}, 7), b = random_floats({16}, 8);
  const auto y = run_node(conv_node(p, true), 22, {&x, &w, &b}, /*threads=*/2);
  expect_close(y[0], reference_conv(x, w, &b, p, {2, 16, 15, 17}), kRtol, kAtol);
}

TEST(Conv, WeightsKnownOnlyAtRunTime) {
  const ConvParams p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  const Tensor x = random_floats({1, 3, 7, 9}, 3), w = random_floats({4, 3, 3, 3}, 4), b = random_floats({4}, 5);
  const auto y = run_node_runtime_inputs(conv_node(p, true), 22, {&x, &w, &b});
  expect_close(y[0], reference_conv(x, w, &b, p, {1, 4, 7, 9}), kRtol, kAtol);
}

TEST(Conv, RefusesIntegerInputs) {
  EXPECT_NE(why_refused(make_node("Conv", 2), 22, {{DType::Int32, {1, 1, 3, 3}}, {DType::Int32, {1, 1, 1, 1}}}),
            "");
}

TEST(Conv, MismatchedChannelsRaise) {
  const Tensor x = random_floats({1, 3, 5, 5}, 1), w = random_floats({2, 2, 3, 3}, 2);
  EXPECT_THROW(run_node(make_node("Conv", 2), 22, {&x, &w}), Error);
}

// FusedConv: conv + bias, then + Z, then the activation.
TEST(FusedConv, BiasResidualAndEveryActivation) {
  const ConvParams p{{2, 1}, {1, 1}, {1, 0}, {1, 2}, 2};
  const Tensor x = random_floats({1, 4, 7, 9}, 11), w = random_floats({6, 2, 3, 3}, 12);
  const Tensor b = random_floats({6}, 13), z = random_floats({1, 6, 4, 9}, 14);
  const std::vector<float> conv = reference_conv(x, w, &b, p, {1, 6, 4, 9});
  bool residual = false;  // alternates, so both paths meet several activations
  for (const ActivationCase& a : all_activations()) {
    residual = !residual;
    Node node = conv_node(p, true);
    node.op_type = "FusedConv";
    node.domain = "com.ember";
    set_activation(node, a);
    std::vector<const Tensor*> in{&x, &w, &b};
    if (residual) {
      node.inputs.push_back("z");
      in.push_back(&z);
    }
    const auto y = run_node(node, 1, in);
    std::vector<float> want = conv;
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = activate(a.kind, a.params, want[i] + (residual ? z.data_as<float>()[i] : 0.f));
    SCOPED_TRACE(a.kind + (residual ? " with residual" : ""));
    expect_close(y[0], want, kRtol, kAtol);
  }
}

// Pointwise convs run on plain tensors (the residual is copied into Y first).
TEST(FusedConv, PointwiseWithResidual) {
  const ConvParams p{{1, 1}, {1, 1}, {0, 0}, {0, 0}};
  const Tensor x = random_floats({2, 6, 5, 3}, 15), w = random_floats({4, 6, 1, 1}, 16);
  const Tensor b = random_floats({4}, 17), z = random_floats({2, 4, 5, 3}, 18);
  Node node = make_node("FusedConv", 4, 1, {}, "com.ember");
  set_activation(node, {"Relu", {}});
  const auto y = run_node(node, 1, {&x, &w, &b, &z});
  std::vector<float> want = reference_conv(x, w, &b, p, {2, 4, 5, 3});
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.f, want[i] + z.data_as<float>()[i]);
  expect_close(y[0], want, kRtol, kAtol);
}

// Values laid out as `shape`, in the blocked layout.
std::vector<float> blocked_values(const std::vector<float>& plain, const Shape& shape, int64_t b) {
  Tensor t(DType::Float32, shape);
  std::copy(plain.begin(), plain.end(), t.data_as<float>());
  return values_of(blocked(t, b));
}

// BlockedConv: X blocked (or plain where its channels do not fill blocks), Y and the
// residual blocked by the node's `block`; bias, residual and activation as FusedConv.
void check_blocked_conv(const Shape& x_shape, const Shape& w_shape, const ConvParams& p, const Shape& y_shape,
                        int64_t block, bool plain_x, bool residual) {
  const Tensor x = random_floats(x_shape, 91), w = random_floats(w_shape, 92);
  const Tensor b = random_floats({w_shape[0]}, 93), z = random_floats(y_shape, 94);
  Node node = conv_node(p, true);
  node.op_type = "BlockedConv";
  node.domain = "com.ember";
  node.attributes.set_int("block", block);
  set_activation(node, {"LeakyRelu", {0.1f}});
  const Tensor x_in = plain_x ? x : blocked(x, block), z_in = blocked(z, block);
  std::vector<const Tensor*> in{&x_in, &w, &b};
  if (residual) {
    node.inputs.push_back("z");
    in.push_back(&z_in);
  }
  if (block == 16 && !__builtin_cpu_supports("avx512f")) {
    // oneDNN has only its reference loops for nChw16c without AVX-512: the kernel
    // declines (the planner then runs the node plain; plan_cpu_layouts picks 8 here).
    try {
      run_node(node, 1, in);
      ADD_FAILURE() << "a BlockedConv in blocks of 16 ran on a CPU without AVX-512";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("reference loops"), std::string::npos) << e.what();
    }
    return;
  }
  const auto y = run_node(node, 1, in);
  std::vector<float> want = reference_conv(x, w, &b, p, y_shape);
  for (size_t i = 0; i < want.size(); ++i) {
    const float s = want[i] + (residual ? z.data_as<float>()[i] : 0.f);
    want[i] = s > 0 ? s : 0.1f * s;
  }
  ASSERT_EQ(y[0].shape(), blocked(Tensor(DType::Float32, y_shape), block).shape());
  expect_close(y[0], blocked_values(want, y_shape, block), kRtol, kAtol);
}

TEST(BlockedConv, DenseDepthwiseAndPointwiseWithResidualInBlocksOf8And16) {
  check_blocked_conv({2, 16, 9, 7}, {24, 16, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, {2, 24, 5, 4}, 8, false, false);
  check_blocked_conv({1, 16, 6, 5}, {16, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 16}, {1, 16, 6, 5}, 8, false,
                     true);
  check_blocked_conv({2, 32, 5, 3}, {16, 32, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {2, 16, 5, 3}, 16, false, true);
  check_blocked_conv({1, 16, 7, 7}, {32, 16, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {1, 32, 7, 7}, 16, false,
                     false);
}

// A first convolution's 3 channels, and 10 (squeeze-excite's reduced ones), read plain.
TEST(BlockedConv, PlainInputWhoseChannelsDoNotFillBlocks) {
  check_blocked_conv({2, 3, 11, 8}, {8, 3, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, {2, 8, 6, 4}, 8, true, false);
  check_blocked_conv({1, 10, 1, 1}, {40, 10, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {1, 40, 1, 1}, 8, true, false);
  check_blocked_conv({3, 10, 1, 1}, {40, 10, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {3, 40, 1, 1}, 8, true, true);
}

// Squeeze-excite's expansion on a pooled 1x1 image runs as a matrix-vector product: the
// blocked output of a 1x1 image holds the channels in order.
TEST(BlockedConv, SingleImageSqueezeExciteIsMatrixVector) {
  check_blocked_conv({1, 24, 1, 1}, {48, 24, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {1, 48, 1, 1}, 8, false,
                     false);
}

TEST(BlockedConv, FiltersThatDoNotFillBlocksRaise) {
  const Tensor x = random_floats({1, 8, 4, 4, 8}, 1), w = random_floats({12, 64, 1, 1}, 2);
  Node node = make_node("BlockedConv", 2, 1, {}, "com.ember");
  node.attributes.set_int("block", 8);
  EXPECT_THROW(run_node(node, 1, {&x, &w}), Error);
}

// --precision bf16 (DenseMath::BFloat16): source and weights rounded to bfloat16,
// products accumulated in float32, bias and residual added in float32. Against the
// loops on the rounded operands the tolerance is float32's (kRtol); against the
// unrounded operands the result must differ by more than float32 rounding explains
// (> 1e-3 of |y| + 1e-2 somewhere), or the bf16 math never reached oneDNN.
void check_conv_bf16(const Shape& x_shape, const Shape& w_shape, const ConvParams& p, const Shape& y_shape,
                     bool residual) {
  const Tensor x = random_floats(x_shape, 71), w = random_floats(w_shape, 72);
  const Tensor b = random_floats({w_shape[0]}, 73), z = random_floats(y_shape, 74);
  Node node = conv_node(p, true);
  node.op_type = "FusedConv";
  node.domain = "com.ember";
  set_activation(node, {"Relu", {}});
  std::vector<const Tensor*> in{&x, &w, &b};
  if (residual) {
    node.inputs.push_back("z");
    in.push_back(&z);
  }
  const auto y = run_node_bf16(node, 1, in);
  auto finish = [&](std::vector<float> v) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(0.f, v[i] + (residual ? z.data_as<float>()[i] : 0.f));
    return v;
  };
  expect_close(y[0], finish(reference_conv(rounded_to_bf16(x), rounded_to_bf16(w), &b, p, y_shape)), kRtol, kAtol);
  EXPECT_GT(max_relative_difference(y[0], finish(reference_conv(x, w, &b, p, y_shape)), 1e-2), 1e-3);
}

// Each conv 2 MFLOP or more: smaller ones stay float32 (the test below).
TEST(FusedConv, Bf16MathDenseGroupedAndDepthwise) {
  SKIP_WITHOUT_BF16();
  check_conv_bf16({2, 16, 17, 15}, {24, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, {2, 24, 17, 15}, true);
  check_conv_bf16({2, 64, 16, 16}, {64, 64, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {2, 64, 16, 16}, false);
  check_conv_bf16({2, 64, 23, 25}, {64, 32, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, {2, 64, 12, 13}, true);
  check_conv_bf16({2, 32, 48, 40}, {32, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 32}, {2, 32, 48, 40}, false);
}

// A conv of under 2 MFLOP on float32 values gains nothing from bf16 products that
// converting X does not cost (Silero VAD's STFT conv): it stays float32, to float32's
// tolerance, in a bf16 session.
TEST(FusedConv, Bf16MathLeavesASmallConvFloat32) {
  SKIP_WITHOUT_BF16();
  const ConvParams p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  const Tensor x = random_floats({1, 8, 7, 9}, 78), w = random_floats({4, 8, 3, 3}, 79), b = random_floats({4}, 80);
  const auto y = run_kernel(conv_node(p, true), 22, {&x, &w, &b}, {.math = DenseMath::BFloat16});
  expect_close(y[0], reference_conv(x, w, &b, p, {1, 4, 7, 9}), kRtol, kAtol);
}

// An NCHW float32 tensor's values stored channels-last as float32 or bfloat16.
Tensor channels_last(const Tensor& nchw, DType dtype) {
  const Shape& s = nchw.shape();
  Tensor t(dtype, {s[0], s[2], s[3], s[1]});
  const float* from = nchw.data_as<float>();
  for (int64_t n = 0, at = 0; n < s[0]; ++n)
    for (int64_t h = 0; h < s[2]; ++h)
      for (int64_t w = 0; w < s[3]; ++w)
        for (int64_t c = 0; c < s[1]; ++c, ++at) {
          const float v = from[((n * s[1] + c) * s[2] + h) * s[3] + w];
          if (dtype == DType::BFloat16) t.data_as<BFloat16>()[at] = BFloat16(v);
          else t.data_as<float>()[at] = v;
        }
  return t;
}

// NhwcConv between bf16 convolutions (keep_bf16_between_convs): X stored bfloat16
// and/or the output written bfloat16 ("output_bf16"); weights, bias and residual
// float32. Reference: the loops on bf16-rounded X and W, plus bias and residual (the
// residual rounded to bfloat16 where the output is: it is reordered into the bf16 dst
// before the sum), LeakyReLU, then rounded to bfloat16 where the output is. Tolerance:
// float32's (kRtol, kAtol), and for a bfloat16 output 1e-2 of |y| (one bfloat16 step
// is at most 2^-7 = 7.8e-3 of it, where float32 sums in another order straddle a
// rounding boundary). Against unrounded operands the result must differ by more than
// 5e-2 of |y| + 1e-2 somewhere, or the bf16 math never reached oneDNN.
void check_nhwc_conv_bf16_values(const Shape& x_shape, const Shape& w_shape, const ConvParams& p,
                                 const Shape& y_shape, bool x_bf16, bool out_bf16, bool residual) {
  const Tensor x = random_floats(x_shape, 81), w = random_floats(w_shape, 82);
  const Tensor b = random_floats({w_shape[0]}, 83), z = random_floats(y_shape, 84);
  Node node = conv_node(p, true);
  node.op_type = "NhwcConv";
  node.domain = "com.ember";
  if (out_bf16) node.attributes.set_int("output_bf16", 1);
  set_activation(node, {"LeakyRelu", {0.1f}});
  const Tensor x_in = channels_last(x, x_bf16 ? DType::BFloat16 : DType::Float32);
  const Tensor z_in = channels_last(z, DType::Float32);
  std::vector<const Tensor*> in{&x_in, &w, &b};
  if (residual) {
    node.inputs.push_back("z");
    in.push_back(&z_in);
  }
  const auto y = run_node_bf16(node, 1, in);
  ASSERT_EQ(y[0].dtype(), out_bf16 ? DType::BFloat16 : DType::Float32);
  const Tensor z_added = out_bf16 ? rounded_to_bf16(z) : z;
  auto finish = [&](const std::vector<float>& conv) {
    Tensor t(DType::Float32, y_shape);
    for (size_t i = 0; i < conv.size(); ++i) {
      const float s = conv[i] + (residual ? z_added.data_as<float>()[i] : 0.f);
      t.data_as<float>()[i] = s > 0 ? s : 0.1f * s;
    }
    return channels_last(out_bf16 ? rounded_to_bf16(t) : t, DType::Float32);
  };
  expect_close(y[0], finish(reference_conv(rounded_to_bf16(x), rounded_to_bf16(w), &b, p, y_shape)),
               out_bf16 ? 1e-2 : kRtol, kAtol);
  const Tensor unrounded = finish(reference_conv(x, w, &b, p, y_shape));
  double worst = 0;
  for (int64_t i = 0; i < unrounded.numel(); ++i) {
    const double want = unrounded.data_as<float>()[i];
    worst = std::max(worst, std::abs(element(y[0], i) - want) / (std::abs(want) + 1e-2));
  }
  EXPECT_GT(worst, 5e-2);
}

TEST(NhwcConv, Bf16InputFloat32OutputWithResidual) {
  SKIP_WITHOUT_BF16();
  check_nhwc_conv_bf16_values({2, 8, 9, 7}, {12, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, {2, 12, 9, 7}, true,
                              false, true);
}

TEST(NhwcConv, Float32InputBf16OutputWithAndWithoutResidual) {
  SKIP_WITHOUT_BF16();
  check_nhwc_conv_bf16_values({1, 16, 6, 5}, {8, 16, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {1, 8, 6, 5}, false,
                              true, true);
  check_nhwc_conv_bf16_values({1, 8, 7, 9}, {8, 4, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, {1, 8, 4, 5}, false,
                              true, false);
}

TEST(NhwcConv, Bf16InputAndOutputDenseAndDepthwise) {
  SKIP_WITHOUT_BF16();
  check_nhwc_conv_bf16_values({2, 8, 9, 7}, {12, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, {2, 12, 9, 7}, true,
                              true, true);
  check_nhwc_conv_bf16_values({1, 16, 7, 9}, {16, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 16}, {1, 16, 7, 9},
                              true, true, false);
}

// Outside bf16 math (a float32 session) bfloat16 values are declined, so the planner
// runs the node's decomposition (which casts) instead.
TEST(NhwcConv, Bf16ValuesDeclinedWithoutBf16Math) {
  Node node = conv_node({{1, 1}, {1, 1}, {0, 0}, {0, 0}}, false);
  node.op_type = "NhwcConv";
  node.domain = "com.ember";
  EXPECT_NE(why_refused(node, 1, {{DType::BFloat16, {1, 5, 6, 8}}, {DType::Float32, {4, 8, 1, 1}}}), "");
  node.attributes.set_int("output_bf16", 1);
  EXPECT_NE(why_refused(node, 1, {{DType::Float32, {1, 5, 6, 8}}, {DType::Float32, {4, 8, 1, 1}}}), "");
}

// Weights the graph computes are not converted at run time: the conv stays float32.
TEST(Conv, Bf16MathWithRuntimeWeightsStaysFloat32) {
  SKIP_WITHOUT_BF16();
  const ConvParams p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  const Tensor x = random_floats({1, 8, 7, 9}, 75), w = random_floats({4, 8, 3, 3}, 76), b = random_floats({4}, 77);
  const auto y = run_kernel(conv_node(p, true), 22, {&x, &w, &b}, {.values_known = false, .math = DenseMath::BFloat16});
  expect_close(y[0], reference_conv(x, w, &b, p, {1, 4, 7, 9}), kRtol, kAtol);
}

// One kernel, several threads running it at once on their own inputs and workspaces.
TEST(Conv, ConcurrentRunsOfOneKernel) {
  const ConvParams p{{2, 2}, {1, 1}, {1, 1}, {1, 1}};
  const Node node = conv_node(p, true);
  const Tensor w = random_floats({8, 3, 3, 3}, 19), b = random_floats({8}, 20);
  const TensorType xt{DType::Float32, {1, 3, 9, 11}};
  std::vector<TensorType> types{xt, {DType::Float32, {8, 3, 3, 3}}, {DType::Float32, {8}}};
  std::vector<const Tensor*> values{nullptr, &w, &b};
  KernelInit init{node, 22, Device{}, types, values, infer_node(node, 22, types, values)};
  std::string why;
  const auto kernel = find_kernels("", "Conv", 22, DeviceKind::Cpu).at(0)->factory(init, &why);
  ASSERT_TRUE(kernel) << why;
  std::vector<std::thread> threads;
  std::vector<Tensor> xs, ys;
  std::vector<std::vector<char>> workspaces(4, std::vector<char>(init.workspace_bytes + 64));
  for (uint32_t t = 0; t < 4; ++t) {
    xs.push_back(random_floats(xt.shape, 100 + t));
    ys.emplace_back(DType::Float32, init.outputs[0].shape);
  }
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const Tensor* in[] = {&xs[t], &w, &b};
      Tensor* out[] = {&ys[t]};
      void* ws = workspaces[t].data() + (64 - reinterpret_cast<uintptr_t>(workspaces[t].data()) % 64);
      for (int rep = 0; rep < 20; ++rep) kernel->run(RunArgs{in, out, ws, 1, nullptr});
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) expect_close(ys[t], reference_conv(xs[t], w, &b, p, init.outputs[0].shape), kRtol, kAtol);
}

TEST(FusedConv, UnknownActivationRaises) {
  Node node = make_node("FusedConv", 2, 1, {}, "com.ember");
  node.attributes.set_string("activation", "Swish9");
  const Tensor x = random_floats({1, 1, 3, 3}, 1), w = random_floats({1, 1, 1, 1}, 2);
  EXPECT_THROW(run_node(node, 1, {&x, &w}), Error);
}

}  // namespace
}  // namespace ember::test
