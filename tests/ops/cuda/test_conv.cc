// Conv, FusedConv, NhwcConv and ConvTranspose on CUDA (cuDNN) against the CPU kernels.
#include "dense_test_util.h"
#include "ops/cuda/conv_algorithm.h"

#include <cstdio>
#include <cstdlib>

namespace ember::test {
namespace {

// float32: sums of C/group * kernel taps (at most ~600 here) in another order.
constexpr double kRtol32 = 1e-4, kAtol32 = 1e-4;
// float16: half inputs, float accumulation on tensor cores, output rounded to half.
constexpr double kRtol16 = 1e-2, kAtol16 = 1e-2;
// bfloat16: the same with the output rounded to 8 mantissa bits (2^-9 relative).
constexpr double kRtolBf16 = 2e-2, kAtolBf16 = 2e-2;

const DType kFloatTypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
double rtol(DType t) { return t == DType::Float16 ? kRtol16 : t == DType::BFloat16 ? kRtolBf16 : kRtol32; }
double atol(DType t) { return t == DType::Float16 ? kAtol16 : t == DType::BFloat16 ? kAtolBf16 : kAtol32; }

struct ConvCase {
  Shape x, w;
  Shape strides, dilations, pads;  // empty: the attribute is left out
  int64_t group = 1;
  std::string auto_pad;            // empty: NOTSET
};

ConvCase conv_case(Shape x, Shape w, Shape strides = {}, Shape dilations = {}, Shape pads = {}, int64_t group = 1,
                   std::string auto_pad = "") {
  return ConvCase{std::move(x), std::move(w), std::move(strides), std::move(dilations), std::move(pads), group,
                  std::move(auto_pad)};
}

Attributes conv_attributes(const ConvCase& c) {
  Attributes at;
  if (!c.strides.empty()) at.set_ints("strides", c.strides);
  if (!c.dilations.empty()) at.set_ints("dilations", c.dilations);
  if (!c.pads.empty()) at.set_ints("pads", c.pads);
  if (c.group != 1) at.set_int("group", c.group);
  if (!c.auto_pad.empty()) at.set_string("auto_pad", c.auto_pad);
  return at;
}

std::string describe(const ConvCase& c) {
  return "X " + shape_to_string(c.x) + " W " + shape_to_string(c.w) + " strides " + shape_to_string(c.strides) +
         " dilations " + shape_to_string(c.dilations) + " pads " + shape_to_string(c.pads) + " group " +
         std::to_string(c.group) + " " + c.auto_pad;
}

void check_conv(const ConvCase& c, DType t, bool bias) {
  const Tensor x = seeded_tensor(t, c.x, 11), w = seeded_tensor(t, c.w, 12), b = seeded_tensor(t, {c.w[0]}, 13);
  SCOPED_TRACE(describe(c) + (bias ? " bias " : " ") + dtype_name(t));
  const Node node = make_node("Conv", bias ? 3 : 2, 1, conv_attributes(c));
  std::vector<const Tensor*> in{&x, &w};
  if (bias) in.push_back(&b);
  expect_cuda_matches_cpu(node, 22, in, rtol(t), atol(t), bias ? std::vector<int>{1, 2} : std::vector<int>{1});
}

const ConvCase kConvCases[] = {
    conv_case({2, 8, 9, 11}, {16, 8, 3, 3}, {}, {}, {1, 1, 1, 1}),                 // 3x3 pad 1
    conv_case({2, 8, 9, 11}, {16, 8, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}),             // stride 2
    conv_case({1, 16, 7, 9}, {8, 16, 1, 1}),                                       // pointwise
    conv_case({1, 8, 9, 9}, {8, 1, 3, 3}, {}, {}, {1, 1, 1, 1}, 8),                // depthwise
    conv_case({1, 8, 7, 9}, {6, 4, 3, 3}, {1, 2}, {}, {0, 1, 2, 1}, 2),            // groups, asymmetric pads
    conv_case({1, 3, 11, 13}, {4, 3, 3, 3}, {}, {2, 2}, {2, 2, 2, 2}),             // dilation 2
    conv_case({1, 3, 11, 13}, {4, 3, 3, 2}, {}, {2, 1}, {1, 0, 2, 3}),             // dilation, asymmetric
    conv_case({1, 4, 7, 9}, {5, 4, 3, 3}, {2, 2}, {}, {}, 1, "SAME_UPPER"),        // asymmetric from auto_pad
    conv_case({1, 4, 7, 9}, {5, 4, 4, 4}, {1, 1}, {}, {}, 1, "SAME_LOWER"),
    conv_case({1, 4, 7, 9}, {5, 4, 3, 2}, {2, 1}, {}, {}, 1, "VALID"),
    conv_case({1, 64, 14, 14}, {64, 64, 3, 3}, {}, {}, {1, 1, 1, 1}),              // K = 576
    conv_case({2, 4, 17}, {6, 4, 3}, {2}, {}, {1, 1}),                             // 1-D
    conv_case({1, 4, 17}, {6, 2, 5}, {1}, {2}, {3, 1}, 2),                         // 1-D dilated, grouped, asymmetric
    conv_case({1, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}),       // 3-D
    conv_case({1, 4, 5, 6, 7}, {4, 2, 2, 3, 3}, {2, 1, 2}, {}, {0, 1, 1, 1, 1, 0}, 2),
};

TEST(CudaConv, EveryGeometry) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const ConvCase& c : kConvCases)
      for (bool bias : {false, true}) check_conv(c, t, bias);
}

