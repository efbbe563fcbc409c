// Model-local functions are inlined at load time.
#include "helpers.h"

#include <set>

namespace ember::test {
namespace {

// local.ScaleAdd(a, b; alpha) = a * alpha + b, alpha defaulting to 0.5 (attribute_proto,
// a field newer than the schema we compile, so it is written as raw wire bytes).
void add_scale_add(onnx::ModelProto& m) {
  auto* f = m.add_functions();
  f->set_name("ScaleAdd");
  f->set_domain("local");
  f->add_input("a");
  f->add_input("b");
  f->add_output("out");
  f->add_attribute("alpha");
  auto* c = f->add_node();
  c->set_op_type("Constant");
  c->add_output("k");
  auto* value = c->add_attribute();
  value->set_name("value_float");
  value->set_type(onnx::AttributeProto::FLOAT);
  value->set_ref_attr_name("alpha");
  auto* mul = f->add_node();
  mul->set_op_type("Mul");
  mul->add_input("a");
  mul->add_input("k");
  mul->add_output("t");
  auto* add = f->add_node();
  add->set_op_type("Add");
  add->add_input("t");
  add->add_input("b");
  add->add_output("out");
  auto* opset = f->add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::AttributeProto alpha;
  alpha.set_name("alpha");
  alpha.set_type(onnx::AttributeProto::FLOAT);
  alpha.set_f(0.5f);
  f->mutable_unknown_fields()->append(wire_bytes_field(11, alpha.SerializeAsString()));
}

onnx::NodeProto* call(onnx::GraphProto& g, const std::vector<std::string>& in,
                      const std::string& out, const std::string& name) {
  auto* n = add_node(g, "ScaleAdd", in, {out}, name);
  n->set_domain("local");
  return n;
}

onnx::ModelProto two_calls() {
  onnx::ModelProto m = new_model(10, 17);
  auto* local = m.add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  add_scale_add(m);
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_input(g, "y");
  add_output(g, "z");
  auto* first = call(g, {"x", "y"}, "u", "first");
  auto* alpha = first->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(3.f);
  call(g, {"u", "y"}, "z", "second");  // alpha left to the default
  return m;
}

float initializer_value(const Graph& g, const Node& mul) {
  return *g.initializers.at(mul.inputs[1]).data_as<float>();
}

TEST(Functions, CallsAreInlinedWithUniqueNamesAndResolvedAttributes) {
  Graph g = load(two_calls());
  ASSERT_EQ(g.nodes.size(), 4u);
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Mul", "Add", "Mul", "Add"}));
  const Node& mul1 = g.nodes[0];
  const Node& add1 = g.nodes[1];
  const Node& mul2 = g.nodes[2];
  const Node& add2 = g.nodes[3];
  EXPECT_EQ(mul1.inputs[0], "x");
  EXPECT_EQ(add1.inputs[0], mul1.outputs[0]);
  EXPECT_EQ(add1.inputs[1], "y");
  EXPECT_EQ(add1.outputs[0], "u");
  EXPECT_EQ(mul2.inputs[0], "u");
  EXPECT_EQ(add2.outputs[0], "z");
  EXPECT_NE(mul1.outputs[0], mul2.outputs[0]);  // each call has its own intermediates
  EXPECT_NE(mul1.inputs[1], mul2.inputs[1]);
  EXPECT_EQ(initializer_value(g, mul1), 3.f);   // from the call
  EXPECT_EQ(initializer_value(g, mul2), 0.5f);  // the function's default
  EXPECT_NE(mul1.name, mul2.name);
}

TEST(Functions, InlinedNamesDoNotCollideWithTheGraphs) {
  onnx::ModelProto m = two_calls();
  // The graph already uses the name the first call's intermediate would get.
  add_node(*m.mutable_graph(), "Neg", {"x"}, {"first/t"});
  add_output(*m.mutable_graph(), "first/t");
  Graph g = load(m);
  std::set<std::string> outputs;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) EXPECT_TRUE(outputs.insert(o).second) << o;
}

TEST(Functions, FunctionsCallingFunctionsAreInlinedToTheBottom) {
  onnx::ModelProto m = two_calls();
  auto* outer = m.add_functions();
  outer->set_name("Twice");
  outer->set_domain("local");
  outer->add_input("p");
  outer->add_output("q");
  for (auto [in, out] : {std::pair{"p", "mid"}, std::pair{"mid", "q"}}) {
    auto* n = outer->add_node();
    n->set_op_type("ScaleAdd");
    n->set_domain("local");
    n->add_input(in);
    n->add_input(in);
    n->add_output(out);
  }
  auto& g = *m.mutable_graph();
  add_output(g, "w");
  add_node(g, "Twice", {"z"}, {"w"}, "twice")->set_domain("local");
  Graph graph = load(m);
  EXPECT_EQ(graph.nodes.size(), 8u);
  for (const auto& n : graph.nodes) EXPECT_TRUE(n.op_type == "Mul" || n.op_type == "Add") << n.op_type;
}

TEST(Functions, RecursiveFunctionsAreAnError) {
  onnx::ModelProto m = new_model(10, 17);
  auto* f = m.add_functions();
  f->set_name("Loop");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  auto* self = f->add_node();
  self->set_op_type("Loop");
  self->set_domain("local");
  self->add_input("a");
  self->add_output("b");
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  add_node(g, "Loop", {"x"}, {"y"}, "forever")->set_domain("local");
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "test.onnx: Loop 'forever'")) << msg;
  EXPECT_TRUE(contains(msg, "function 'Loop' calls itself")) << msg;
}

TEST(Functions, ExponentialInliningIsRefusedBeforeItStarts) {
  // F0 calls F1 twice, F1 calls F2 twice, ...: 2^24 nodes once inlined.
  onnx::ModelProto m = new_model(10, 17);
  auto name = [](int level) {
    std::string n = "F";
    return n += std::to_string(level);
  };
  const int levels = 24;
  for (int level = 0; level <= levels; ++level) {
    auto* f = m.add_functions();
    f->set_name(name(level));
    f->set_domain("local");
    f->add_input("a");
    f->add_output("b");
    const std::string callee = level == levels ? "Relu" : name(level + 1);
    for (auto [in, out] : {std::pair{"a", "m"}, std::pair{"m", "b"}}) {
      auto* n = f->add_node();
      n->set_op_type(callee);
      n->set_domain(level == levels ? "" : "local");
      n->add_input(in);
      n->add_output(out);
    }
  }
  auto& g = *m.mutable_graph();
  add_input(g, "x");
  add_output(g, "y");
  add_node(g, "F0", {"x"}, {"y"}, "bomb")->set_domain("local");
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "F0 'bomb': inlining model-local functions makes more than")) << msg;

  m.mutable_graph()->mutable_node(0)->set_op_type("F16");  // 2^9 nodes: fine
  EXPECT_EQ(load(m).nodes.size(), 512u);
}

TEST(Functions, BodiesReadingValuesTheyDoNotOwnAreAnError) {
  onnx::ModelProto m = two_calls();
  m.mutable_functions(0)->mutable_node(1)->set_input(0, std::string("x"));  // the graph's x
  std::string msg = error_of([&] { load(m); });
  EXPECT_TRUE(contains(msg, "reads 'x', which is neither its input")) << msg;
}

}  // namespace
}  // namespace ember::test
