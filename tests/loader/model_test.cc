// Whole models: graph structure, symbolic dims, IR < 4 inputs, Constant folding into
// initializers, attributes, subgraphs, newer-IR files.
#include "helpers.h"

namespace ember::test {
namespace {

TEST(LoadModel, ReadsInputsOutputsDimsAndOpsets) {
  onnx::ModelProto m = new_model(8, 17);
  auto* extra = m.add_opset_import();
  extra->set_domain("ai.onnx");  // the standard domain under its other name
  extra->set_version(17);
  auto& g = *m.mutable_graph();
  add_input(g, "x", {"batch", "3", "?"});
  add_output(g, "y", {"batch", "3", "?"});
  add_node(g, "Relu", {"x"}, {"y"}, "relu")->set_domain("ai.onnx");
  Graph graph = load(m);

  ASSERT_EQ(graph.inputs.size(), 1u);
  const ValueInfo& x = graph.inputs[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, DType::Float32);
  ASSERT_TRUE(x.has_shape);
  ASSERT_EQ(x.dims.size(), 3u);
  EXPECT_EQ(x.dims[0].symbol, "batch");
  EXPECT_FALSE(x.dims[0].known());
  EXPECT_EQ(x.dims[1].value, 3);
  EXPECT_FALSE(x.dims[2].known());
  EXPECT_TRUE(x.dims[2].symbol.empty());
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_EQ(graph.outputs[0].name, "y");
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].domain, "");
  EXPECT_EQ(graph.opset(), 17);
  EXPECT_EQ(graph.opset_imports.size(), 1u);
  EXPECT_EQ(graph.source, "test.onnx");
  EXPECT_EQ(graph.name, "main");
}

TEST(LoadModel, NodesComeOutTopologicallySorted) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "z");
  add_node(g, "Neg", {"y"}, {"z"}, "second");
  add_node(g, "Relu", {"x"}, {"y"}, "first");
  Graph graph = load(m);
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[0].name, "first");
  EXPECT_EQ(graph.nodes[1].name, "second");
}

TEST(LoadModel, InputsThatAreInitializersAreNotGraphInputs) {
  onnx::ModelProto m = new_model(3, 8);  // IR 3 lists weights among the inputs
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_input(g, "w");
  add_output(g, "y");
  *g.add_initializer() = float_tensor("w", {2}, {0.5f, 2.f});
  add_node(g, "Mul", {"x", "w"}, {"y"});
  Graph graph = load(m);
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].name, "x");
  ASSERT_TRUE(graph.is_initializer("w"));
  EXPECT_EQ(bytes_of(graph.initializers.at("w")), bytes_of(std::vector<float>{0.5f, 2.f}));
  EXPECT_EQ(graph.value_info.at("w").dtype, DType::Float32);
}

TEST(LoadModel, ConstantNodesBecomeInitializers) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  auto* c1 = add_node(g, "Constant", {}, {"c_tensor"});
  auto* a1 = c1->add_attribute();
  a1->set_name("value");
  a1->set_type(onnx::AttributeProto::TENSOR);
  *a1->mutable_t() = float_tensor("", {2}, {3.f, 4.f});
  auto* c2 = add_node(g, "Constant", {}, {"c_float"});
  auto* a2 = c2->add_attribute();
  a2->set_name("value_float");
  a2->set_type(onnx::AttributeProto::FLOAT);
  a2->set_f(1.25f);
  auto* c3 = add_node(g, "Constant", {}, {"c_ints"});
  auto* a3 = c3->add_attribute();
  a3->set_name("value_ints");
  a3->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : {7, -8, 9}) a3->add_ints(v);
  add_node(g, "Sum", {"x", "c_tensor", "c_float", "c_ints"}, {"y"});
  Graph graph = load(m);

  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].op_type, "Sum");
  EXPECT_EQ(bytes_of(graph.initializers.at("c_tensor")), bytes_of(std::vector<float>{3.f, 4.f}));
  const Tensor& f = graph.initializers.at("c_float");
  EXPECT_EQ(f.rank(), 0);
  EXPECT_EQ(*f.data_as<float>(), 1.25f);
  const Tensor& ints = graph.initializers.at("c_ints");
  EXPECT_EQ(ints.dtype(), DType::Int64);
  EXPECT_EQ(bytes_of(ints), bytes_of(std::vector<int64_t>{7, -8, 9}));
}

