// lower_string_class_labels alone: a LinearClassifier with string labels becomes one over
// their positions and a Gather of the strings, and the label output is the string the
// scores pick (a plain reference: the argmax's label), the scores unchanged.
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace ember {
namespace {

using test::make_node;
using test::run_node_by_node;

TEST(LowerStringClassLabels, ClassifierGivesThePositionAndGatherTheString) {
  Graph g;
  g.opset_imports["ai.onnx.ml"] = 1;  // no standard domain: the pass imports it for Gather
  g.inputs.push_back({"x", DType::Float32, {}, false});
  Node classifier = make_node("LinearClassifier", {"x"}, {"label", "scores"}, {}, "ai.onnx.ml");
  classifier.attributes.set_floats("coefficients", {1, 0, 0, 1, -1, -1});  // 3 classes x 2 features
  Attribute labels;
  labels.kind = Attribute::Kind::Strings;
  labels.strings = {"chat", "chien", "été"};
  classifier.attributes.set("classlabels_strings", labels);
  g.nodes.push_back(classifier);
  g.outputs.push_back({"label", DType::String, {}, false});
  g.outputs.push_back({"scores", DType::Float32, {}, false});

  EXPECT_EQ(lower_string_class_labels(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].attributes.get_ints("classlabels_ints"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(g.nodes[0].attributes.has("classlabels_strings"));
  EXPECT_EQ(g.nodes[1].op_type, "Gather");
  EXPECT_EQ(g.opset(""), 13);

  Tensor x(DType::Float32, {3, 2});
  const float rows[] = {2, 1, 0, 3, -2, -1};  // argmax: class 0, 1, 2
  std::copy(rows, rows + 6, x.data_as<float>());
  const auto out = run_node_by_node(g, {x});
  ASSERT_EQ(out[0].dtype(), DType::String);
  EXPECT_EQ(out[0].data_as<std::string>()[0], "chat");
  EXPECT_EQ(out[0].data_as<std::string>()[1], "chien");
  EXPECT_EQ(out[0].data_as<std::string>()[2], "été");
  EXPECT_EQ(out[1].shape(), (Shape{3, 3}));
  EXPECT_EQ(lower_string_class_labels(g), 0);  // nothing left to lower
}

}  // namespace
}  // namespace ember