TEST(CudaConv, WeightsKnownOnlyAtRunTime) {
  EMBER_REQUIRE_GPU();
  const Tensor x = seeded_tensor(DType::Float32, {1, 3, 8, 8}, 14), w = seeded_tensor(DType::Float32, {4, 3, 3, 3}, 15);
  Attributes at;
  at.set_ints("pads", {1, 1, 1, 1});
  expect_cuda_matches_cpu(make_node("Conv", 2, 1, at), 11, {&x, &w}, kRtol32, kAtol32);
}

// FusedConv: act(conv(x) + bias + Z). Relu with a bias is cuDNN's fused call; the
// rest is the convolution plus our epilogue pass. Channels-last, the same as
// com.ember NhwcConv (the layout planning's convolution: X, Z and Y as [N, H, W, C], W
// as ONNX has it; cuDNN's NHWC kernels, W turned to KRSC per run).
void check_fused(const ConvCase& c, DType t, const FusedAct& act, bool bias, bool residual, bool channels_last = false) {
  const Shape x_shape = channels_last ? Shape{c.x[0], c.x[2], c.x[3], c.x[1]} : c.x;
  const Tensor x = seeded_tensor(t, x_shape, 16), w = seeded_tensor(t, c.w, 17), b = seeded_tensor(t, {c.w[0]}, 18);
  const char* op = channels_last ? "NhwcConv" : "FusedConv";
  Node node = make_node(op, 2, 1, conv_attributes(c), "com.ember");
  set_fused_activation(node, act);
  std::vector<const Tensor*> in{&x, &w};
  std::vector<int> known{1};
  if (bias || residual) {
    node.inputs.push_back(bias ? "x2" : "");
    in.push_back(bias ? &b : nullptr);
    if (bias) known.push_back(2);
  }
  Tensor z;
  if (residual) {
    const std::vector<Tensor> y = run_on_cpu(make_node(op, 2, 1, conv_attributes(c), "com.ember"), 1, {&x, &w});
    z = seeded_tensor(t, y[0].shape(), 19);
    node.inputs.push_back("x3");
    in.push_back(&z);
  }
  SCOPED_TRACE(std::string(op) + " " + describe(c) + " " + act.kind + (bias ? " bias" : "") +
               (residual ? " residual " : " ") + dtype_name(t));
  expect_cuda_matches_cpu(node, 1, in, rtol(t), atol(t), known);
}

TEST(CudaFusedConv, BiasResidualAndEveryActivation) {
  EMBER_REQUIRE_GPU();
  const ConvCase c = conv_case({1, 4, 7, 9}, {6, 2, 3, 3}, {2, 1}, {}, {1, 0, 1, 2}, 2);
  for (DType t : kFloatTypes)
    for (const FusedAct& act : all_fused_activations())
      for (bool bias : {false, true})
        for (bool residual : {false, true}) check_fused(c, t, act, bias, residual);
}

