// The Winograd kernels of BlockedConv (ops/cpu/winograd_conv.h), F(4x4, 3x3) and F(2x2,
// 3x3), in blocks of 8 (AVX2) and 16 (AVX-512, where the CPU has it), against a
// direct-loop convolution, and when BlockedConv chooses which.
#include "ops/cpu/winograd_conv.h"

#include "ops/cpu/blocked_layouts.h"
#include "ops/cpu/vector_math.h"

#include "graph/elementwise_table.h"
#include "ops/packed_weights.h"
#include "test_conv_util.h"

#include <cmath>
#include <iostream>
#include <optional>

namespace ember::test {
namespace {

// Tolerance: the transforms' constants (up to 8 and 1/24) make the error grow with the
// output's scale, not with each element: |y - direct| <= kScaleTol * max |direct| (the
// scale before the activation). The
// cases below measure 1e-7 to 7e-6.
constexpr double kScaleTol = 2e-5;

struct Case {
  Shape x;  // plain N x C x H x W
  int64_t filters;
  Shape pads;  // top, left, bottom, right
  bool bias, residual;
  ActivationCase activation;
};

Node blocked_conv_node(const Case& c, int64_t lanes = 8) {
  Node node = conv_node({{1, 1}, {1, 1}, {c.pads[0], c.pads[1]}, {c.pads[2], c.pads[3]}}, true);
  node.op_type = "BlockedConv";
  node.domain = "com.ember";
  node.attributes.set_int("block", lanes);
  if (!c.bias) node.inputs[2] = "";
  if (c.residual) node.inputs.push_back("z");
  set_activation(node, c.activation);
  return node;
}

// `inputs` as a kernel sees them: types, and every value known at plan time.
KernelInit init_for(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<TensorType>& types) {
  types.assign(inputs.size(), {});
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) types[i] = {inputs[i]->dtype(), inputs[i]->shape()};
  return KernelInit{node, 1, Device{}, types, inputs, infer_node(node, 1, types, inputs)};
}

double apply(const ActivationCase& a, double v) {
  if (a.kind == "Relu") return std::max(0.0, v);
  if (a.kind == "Clip") return std::min<double>(a.params[1], std::max<double>(a.params[0], v));
  if (a.kind == "Sigmoid") return 1 / (1 + std::exp(-v));
  return v;
}

// The block sizes this CPU runs: 8, and 16 where it has AVX-512.
std::vector<int64_t> blocks_here() {
  if (cpu_supports(CpuIsa::Avx512)) return {8, 16};
  std::cout << "[ NOTE     ] this CPU has no AVX-512: blocks of 16 are not checked here\n";
  return {8};
}

void check(const Case& c, WinogradTile tile, int64_t lanes) {
  SCOPED_TRACE(shape_to_string(c.x) + " -> " + std::to_string(c.filters) + " filters, " + c.activation.kind +
               (tile == WinogradTile::F2x2 ? ", F(2x2)" : ", F(4x4)") + ", blocks of " + std::to_string(lanes));
  const Shape w_shape{c.filters, c.x[1], 3, 3};
  const Tensor x = random_floats(c.x, 11), w = random_floats(w_shape, 12), b = random_floats({c.filters}, 13);
  const ConvParams p{{1, 1}, {1, 1}, {c.pads[0], c.pads[1]}, {c.pads[2], c.pads[3]}};
  const Shape y_shape{c.x[0], c.filters, c.x[2] + c.pads[0] + c.pads[2] - 2, c.x[3] + c.pads[1] + c.pads[3] - 2};
  const Tensor z = random_floats(y_shape, 14);
  const Tensor x_in = blocked(x, lanes), z_in = blocked(z, lanes);
  std::vector<const Tensor*> inputs{&x_in, &w, c.bias ? &b : nullptr};
  if (c.residual) inputs.push_back(&z_in);

  const Node node = blocked_conv_node(c, lanes);
  std::vector<TensorType> types;
  KernelInit init = init_for(node, inputs, types);
  ew::Activation act;
  std::string why;
  ASSERT_TRUE(fused_activation_of(node, &act, &why)) << why;
  const auto kernel = make_winograd_conv(init, act, tile, &why);
  ASSERT_TRUE(kernel) << why;
  const Tensor y = run_built_kernel(*kernel, init, inputs);

  std::vector<float> want = reference_conv(x, w, c.bias ? &b : nullptr, p, y_shape);
  double scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double sum = want[i] + (c.residual ? z.data_as<float>()[i] : 0.f);
    scale = std::max(scale, std::abs(sum));
    want[i] = static_cast<float>(apply(c.activation, sum));
  }
  const std::vector<float> want_blocked = values_of(blocked([&] {
    Tensor t(DType::Float32, y_shape);
    std::copy(want.begin(), want.end(), t.data_as<float>());
    return t;
  }(), lanes));
  ASSERT_EQ(y.numel(), static_cast<int64_t>(want_blocked.size()));
  double worst = 0;
  for (size_t i = 0; i < want_blocked.size(); ++i)
    worst = std::max(worst, std::abs(double(y.data_as<float>()[i]) - want_blocked[i]));
  EXPECT_LE(worst, kScaleTol * scale) << "largest error " << worst << " of an output scale " << scale;
}

