// What the schemas hold besides shape rules: typed attributes parsed once (and their
// errors), and the traits the passes ask instead of keeping op-name lists.
#include "graph/passes/graph_edit.h"
#include "graph/schema.h"
#include "graph/schemas/norm.h"
#include "graph/schemas/reduce.h"
#include "ops/evaluate.h"

#include <ember/core/error.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <string>

namespace ember {
namespace {

using test::make_node;

Graph graph_of(std::vector<Node> nodes, int64_t opset = 17) {
  Graph g;
  g.opset_imports[""] = opset;
  g.nodes = std::move(nodes);
  return g;
}

TEST(Schema, BindingParsesTypedAttributesOnceForEveryNodeThatHasThem) {
  Attributes a;
  a.set_int("axis", 1);
  a.set_float("epsilon", 1e-3f);
  Graph g = graph_of({make_node("LayerNormalization", {"x", "s"}, {"y"}, a), make_node("Relu", {"y"}, {"z"})});
  bind_attributes(g);
  ASSERT_NE(g.nodes[0].typed_attributes, nullptr);
  EXPECT_EQ(g.nodes[1].typed_attributes, nullptr) << "Relu has no typed attributes";
  const auto parsed = attributes_of<RowNormAttributes>(g.nodes[0], 17);
  EXPECT_EQ(parsed.get(), g.nodes[0].typed_attributes.get()) << "the bound struct, not a new parse";
  EXPECT_EQ(parsed->axis, 1);
  EXPECT_FLOAT_EQ(parsed->epsilon, 1e-3f);
  EXPECT_EQ(parsed->stash_type, 1);
}

TEST(Schema, DefaultsFollowTheOpset) {
  const Node softmax = make_node("Softmax", {"x"}, {"y"});
  EXPECT_EQ(attributes_of<SoftmaxAttributes>(softmax, 11)->axis, 1);
  EXPECT_TRUE(attributes_of<SoftmaxAttributes>(softmax, 11)->coerced);
  EXPECT_EQ(attributes_of<SoftmaxAttributes>(softmax, 13)->axis, -1);
  const Node sum = make_node("ReduceSum", {"x"}, {"y"});
  EXPECT_FALSE(attributes_of<ReduceAttributes>(sum, 11)->axes_from_input);
  EXPECT_TRUE(attributes_of<ReduceAttributes>(sum, 13)->axes_from_input);
  EXPECT_FALSE(attributes_of<ReduceAttributes>(make_node("ReduceMax", {"x"}, {"y"}), 13)->axes_from_input);
}

TEST(Schema, AnInvalidAttributeFailsAtBindingNamingTheNode) {
  Attributes a;
  a.set_int("stash_type", 7);
  Graph g = graph_of({make_node("LayerNormalization", {"x", "s"}, {"y"}, a)});
  try {
    bind_attributes(g);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("LayerNormalization 'y_node'"), std::string::npos) << message;
    EXPECT_NE(message.find("stash_type must be 1 (float) or 16 (bfloat16), got 7"), std::string::npos) << message;
  }
  Attributes groups;
  groups.set_int("num_groups", 0);
  Graph g2 = graph_of({make_node("GroupNormalization", {"x", "s", "b"}, {"y"}, groups)}, 21);
  EXPECT_THROW(bind_attributes(g2), Error);
}

TEST(Schema, SubgraphNodesAreBoundToo) {
  auto body = std::make_shared<Graph>(graph_of({make_node("Softmax", {"x"}, {"y"})}, 13));
  Node loop = make_node("If", {"c"}, {"y"});
  Attribute branch;
  branch.kind = Attribute::Kind::Graph;
  branch.g = body;
  loop.attributes.set("then_branch", branch);
  Graph g = graph_of({loop}, 13);
  bind_attributes(g);
  EXPECT_NE(body->nodes[0].typed_attributes, nullptr);
}

TEST(Schema, AskingForTheWrongKindOfAttributesRaises) {
  EXPECT_THROW(attributes_of<SoftmaxAttributes>(make_node("LayerNormalization", {"x", "s"}, {"y"}), 17), Error);
  EXPECT_THROW(attributes_of<SoftmaxAttributes>(make_node("Relu", {"x"}, {"y"}), 17), Error);
}

// A nondeterministic op (the Random* family, when they come) is never folded; the
// trait, not a list of names, says so.
TEST(Schema, TraitsDecideFoldingAndFloat16) {
  register_schema(Schema{"DiceRoll", "test.traits", infer_same_as_input0, nullptr, OpTraits{.deterministic = false}});
  EXPECT_FALSE(can_fold(make_node("DiceRoll", {"x"}, {"y"}, {}, "test.traits")));
  EXPECT_TRUE(can_fold(make_node("Relu", {"x"}, {"y"})));
  EXPECT_FALSE(find_schema("", "Range")->traits.float16_safe);
  EXPECT_FALSE(find_schema("", "QuantizeLinear")->traits.float16_safe);
  EXPECT_TRUE(find_schema("", "Softmax")->traits.float16_safe);
}

// NhwcConv's types: the CPU's bf16 sessions give it a bfloat16 X beside float32
// weights (output float32, or bfloat16 with output_bf16); CUDA's bf16 sessions make it
// bfloat16 throughout; any other mix is refused.
TEST(Schema, NhwcConvTakesTheCpusMixedBFloat16AndCudasPlainBFloat16) {
  const auto output_type = [](DType x, DType w, bool out_bf16) {
    Node node = make_node("NhwcConv", {"x", "w"}, {"y"});
    node.domain = "com.ember";
    if (out_bf16) node.attributes.set_int("output_bf16", 1);
    return infer_node(node, 1, {{x, {1, 5, 5, 4}}, {w, {8, 4, 3, 3}}}, {nullptr, nullptr})[0].dtype;
  };
  EXPECT_EQ(output_type(DType::BFloat16, DType::Float32, false), DType::Float32);
  EXPECT_EQ(output_type(DType::BFloat16, DType::Float32, true), DType::BFloat16);
  EXPECT_EQ(output_type(DType::Float32, DType::Float32, true), DType::BFloat16);
  EXPECT_EQ(output_type(DType::BFloat16, DType::BFloat16, false), DType::BFloat16);
  EXPECT_EQ(output_type(DType::Float16, DType::Float16, false), DType::Float16);
  EXPECT_THROW(output_type(DType::BFloat16, DType::BFloat16, true), Error);
  EXPECT_THROW(output_type(DType::BFloat16, DType::Float16, false), Error);
}

}  // namespace
}  // namespace ember