TEST(CudaFusedConv, ReluFusedByCudnnOnSeveralGeometries) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const ConvCase& c : kConvCases)
      for (bool residual : {false, true}) check_fused(c, t, {"Relu", {}}, true, residual);
}

struct DeconvCase {
  Shape x, w;
  Shape strides, dilations, pads, output_padding, output_shape;
  int64_t group = 1;
  std::string auto_pad;
};

DeconvCase deconv_case(Shape x, Shape w, Shape strides = {}, Shape dilations = {}, Shape pads = {},
                       Shape output_padding = {}, Shape output_shape = {}, int64_t group = 1,
                       std::string auto_pad = "") {
  return DeconvCase{std::move(x),          std::move(w),         std::move(strides), std::move(dilations),
                    std::move(pads),       std::move(output_padding), std::move(output_shape), group,
                    std::move(auto_pad)};
}

void check_deconv(const DeconvCase& c, DType t, bool bias) {
  const int64_t m = c.w[1] * c.group;
  const Tensor x = seeded_tensor(t, c.x, 21), w = seeded_tensor(t, c.w, 22), b = seeded_tensor(t, {m}, 23);
  Attributes at;
  if (!c.strides.empty()) at.set_ints("strides", c.strides);
  if (!c.dilations.empty()) at.set_ints("dilations", c.dilations);
  if (!c.pads.empty()) at.set_ints("pads", c.pads);
  if (!c.output_padding.empty()) at.set_ints("output_padding", c.output_padding);
  if (!c.output_shape.empty()) at.set_ints("output_shape", c.output_shape);
  if (c.group != 1) at.set_int("group", c.group);
  if (!c.auto_pad.empty()) at.set_string("auto_pad", c.auto_pad);
  std::vector<const Tensor*> in{&x, &w};
  if (bias) in.push_back(&b);
  SCOPED_TRACE("ConvTranspose X " + shape_to_string(c.x) + " W " + shape_to_string(c.w) + " strides " +
               shape_to_string(c.strides) + " pads " + shape_to_string(c.pads) + " output_padding " +
               shape_to_string(c.output_padding) + " output_shape " + shape_to_string(c.output_shape) + " group " +
               std::to_string(c.group) + " " + c.auto_pad + (bias ? " bias " : " ") + dtype_name(t));
  expect_cuda_matches_cpu(make_node("ConvTranspose", in.size(), 1, at), 22, in, rtol(t), atol(t),
                          bias ? std::vector<int>{1, 2} : std::vector<int>{1});
}

// Float16 with C not a multiple of 8 (C = 12, a stem's 3) runs on a copy of X with zero
// channels added and a packed filter to match; a strided stem with s * s * C <= 32 on
// its space-to-depth copy and regrouped filter instead (conv_plan.h).
TEST(CudaNhwcConv, ResNetAndMobileNetGeometries) {
  EMBER_REQUIRE_GPU();
  const ConvCase cases[] = {
      conv_case({2, 3, 32, 32}, {16, 3, 7, 7}, {2, 2}, {}, {3, 3, 3, 3}),   // a stem
      conv_case({2, 16, 9, 11}, {24, 16, 1, 1}),                            // pointwise
      conv_case({2, 16, 9, 11}, {24, 16, 1, 1}, {2, 2}),                    // downsample
      conv_case({2, 8, 9, 11}, {16, 8, 3, 3}, {}, {}, {1, 1, 1, 1}),        // 3x3
      conv_case({2, 8, 9, 11}, {16, 8, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}),    // 3x3 stride 2
      conv_case({1, 8, 9, 9}, {8, 1, 3, 3}, {}, {}, {1, 1, 1, 1}, 8),       // depthwise
      conv_case({1, 8, 7, 9}, {6, 4, 3, 3}, {}, {}, {1, 1, 1, 1}, 2),       // groups
      conv_case({1, 64, 14, 14}, {64, 64, 3, 3}, {}, {}, {1, 1, 1, 1}),     // K = 576
      conv_case({1, 4, 7, 9}, {5, 4, 3, 3}, {}, {}, {0, 1, 2, 1}),          // asymmetric pads: a padded copy
      conv_case({2, 3, 33, 31}, {16, 3, 7, 7}, {2, 2}, {}, {}, 1, "SAME_UPPER"),  // a stem with SAME pads
      conv_case({2, 12, 9, 11}, {8, 12, 3, 3}, {}, {}, {1, 1, 1, 1}),       // C = 12: float16 pads to 16
      conv_case({2, 3, 17, 16}, {8, 3, 3, 3}, {2, 2}, {}, {}, 1, "SAME_UPPER"),  // MobileNet's stem: zero channels
      conv_case({1, 3, 15, 14}, {6, 3, 5, 5}, {2, 2}, {}, {2, 2, 2, 2}),    // 5x5/2: space-to-depth
      conv_case({1, 2, 13, 14}, {5, 2, 5, 6}, {3, 3}, {}, {1, 2, 2, 0}),    // stride 3, asymmetric
  };
  for (DType t : kFloatTypes)
    for (const ConvCase& c : cases) {
      check_fused(c, t, {}, false, false, true);
      check_fused(c, t, {"Relu", {}}, true, false, true);  // cuDNN's fused call
      check_fused(c, t, {"Relu", {}}, true, true, true);   // ResNet's residual block end
      check_fused(c, t, {"HardSigmoid", {0.2f, 0.5f}}, true, false, true);  // the epilogue pass
    }
}

