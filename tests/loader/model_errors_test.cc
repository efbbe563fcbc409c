// Bad model files: each gives an ember::Error that names the file and the culprit.
#include "helpers.h"

namespace ember::test {
namespace {

onnx::ModelProto relu_model() {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  *g.add_initializer() = float_tensor("w", {64}, std::vector<float>(64, 0.25f));
  add_node(g, "Mul", {"x", "w"}, {"t"}, "scale");
  add_node(g, "Relu", {"t"}, {"y"}, "relu");
  return m;
}

TEST(ModelErrors, MissingFileIsNamed) {
  std::string msg = error_of([] { load_model("/nonexistent/dir/model.onnx"); });
  EXPECT_TRUE(contains(msg, "/nonexistent/dir/model.onnx: no such file")) << msg;
}

TEST(ModelErrors, GarbageIsNotAModel) {
  TempDir dir;
  write_file(dir / "x.onnx", "\xff\xff\xff\xff this is not protobuf");
  std::string msg = error_of([&] { load_model(dir / "x.onnx"); });
  EXPECT_TRUE(contains(msg, dir / "x.onnx")) << msg;
  EXPECT_TRUE(contains(msg, "not an ONNX model")) << msg;
  write_file(dir / "empty.onnx", "");
  EXPECT_TRUE(contains(error_of([&] { load_model(dir / "empty.onnx"); }), "empty"));
  EXPECT_TRUE(contains(error_of([&] { load_model(dir.str()); }), "not a regular file"));
}

TEST(ModelErrors, TruncatedFileIsRefused) {
  const std::string bytes = relu_model().SerializeAsString();
  std::string msg = error_of([&] { load_model_from_bytes(bytes.substr(0, bytes.size() / 2), "cut.onnx", ""); });
  EXPECT_TRUE(contains(msg, "cut.onnx: not an ONNX model")) << msg;
  EXPECT_TRUE(contains(msg, "truncated")) << msg;
}

TEST(ModelErrors, ModelWithoutGraphIsRefused) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: not an ONNX model, or a truncated one: it has no graph")) << msg;
}

TEST(ModelErrors, MissingInitializerNamesTheNodeAndValue) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->clear_initializer();
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: Mul 'scale' reads 'w'")) << msg;
}

TEST(ModelErrors, CycleIsReported) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, std::string("y"));  // scale reads relu's output
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: the graph has a cycle")) << msg;
}

TEST(ModelErrors, DuplicateOutputsAreReported) {
  onnx::ModelProto m = relu_model();
  add_node(*m.mutable_graph(), "Neg", {"x"}, {"t"}, "again");
  EXPECT_TRUE(contains(error_of([&] { load(m); }), "'t' is produced by two nodes"));

  onnx::ModelProto listed_twice = relu_model();
  add_output(*listed_twice.mutable_graph(), "y");
  EXPECT_TRUE(contains(error_of([&] { load(listed_twice); }), "graph output 'y' is listed twice"));

  onnx::ModelProto overwrites = relu_model();
  overwrites.mutable_graph()->mutable_node(1)->set_output(0, std::string("w"));
  EXPECT_TRUE(contains(error_of([&] { load(overwrites); }), "Relu 'relu' writes 'w', which is already"));

  onnx::ModelProto two_inits = relu_model();
  *two_inits.mutable_graph()->add_initializer() = float_tensor("w", {1}, {1});
  EXPECT_TRUE(contains(error_of([&] { load(two_inits); }), "initializer 'w' is defined twice"));
}

TEST(ModelErrors, InitializerSizeMismatchNamesFileAndTensor) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_initializer(0)->add_dims(2);  // [64, 2] with 64 floats
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: tensor 'w' has 256 bytes of raw_data, expected 512")) << msg;
}

TEST(ModelErrors, MalformedStringInitializerNamesFileAndTensor) {
  onnx::ModelProto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("vocab");
  t->set_data_type(onnx::TensorProto::STRING);
  t->add_string_data(std::string("a"));
  t->add_dims(2);
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: tensor 'vocab' has 1 values in string_data, expected 2")) << msg;
}

TEST(ModelErrors, MissingStandardOpsetIsReported) {
  onnx::ModelProto m = relu_model();
  m.clear_opset_import();
  EXPECT_TRUE(contains(error_of([&] { load(m); }), "imports no opset"));
}

TEST(ModelErrors, DeeplyNestedSubgraphsDoNotCrash) {
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  for (int depth = 0; depth < 60; ++depth) {
    add_output(*g, "y");
    auto* a = add_node(*g, "If", {"c"}, {"y"})->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    g = a->mutable_g();
  }
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx")) << msg;
}

TEST(ModelErrors, SubgraphNestingLimitIsAnError) {
  // 33 levels: within protobuf's recursion limit, past ember's own.
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  for (int depth = 0; depth < 33; ++depth) {
    auto* a = add_node(*g, "Loop", {}, {})->add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    g = a->mutable_g();
  }
  EXPECT_TRUE(contains(error_of([&] { load(m); }), "nested more than 32 levels"));
}

}  // namespace
}  // namespace ember::test
