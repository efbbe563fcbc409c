// com.ember BlockedPointwiseDepthwiseConv (ops/cpu/pointwise_depthwise_conv.cc) against
// its two BlockedConvs run one after the other (each checked against a plain loop in
// test_conv.cc): stride 1 and 2, with and without biases, each with its own activation,
// in blocks of 8, at a size the kernel fuses; and the refusal of a size it does not.
#include "ops/cpu/blocked_layouts.h"
#include "test_conv_util.h"

namespace ember::test {
namespace {

// The 1x1 and the depthwise conv read one value each per output element of a sum of
// 16 and 9 products: float32 rounding only, in another order.
constexpr float kRtol = 1e-5f, kAtol = 1e-5f;

struct Case {
  int64_t channels, expanded, size, stride;
  bool biases;
};

Node blocked_conv(std::vector<std::string> inputs, const std::string& output, int64_t block) {
  Node n;
  n.name = output;
  n.domain = "com.ember";
  n.op_type = "BlockedConv";
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.attributes.set_int("block", block);
  return n;
}

void set_depthwise(Attributes& a, const std::string& prefix, int64_t channels, int64_t stride) {
  a.set_int(prefix + "group", channels);
  a.set_ints(prefix + "kernel_shape", {3, 3});
  a.set_ints(prefix + "strides", {stride, stride});
  a.set_ints(prefix + "pads", {1, 1, 1, 1});
}

void set_activation_with(Attributes& a, const std::string& prefix, const ActivationCase& act) {
  a.set_string(prefix + "activation", act.kind);
  if (!act.params.empty()) a.set_floats(prefix + "activation_params", act.params);
}

// The fused node, and the two-node result it must equal.
std::pair<Node, Tensor> fused_and_expected(const Case& c, const std::vector<const Tensor*>& in) {
  const int64_t block = 8;
  const ActivationCase clip{"Clip", {0.f, 6.f}}, leaky{"LeakyRelu", {0.1f}};
  Node pw = blocked_conv({"x", "w", c.biases ? "b" : ""}, "between", block);
  pw.attributes.set_ints("kernel_shape", {1, 1});
  set_activation_with(pw.attributes, "", clip);
  Node dw = blocked_conv({"between", "w_dw", c.biases ? "b_dw" : ""}, "y", block);
  set_depthwise(dw.attributes, "", c.expanded, c.stride);
  set_activation_with(dw.attributes, "", leaky);
  const Tensor between = run_node(pw, 1, {in[0], in[1], in[2]}, 2).at(0);
  Tensor want = run_node(dw, 1, {&between, in[3], in[4]}, 2).at(0);

  Node fused = blocked_conv({"x", "w", c.biases ? "b" : "", "w_dw", c.biases ? "b_dw" : ""}, "y", block);
  fused.op_type = "BlockedPointwiseDepthwiseConv";
  fused.attributes = pw.attributes;
  set_depthwise(fused.attributes, "dw_", c.expanded, c.stride);
  set_activation_with(fused.attributes, "dw_", leaky);
  fused.attributes.set_int("dw_block", block);
  return {fused, want};
}

std::vector<Tensor> inputs_for(const Case& c) {
  const Tensor x = random_floats({2, c.channels, c.size, c.size}, 1);
  return {blocked(x, 8), random_floats({c.expanded, c.channels, 1, 1}, 2), random_floats({c.expanded}, 3),
          random_floats({c.expanded, 1, 3, 3}, 4), random_floats({c.expanded}, 5)};
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& t, bool biases) {
  return {&t[0], &t[1], biases ? &t[2] : nullptr, &t[3], biases ? &t[4] : nullptr};
}

// Between the two: 2 x 96 x 112 x 112 floats, 9.6 MB (the kernel fuses from 8 MiB).
TEST(PointwiseDepthwise, EqualsItsTwoConvolutionsWhereItFuses) {
  const std::optional<BlockedLayouts> layouts = blocked_layouts_for_this_cpu();
  if (!layouts || !layouts->fuses_pointwise_depthwise)
    GTEST_SKIP() << "oneDNN fuses a 1x1 and a depthwise conv in blocks of 8 at the AVX2 level only; this CPU runs "
                    "neither AVX2 alone nor such a kernel, and the planner does not fuse them here";
  for (const Case& c : {Case{16, 96, 112, 2, true}, Case{16, 96, 112, 1, false}, Case{16, 96, 112, 2, false}}) {
    SCOPED_TRACE("stride " + std::to_string(c.stride) + (c.biases ? ", biases" : ", no biases"));
    const std::vector<Tensor> t = inputs_for(c);
    const std::vector<const Tensor*> in = pointers(t, c.biases);
    const auto [fused, want] = fused_and_expected(c, in);
    const std::vector<Tensor> got = run_kernel(fused, 1, in, {});  // the fused kernel itself: a refusal throws
    ASSERT_EQ(got[0].shape(), want.shape());
    expect_close(got[0], want, kRtol, kAtol);
  }
}

// 2 x 32 x 28 x 28 floats between them stay in cache: the kernel declines, saying so,
// and the planner runs the two convolutions.
TEST(PointwiseDepthwise, LeavesASmallExpansionToItsTwoConvolutions) {
  const Case c{16, 32, 28, 1, true};
  const std::vector<Tensor> t = inputs_for(c);
  const Node fused = fused_and_expected(c, pointers(t, true)).first;
  try {
    run_kernel(fused, 1, pointers(t, true), {});
    ADD_FAILURE() << "fused a 200 KB expansion";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stays in cache"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::test