TEST(WinogradConv, MatchesTheDirectSumOnOddImagesPadsAndChannels) {
  for (int64_t lanes : blocks_here())
    for (WinogradTile tile : {WinogradTile::F4x4, WinogradTile::F2x2}) {
      const int64_t b = lanes;  // channels in blocks: 1, 2 and 3 of them
      // Images that the tiles do not cover evenly, several blocks in and out.
      check({{1, 2 * b, 9, 11}, b, {1, 1, 1, 1}, true, false, {"Relu", {}}}, tile, lanes);
      check({{2, b, 14, 13}, 3 * b, {1, 1, 1, 1}, true, true, {"Clip", {-0.5f, 0.7f}}}, tile, lanes);
      check({{1, 2 * b, 7, 7}, 2 * b, {1, 1, 1, 1}, true, true, {"Relu", {}}}, tile, lanes);
      // No pads (a smaller output), and pads that differ per side.
      check({{1, 3 * b, 7, 5}, 2 * b, {0, 0, 0, 0}, false, false, {"", {}}}, tile, lanes);
      check({{1, b, 10, 10}, b, {2, 0, 1, 2}, true, true, {"Sigmoid", {}}}, tile, lanes);
    }
}

// Passes whose V and M stay ~3 MB, in whole register blocks of tiles (6 in blocks of
// 8, 12 in blocks of 16), the last one short: 243 4x4 tiles of 64 channels in and out
// as 126 and 117 (132 and 111 in blocks of 16), 507 2x2 tiles as 258 and 249 (264 and
// 243); and a last panel of filters one vector wide (80 filters in blocks of 16).
TEST(WinogradConv, MatchesTheDirectSumOverSeveralPasses) {
  for (int64_t lanes : blocks_here()) {
    check({{3, 64, 36, 36}, 64, {1, 1, 1, 1}, true, true, {"Relu", {}}}, WinogradTile::F4x4, lanes);
    check({{3, 64, 26, 26}, 64, {1, 1, 1, 1}, true, true, {"Relu", {}}}, WinogradTile::F2x2, lanes);
    check({{2, 48, 20, 20}, 80, {1, 1, 1, 1}, true, false, {"Relu", {}}}, WinogradTile::F4x4, lanes);
  }
}

// The variant BlockedConv's factory picks for X [batch, c, size, size] blocked by
// `lanes` and a 3x3 filter of `stride`, nullopt when it picks oneDNN's direct kernel.
std::optional<std::string> chosen_for(int64_t batch, int64_t c, int64_t size, int64_t stride = 1,
                                      int64_t lanes = 8) {
  const Tensor x = random_floats({batch, c / lanes, size, size, lanes}, 1), w = random_floats({c, c, 3, 3}, 2);
  Node node = conv_node({{stride, stride}, {1, 1}, {1, 1}, {1, 1}}, false);
  node.op_type = "BlockedConv";
  node.domain = "com.ember";
  node.attributes.set_int("block", lanes);
  const std::vector<const Tensor*> inputs{&x, &w};
  std::vector<TensorType> types;
  KernelInit init = init_for(node, inputs, types);
  init.num_threads = 2;
  std::string why;
  const auto kernel = find_kernels("com.ember", "BlockedConv", 1, DeviceKind::Cpu).at(0)->factory(init, &why);
  EXPECT_TRUE(kernel) << why;
  if (!kernel || !kernel->variant()) return std::nullopt;
  return kernel->variant();
}

TEST(WinogradConv, BlockedConvChoosesWhereWhichPays) {
  EXPECT_EQ(chosen_for(1, 64, 56), "winograd F(4x4,3x3)");
  EXPECT_EQ(chosen_for(1, 256, 14), "winograd F(4x4,3x3)");  // 16 tiles
  // 4 tiles of 4x4: F(4x4)'s U costs more than it saves, and 4x the filters' memory.
  EXPECT_EQ(chosen_for(1, 512, 7), "winograd F(2x2,3x3)");
  EXPECT_EQ(chosen_for(8, 512, 7), "winograd F(2x2,3x3)");
  EXPECT_EQ(chosen_for(1, 32, 7), std::nullopt);  // too small a conv for the passes
  EXPECT_EQ(chosen_for(1, 32, 56), "winograd F(4x4,3x3)");
  EXPECT_EQ(chosen_for(8, 16, 56), std::nullopt);            // the transforms cost more than they save
  EXPECT_EQ(chosen_for(1, 64, 56, 2), std::nullopt);         // strided
}