// W known only at run time: transposed to KRSC in the workspace each run, not packed.
TEST(CudaNhwcConv, WeightsKnownOnlyAtRunTime) {
  EMBER_REQUIRE_GPU();
  const ConvCase c = conv_case({2, 3, 19, 17}, {8, 3, 7, 7}, {2, 2}, {}, {3, 3, 3, 3});
  for (DType t : kFloatTypes) {
    const Tensor x = seeded_tensor(t, {2, 19, 17, 3}, 24), w = seeded_tensor(t, c.w, 25);
    SCOPED_TRACE(dtype_name(t));
    expect_cuda_matches_cpu(make_node("NhwcConv", 2, 1, conv_attributes(c), "com.ember"), 1, {&x, &w}, rtol(t),
                            atol(t));
  }
}

// ResNet's stem in NHWC: the heuristic's algorithm, or with EMBER_CUDNN_FIND=1 in
// float16 cudnnFind's fastest (float32 may fall back to the heuristic where cuDNN
// reports no FMA-only timing; the line printed says which). Either way asking again
// gives the same algorithm and sets the descriptor to its math type.
TEST(CudaConv, AlgorithmTimedOncePerGeometry) {
  EMBER_REQUIRE_GPU();
  cuda::StreamContext* context = cuda::create_stream_context(0);
  for (DType t : kFloatTypes) {
    const bool half = t != DType::Float32;  // 16-bit: tensor-op math
    Shape x{8, 3, 56, 56}, w{64, 3, 7, 7}, y{8, 64, 28, 28};
    cuda::TensorDesc xd, yd;
    cuda::FilterDesc wd;
    cuda::ConvDesc conv;
    std::string why;
    ASSERT_TRUE(cuda::set_conv_desc(conv, half, 1, {3, 3}, {2, 2}, {1, 1}, &x, &w, &y, &why)) << why;
    cuda::set_nhwc(xd, t, x);
    cuda::set_nhwc_filter(wd, t, w);
    cuda::set_nhwc(yd, t, y);
    const std::string key = std::string("test stem ") + dtype_name(t);
    cuda::ForwardAlgorithm first, again;
    ASSERT_TRUE(cuda::choose_forward_algorithm(*context, xd, wd, conv, yd, half, key, &first));
    ASSERT_TRUE(cuda::choose_forward_algorithm(*context, xd, wd, conv, yd, half, key, &again));
    const char* env = std::getenv("EMBER_CUDNN_FIND");
    const bool find = env && std::string(env) == "1";
    if (half) {
      EXPECT_EQ(first.timed, find);
    }
    EXPECT_EQ(again.algo, first.algo);
    EXPECT_EQ(again.workspace, first.workspace);
    EXPECT_TRUE(cuda::usable_math_type(half, first.math));
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    ASSERT_EQ(cudnnGetConvolutionMathType(conv.get(), &math), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(math, first.math);
    std::printf("%s stem: algorithm %d, math %d, %zu bytes of workspace, %s\n", dtype_name(t),
                static_cast<int>(first.algo), static_cast<int>(first.math), first.workspace,
                first.timed ? "timed" : "heuristic");
  }
  cuda::destroy_stream_context(context);
}

TEST(CudaConvTranspose, DirectAndCroppedGeometries) {
  EMBER_REQUIRE_GPU();
  const DeconvCase cases[] = {
      deconv_case({1, 8, 5, 7}, {8, 4, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}),                    // symmetric: direct
      deconv_case({2, 3, 4, 5}, {3, 6, 3, 3}),                                             // no pads
      deconv_case({1, 8, 5, 7}, {8, 4, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}),           // output_padding: cropped
      deconv_case({1, 4, 5, 7}, {4, 3, 4, 3}, {2, 3}, {}, {0, 1, 2, 0}),                   // asymmetric pads
      deconv_case({1, 4, 6, 6}, {4, 2, 3, 3}, {2, 2}, {2, 1}, {1, 1, 1, 1}, {}, {}, 2),    // grouped, dilated
      deconv_case({1, 4, 5, 5}, {4, 3, 3, 3}, {2, 2}, {}, {}, {}, {12, 11}),               // output_shape
      deconv_case({1, 4, 5, 5}, {4, 3, 3, 3}, {2, 2}, {}, {}, {}, {}, 1, "SAME_UPPER"),
      deconv_case({2, 4, 9}, {4, 5, 4}, {3}, {}, {1, 2}),                                  // 1-D
      deconv_case({1, 2, 3, 4, 5}, {2, 3, 3, 3, 3}, {2, 1, 2}, {}, {1, 1, 1, 1, 1, 1}),    // 3-D
  };
  for (DType t : kFloatTypes)
    for (const DeconvCase& c : cases)
      for (bool bias : {false, true}) check_deconv(c, t, bias);
}

TEST(CudaConv, RegisteredForEveryOp) {
  EXPECT_TRUE(has_cuda_kernel("", "Conv", 22));
  EXPECT_TRUE(has_cuda_kernel("com.ember", "FusedConv", 1));
  EXPECT_TRUE(has_cuda_kernel("", "ConvTranspose", 22));
}

TEST(CudaConv, DeclinesWithAReason) {
  const std::string f64 =
      cuda_decline_reason(make_node("Conv", 2), 22, {{DType::Float64, {1, 2, 5, 5}}, {DType::Float64, {3, 2, 3, 3}}});
  EXPECT_NE(f64.find("float64"), std::string::npos) << f64;
  const std::string four_d = cuda_decline_reason(
      make_node("Conv", 2), 22, {{DType::Float32, {1, 2, 3, 3, 3, 3}}, {DType::Float32, {3, 2, 1, 1, 1, 1}}});
  EXPECT_NE(four_d.find("spatial"), std::string::npos) << four_d;
  // A residual that broadcasts: the planner runs the decomposition instead.
  Node fused = make_node("FusedConv", 4, 1, {}, "com.ember");
  const std::string broadcast = cuda_decline_reason(
      fused, 1,
      {{DType::Float32, {1, 2, 5, 5}}, {DType::Float32, {3, 2, 3, 3}}, {DType::Float32, {3}}, {DType::Float32, {1, 3, 1, 1}}});
  EXPECT_NE(broadcast.find("residual"), std::string::npos) << broadcast;
  Node swish = make_node("FusedConv", 2, 1, {}, "com.ember");
  swish.attributes.set_string("activation", "Swish9");
  const std::string act =
      cuda_decline_reason(swish, 1, {{DType::Float32, {1, 2, 5, 5}}, {DType::Float32, {3, 2, 3, 3}}});
  EXPECT_NE(act.find("Swish9"), std::string::npos) << act;
  const std::string mixed = cuda_decline_reason(make_node("ConvTranspose", 2), 22,
                                                {{DType::Float16, {1, 2, 5, 5}}, {DType::Float32, {2, 3, 3, 3}}});
  EXPECT_NE(mixed.find("mixed"), std::string::npos) << mixed;
}

}  // namespace
}  // namespace ember::test