TEST(LoadModel, StringConstantsBecomeStringInitializers) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_output(g, "c");
  add_output(g, "one");
  auto* a = add_node(g, "Constant", {}, {"c"}, "labels")->add_attribute();
  a->set_name("value_strings");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings("cat");
  a->add_strings("");
  auto* b = add_node(g, "Constant", {}, {"one"}, "label")->add_attribute();
  b->set_name("value_string");
  b->set_type(onnx::AttributeProto::STRING);
  b->set_s("dog");
  const Graph graph = load(m);
  const Tensor& c = graph.initializers.at("c");
  ASSERT_EQ(c.dtype(), DType::String);
  EXPECT_EQ(c.shape(), (Shape{2}));
  EXPECT_EQ(c.data_as<std::string>()[0], "cat");
  EXPECT_EQ(c.data_as<std::string>()[1], "");
  const Tensor& one = graph.initializers.at("one");
  EXPECT_EQ(one.rank(), 0);
  EXPECT_EQ(*one.data_as<std::string>(), "dog");
}

TEST(LoadModel, AttributesOfEveryKindAreConverted) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  auto* n = add_node(g, "Custom", {"x"}, {"y"});
  n->set_domain("my.domain");
  using AP = onnx::AttributeProto;
  auto add = [&](const std::string& name, AP::AttributeType type) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  add("f", AP::FLOAT)->set_f(0.5f);
  add("i", AP::INT)->set_i(-3);
  add("s", AP::STRING)->set_s("same");
  auto* fs = add("fs", AP::FLOATS);
  fs->add_floats(1.f);
  fs->add_floats(2.f);
  auto* is = add("is", AP::INTS);
  is->add_ints(4);
  auto* ss = add("ss", AP::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  *add("t", AP::TENSOR)->mutable_t() = float_tensor("", {1}, {9.f});
  *add("ts", AP::TENSORS)->add_tensors() = float_tensor("", {1}, {8.f});
  add("legacy", AP::UNDEFINED)->set_i(11);  // old exporters leave the type unset
  auto* b = m.add_opset_import();
  b->set_domain("my.domain");
  b->set_version(1);
  Graph graph = load(m);

  const Attributes& at = graph.nodes[0].attributes;
  EXPECT_EQ(at.get_float("f"), 0.5f);
  EXPECT_EQ(at.get_int("i"), -3);
  EXPECT_EQ(at.get_string("s"), "same");
  EXPECT_EQ(at.get_floats("fs"), (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(at.get_ints("is"), (std::vector<int64_t>{4}));
  EXPECT_EQ(at.get_strings_or("ss", {}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*at.get_tensor("t").data_as<float>(), 9.f);
  ASSERT_EQ(at.find("ts")->tensors.size(), 1u);
  EXPECT_EQ(*at.find("ts")->tensors[0].data_as<float>(), 8.f);
  EXPECT_EQ(at.get_int("legacy"), 11);
  EXPECT_EQ(graph.nodes[0].domain, "my.domain");
  EXPECT_EQ(graph.opset("my.domain"), 1);
}

TEST(LoadModel, AttributeReferencesOutsideFunctionsAreErrors) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  auto* a = add_node(g, "LeakyRelu", {"x"}, {"y"}, "leaky")->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_ref_attr_name("slope");
  std::string msg = error_of([&] { load(m); });
  EXPECT_NE(msg.find("LeakyRelu 'leaky': attribute 'alpha'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only makes sense inside a function"), std::string::npos) << msg;
}

// If(cond) then: y = x + c (c a Constant inside the branch) else: y = Neg(x); the
// then branch's nodes are out of order and read x from the enclosing graph.
onnx::ModelProto if_model() {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  auto* cond = g.add_input();
  cond->set_name("cond");
  set_type(cond, onnx::TensorProto::BOOL, {});
  add_output(g, "y");
  auto* node = add_node(g, "If", {"cond"}, {"y"}, "branch");
  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  auto& then_g = *then_attr->mutable_g();
  then_g.set_name("then");
  add_output(then_g, "t_out");
  add_node(then_g, "Add", {"x", "c"}, {"t_out"}, "add");
  auto* c = add_node(then_g, "Constant", {}, {"c"})->add_attribute();
  c->set_name("value");
  c->set_type(onnx::AttributeProto::TENSOR);
  *c->mutable_t() = float_tensor("", {1}, {10.f});
  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  auto& else_g = *else_attr->mutable_g();
  add_output(else_g, "e_out");
  add_node(else_g, "Neg", {"x"}, {"e_out"});
  return m;
}

TEST(LoadModel, SubgraphsAreLoadedWithTheirConstantsAndOuterScope) {
  Graph graph = load(if_model());
  ASSERT_EQ(graph.nodes.size(), 1u);
  const Node& node = graph.nodes[0];
  const Graph& then_g = node.attributes.get_graph("then_branch");
  EXPECT_EQ(then_g.name, "then");
  ASSERT_EQ(then_g.nodes.size(), 1u);
  EXPECT_EQ(then_g.nodes[0].op_type, "Add");
  EXPECT_EQ(*then_g.initializers.at("c").data_as<float>(), 10.f);
  EXPECT_EQ(then_g.opset(), 17);
  EXPECT_EQ(then_g.source, "test.onnx");
  EXPECT_EQ(node.attributes.get_graph("else_branch").nodes[0].op_type, "Neg");
}

TEST(LoadModel, SubgraphReadingAnUnknownValueNamesTheSubgraph) {
  onnx::ModelProto m = if_model();
  auto* then_g = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_input(0, "nowhere");
  std::string msg = error_of([&] { load(m); });
  EXPECT_NE(msg.find("If 'branch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads 'nowhere'"), std::string::npos) << msg;
}

TEST(LoadModel, GraphsListAttributesAreLoaded) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  auto* a = add_node(g, "Custom", {"x"}, {"y"})->add_attribute();
  a->set_name("bodies");
  a->set_type(onnx::AttributeProto::GRAPHS);
  for (int i = 0; i < 2; ++i) {
    auto* body = a->add_graphs();
    add_input(*body, "in");
    add_output(*body, "out");
    add_node(*body, "Relu", {"in"}, {"out"});
  }
  Graph graph = load(m);
  const Attribute* bodies = graph.nodes[0].attributes.find("bodies");
  ASSERT_EQ(bodies->graphs.size(), 2u);
  EXPECT_EQ(bodies->graphs[1]->inputs[0].name, "in");
}

TEST(LoadModel, NewerIrFilesWithUnknownFieldsLoad) {
  onnx::ModelProto m = new_model(11, 21);
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  add_node(g, "Relu", {"x"}, {"y"});
  // Fields the 1.12 schema does not know: node metadata_props (9), model field 30.
  g.mutable_node(0)->mutable_unknown_fields()->append(wire_bytes_field(9, "\x0a\x01k\x12\x01v"));
  const std::string bytes = m.SerializeAsString() + wire_bytes_field(30, "future");
  Graph graph = load_model_from_bytes(bytes, "new.onnx", "");
  EXPECT_EQ(graph.nodes[0].op_type, "Relu");
  EXPECT_EQ(graph.opset(), 21);
}

TEST(LoadModel, ModelsLoadFromFilesWithTheFileAsSource) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  add_node(g, "Relu", {"x"}, {"y"});
  write_file(dir / "m.onnx", m.SerializeAsString());
  EXPECT_EQ(load_model(dir / "m.onnx").source, dir / "m.onnx");
}

}  // namespace
}  // namespace ember::test