// In blocks of 16, against oneDNN's AVX-512 direct kernel: 48 tiles or more (the
// measurements are in winograd_conv.cc).
TEST(WinogradConv, BlockedConvChoosesWhereWhichPaysInBlocksOf16) {
  const std::optional<BlockedLayouts> layouts = blocked_layouts_for_this_cpu();
  if (!layouts || layouts->dense_block != 16)
    GTEST_SKIP() << "oneDNN runs no AVX-512 kernels here: convolutions are not planned in blocks of 16";
  const auto chosen = [](int64_t batch, int64_t c, int64_t size) { return chosen_for(batch, c, size, 1, 16); };
  EXPECT_EQ(chosen(1, 64, 56), "winograd F(4x4,3x3)");   // 196 tiles
  EXPECT_EQ(chosen(1, 128, 28), "winograd F(4x4,3x3)");  // 49
  EXPECT_EQ(chosen(1, 256, 14), "winograd F(2x2,3x3)");  // 16 of 4x4, 49 of 2x2
  EXPECT_EQ(chosen(4, 256, 14), "winograd F(4x4,3x3)");  // 64
  EXPECT_EQ(chosen(1, 512, 7), std::nullopt);            // 16 of 2x2
  EXPECT_EQ(chosen(8, 512, 7), "winograd F(2x2,3x3)");   // 128 of 2x2
  EXPECT_EQ(chosen(12, 512, 7), "winograd F(2x2,3x3)");  // 48 of 4x4, but 4 an image: F(4x4)'s U, 4x these filters, is not worth it
  EXPECT_EQ(chosen(1, 16, 56), std::nullopt);            // too few channels for the transforms
}

// The transformed filters of a session weight are made once and shared by the plans
// that run the same conv (as packed_constant shares oneDNN's reordered weights).
TEST(WinogradConv, TransformedFiltersAreMadeOncePerSessionWeight) {
  const Case c{{1, 16, 16, 16}, 16, {1, 1, 1, 1}, false, false, {"Relu", {}}};
  const Tensor x = blocked(random_floats(c.x, 1), 8), w = random_floats({16, 16, 3, 3}, 2);
  const Node node = blocked_conv_node(c);
  const std::vector<const Tensor*> inputs{&x, &w, nullptr};
  PackedWeights packed;
  std::vector<std::unique_ptr<Kernel>> kernels;
  for (int plan = 0; plan < 2; ++plan) {
    std::vector<TensorType> types;
    KernelInit init = init_for(node, inputs, types);
    init.weights = {false, true, false};
    init.packed_weights = &packed;
    ew::Activation act;
    std::string why;
    ASSERT_TRUE(fused_activation_of(node, &act, &why));
    kernels.push_back(make_winograd_conv(init, act, WinogradTile::F4x4, &why));
    ASSERT_TRUE(kernels.back()) << why;
  }
  EXPECT_EQ(packed.forms(), 1u);
  EXPECT_EQ(packed.bytes(), 36u * 16 * 16 * sizeof(float));
}

TEST(WinogradConv, DeclinesWhatItsFormCannotRun) {
  const Case c{{1, 16, 16, 16}, 16, {1, 1, 1, 1}, false, false, {"", {}}};
  const Tensor x = blocked(random_floats(c.x, 1), 8), w = random_floats({16, 16, 3, 3}, 2);
  const Tensor w5 = random_floats({16, 16, 5, 5}, 3);
  ew::Activation none;
  std::string why;
  {
    Node node = blocked_conv_node(c);
    node.attributes.set_ints("dilations", {2, 2});
    std::vector<TensorType> types;
    KernelInit init = init_for(node, {&x, &w, nullptr}, types);
    EXPECT_FALSE(make_winograd_conv(init, none, WinogradTile::F4x4, &why));
    EXPECT_EQ(why, "strided or dilated");
  }
  {
    Node node = blocked_conv_node(c);
    std::vector<TensorType> types;
    KernelInit init = init_for(node, {&x, &w5, nullptr}, types);
    EXPECT_FALSE(make_winograd_conv(init, none, WinogradTile::F4x4, &why));
    EXPECT_EQ(why, "not a 3x3 filter");
  }
  {
    Node node = blocked_conv_node(c);
    std::vector<TensorType> types;
    KernelInit init = init_for(node, {&x, &w, nullptr}, types);
    init.values[1] = nullptr;
    EXPECT_FALSE(make_winograd_conv(init, none, WinogradTile::F4x4, &why));
    EXPECT_EQ(why, "the weights are not constant");
  }
}

}  // namespace
}  // namespace ember::test
