// lower_patch_convs: a Conv whose windows tile an input of few channels becomes a MatMul
// over the patches that computes the same, and convolutions it cannot rewrite are left
// alone.
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace ember {
namespace {

using test::count_ops;
using test::make_node;
using test::random_tensor;

Dim known(int64_t v) { return Dim{v, ""}; }

// y = Conv(x [batch, c, h, w], W [k, c, p, p], B [k]) at stride p, and `attributes`
// on top. The batch is symbolic, as exporters declare it.
Graph patch_conv(int64_t c, int64_t h, int64_t w, int64_t k, int64_t p, Attributes extra = {}) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {{"x", DType::Float32, {Dim{-1, "batch"}, known(c), known(h), known(w)}, true}};
  std::mt19937 rng(5);
  g.initializers["W"] = random_tensor({k, c, p, p}, rng);
  g.initializers["B"] = random_tensor({k}, rng);
  Node conv = make_node("Conv", {"x", "W", "B"}, {"y"});
  conv.attributes = std::move(extra);
  if (!conv.attributes.find("strides")) conv.attributes.set_ints("strides", {p, p});
  conv.attributes.set_ints("kernel_shape", {p, p});
  g.nodes = {conv};
  g.outputs = {{"y", DType::Float32, {}, false}};
  return g;
}

TEST(LowerPatchConvs, APatchEmbeddingBecomesAMatMulOverThePatchesThatComputesTheSame) {
  struct Case {
    int64_t c, h, w, k, p;
    bool bias;
  };
  for (const Case& c : {Case{3, 32, 48, 8, 16, true}, Case{3, 24, 16, 5, 8, true}, Case{1, 16, 32, 7, 8, false}}) {
    SCOPED_TRACE(testing::Message() << "C " << c.c << " " << c.h << "x" << c.w << " K " << c.k << " patch " << c.p);
    Graph original = patch_conv(c.c, c.h, c.w, c.k, c.p);
    if (!c.bias) original.nodes[0].inputs.resize(2);
    Graph g = original;
    ASSERT_EQ(lower_patch_convs(g), 1);
    EXPECT_EQ(count_ops(g, "Conv"), 0);
    EXPECT_EQ(count_ops(g, "MatMul"), 1);
    EXPECT_EQ(count_ops(g, "Add"), c.bias ? 1 : 0);
    EXPECT_EQ(count_ops(g, "Transpose"), 2);
    EXPECT_EQ(g.nodes.back().outputs[0], "y");
    std::mt19937 rng(6);
    for (int64_t batch : {1, 2, 0}) {
      const std::vector<Tensor> in = {random_tensor({batch, c.c, c.h, c.w}, rng)};
      test::expect_close(test::run_node_by_node(g, in)[0], test::run_node_by_node(original, in)[0], 1e-5f);
    }
  }
}

TEST(LowerPatchConvs, LeavesAloneWhatItCannotRewrite) {
  auto attrs = [](const char* name, std::vector<int64_t> v) {
    Attributes a;
    a.set_ints(name, std::move(v));
    return a;
  };
  Attributes grouped;
  grouped.set_int("group", 2);
  Attributes same;
  same.set_string("auto_pad", "SAME_UPPER");
  const Graph untouched[] = {
      patch_conv(3, 30, 32, 8, 8),                                // 30 is no multiple of 8
      patch_conv(3, 16, 16, 8, 4),                                // patches under 8 wide
      patch_conv(4, 16, 16, 8, 8, grouped),                       // groups
      patch_conv(3, 16, 16, 8, 8, attrs("pads", {1, 1, 1, 1})),   // pads
      patch_conv(3, 16, 16, 8, 8, attrs("strides", {2, 2})),      // overlapping windows
      patch_conv(3, 16, 16, 8, 8, attrs("dilations", {2, 2})),
      patch_conv(3, 16, 16, 8, 8, same),
      patch_conv(3, 16, 16, 8, 1),                                // 1x1 already
      patch_conv(8, 16, 16, 8, 8),                                // wide enough for the conv kernels
  };
  for (const Graph& original : untouched) {
    Graph g = original;
    EXPECT_EQ(lower_patch_convs(g), 0);
    EXPECT_EQ(count_ops(g, "MatMul"), 0);
  }
  // X's spatial dims unknown: SpaceToDepth would need them to be multiples of p.
  Graph unknown = patch_conv(3, 16, 16, 8, 8);
  unknown.inputs[0].dims[2] = Dim{-1, "height"};
  EXPECT_EQ(lower_patch_convs(unknown), 0);
  // A filter computed at run time.
  Graph computed = patch_conv(3, 16, 16, 8, 8);
  computed.inputs.push_back({"W", DType::Float32, {}, false});
  computed.initializers.erase("W");
  EXPECT_EQ(lower_patch_convs(computed), 0);
}

}  // namespace
}  // namespace ember
