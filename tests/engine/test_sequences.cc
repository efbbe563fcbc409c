// Sequences and optionals through the Session API: ops that make and read them inside
// a model (run() sees only tensors), and models whose inputs or outputs are sequences
// or optionals (run_values). Checked against plain computations of the same results on
// random inputs; bad inputs are one clear error.
#include "engine/session_models.h"

#include <gtest/gtest.h>

namespace ember::test {
namespace {

void add_typed(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
               const std::vector<std::string>& wrappers, int elem_type = onnx::TensorProto::FLOAT) {
  auto* v = list->Add();
  v->set_name(name);
  onnx::TypeProto* t = v->mutable_type();
  for (const std::string& w : wrappers)
    t = w == "seq" ? t->mutable_sequence_type()->mutable_elem_type() : t->mutable_optional_type()->mutable_elem_type();
  t->mutable_tensor_type()->set_elem_type(elem_type);
}

const float* floats(const Tensor& t) { return t.data_as<float>(); }

// x [3, 4] split into its rows; y inserted at position 1; the last row erased; the rest
// concatenated along axis 0, and the sequence's length.
std::string split_insert_erase_concat_model() {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  add_input(g, "x", {"3", "4"});
  add_input(g, "y", {"1", "4"});
  *g.add_initializer() = [] {
    onnx::TensorProto t;
    t.set_name("one");
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(1);
    return t;
  }();
  auto* split = add_node(g, "SplitToSequence", {"x"}, {"rows"}, "split");
  set_int_attribute(split, "axis", 0);
  add_node(g, "SequenceInsert", {"rows", "y", "one"}, {"inserted"}, "insert");
  add_node(g, "SequenceErase", {"inserted"}, {"erased"}, "erase");
  set_int_attribute(add_node(g, "ConcatFromSequence", {"erased"}, {"out"}, "concat"), "axis", 0);
  add_node(g, "SequenceLength", {"erased"}, {"length"}, "length");
  add_output(g, "out", {"?", "4"});
  add_unshaped(g.mutable_output(), "length", onnx::TensorProto::INT64);
  return m.SerializeAsString();
}

TEST(Sequences, SplitInsertEraseConcatMatchPlainRowCopies) {
  const std::string bytes = split_insert_erase_concat_model();
  Session session = Session::from_bytes(as_bytes(bytes));
  const Tensor x = random_float_tensor({3, 4}, 1), y = random_float_tensor({1, 4}, 2);
  std::vector<Tensor> out = session.run({{"x", x}, {"y", y}});
  ASSERT_EQ(out[0].shape(), (Shape{3, 4}));
  // rows: x0, y, x1 (x2 erased)
  const float* want[3] = {floats(x), floats(y), floats(x) + 4};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(floats(out[0])[r * 4 + c], want[r][c]) << r << "," << c;
  EXPECT_EQ(*out[1].data_as<int64_t>(), 3);
}

// A sequence in, the sequence with x appended at the front out, and its element 1.
std::string sequence_io_model() {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  add_typed(g.mutable_input(), "seq", {"seq"});
  add_input(g, "x", {"2"});
  *g.add_initializer() = [] {
    onnx::TensorProto t;
    t.set_name("front");
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(0);
    return t;
  }();
  add_node(g, "SequenceInsert", {"seq", "x", "front"}, {"longer"}, "insert");
  *g.add_initializer() = [] {
    onnx::TensorProto t;
    t.set_name("at1");
    t.set_data_type(onnx::TensorProto::INT32);
    t.add_int32_data(-1);
    return t;
  }();
  add_node(g, "SequenceAt", {"longer", "at1"}, {"last"}, "at");
  add_typed(g.mutable_output(), "longer", {"seq"});
  add_output(g, "last", {"?"});
  return m.SerializeAsString();
}

TEST(Sequences, SequenceInputsAndOutputsRunThroughRunValues) {
  const std::string bytes = sequence_io_model();
  Session session = Session::from_bytes(as_bytes(bytes));
  EXPECT_EQ(session.inputs()[0].type, "seq(tensor(float32))");
  EXPECT_EQ(session.outputs()[1].type, "tensor(float32)");
  const Tensor a = random_float_tensor({3}, 3), b = random_float_tensor({5}, 4), x = random_float_tensor({2}, 5);
  const Value seq = Value::sequence({a, b}, DType::Float32);
  std::vector<Value> out = session.run_values({{"seq", seq}, {"x", x}});
  ASSERT_TRUE(out[0].is_sequence());
  ASSERT_EQ(out[0].elements().size(), 3u);
  EXPECT_TRUE(same_bits(out[0].elements()[0].tensor(), x));
  EXPECT_TRUE(same_bits(out[0].elements()[2].tensor(), b));
  EXPECT_TRUE(same_bits(out[1].tensor(), b));

  // The same session again, with an empty sequence: x alone, and x is the last element.
  out = session.run_values({{"seq", Value::sequence({}, DType::Float32)}, {"x", x}});
  ASSERT_EQ(out[0].elements().size(), 1u);
  EXPECT_TRUE(same_bits(out[1].tensor(), x));
}

TEST(Sequences, WrongKindsOfValuesAreClearErrors) {
  const std::string bytes = sequence_io_model();
  Session session = Session::from_bytes(as_bytes(bytes));
  const Tensor x = random_float_tensor({2}, 5);
  EXPECT_TRUE(contains(error_of([&] { session.run({{"seq", x}, {"x", x}}); }), "run_values"));
  EXPECT_TRUE(contains(error_of([&] { session.run_values({{"seq", x}, {"x", x}}); }),
                       "input 'seq' must be a seq(tensor(float32)), got tensor"));
  Tensor ints(DType::Int64, {2});
  EXPECT_TRUE(contains(error_of([&] { session.run_values({{"seq", Value::sequence({ints}, DType::Int64)}, {"x", x}}); }),
                       "input 'seq' must be a seq(tensor(float32))"));
  EXPECT_TRUE(contains(error_of([&] { session.run_values({{"seq", Value::sequence({x}, DType::Float32)}, {"x", Value()}}); }),
                       "input 'x' must be a tensor"));
}

TEST(Sequences, APositionOutsideTheSequenceNamesTheNode) {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  add_input(g, "x", {"2", "3"});
  add_unshaped(g.mutable_input(), "i", onnx::TensorProto::INT64);
  add_node(g, "SplitToSequence", {"x"}, {"rows"}, "split");
  add_node(g, "SequenceAt", {"rows", "i"}, {"row"}, "pick");
  add_output(g, "row", {"3"});
  const std::string bytes = m.SerializeAsString();
  Session session = Session::from_bytes(as_bytes(bytes));
  const Tensor x = random_float_tensor({2, 3}, 6);
  const std::vector<Tensor> row = session.run({{"x", x}, {"i", int64_scalar(-1)}});
  EXPECT_EQ(floats(row[0])[0], floats(x)[3]);
  const std::string e = error_of([&] { session.run({{"x", x}, {"i", int64_scalar(2)}}); });
  EXPECT_TRUE(contains(e, "SequenceAt 'pick'")) << e;
  EXPECT_TRUE(contains(e, "position 2 is outside [-2, 1]")) << e;
}

// An optional input: present, it passes through OptionalGetElement; empty, the model
// says so through OptionalHasElement.
TEST(Sequences, OptionalInputsPresentAndEmpty) {
  onnx::ModelProto m = new_model(8, 18);
  auto& g = *m.mutable_graph();
  add_typed(g.mutable_input(), "maybe", {"optional"});
  add_node(g, "OptionalHasElement", {"maybe"}, {"has"}, "has");
  add_node(g, "Optional", {"maybe"}, {"again"}, "wrap");
  add_unshaped(g.mutable_output(), "has", onnx::TensorProto::BOOL);
  add_typed(g.mutable_output(), "again", {"optional"});
  const std::string bytes = m.SerializeAsString();
  Session session = Session::from_bytes(as_bytes(bytes));
  const Tensor x = random_float_tensor({4}, 7);
  std::vector<Value> out = session.run_values({{"maybe", x}});
  EXPECT_EQ(*out[0].tensor().data_as<uint8_t>(), 1);
  EXPECT_TRUE(same_bits(out[1].tensor(), x));
  out = session.run_values({{"maybe", Value()}});
  EXPECT_EQ(*out[0].tensor().data_as<uint8_t>(), 0);
  EXPECT_TRUE(out[1].is_none());
}

// SequenceMap: each element plus a tensor, through a body graph.
TEST(Sequences, SequenceMapRunsItsBodyOncePerElement) {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  add_input(g, "x", {"3", "2"});
  add_input(g, "bias", {"2"});
  set_int_attribute(add_node(g, "SplitToSequence", {"x"}, {"rows"}, "split"), "keepdims", 0);
  auto* map = add_node(g, "SequenceMap", {"rows", "bias"}, {"shifted"}, "map");
  auto* body_attr = map->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *body_attr->mutable_g();
  body.set_name("add_bias");
  add_input(body, "row", {"2"});
  add_input(body, "b", {"2"});
  add_node(body, "Add", {"row", "b"}, {"sum"});
  add_output(body, "sum", {"2"});
  auto* stack = add_node(g, "ConcatFromSequence", {"shifted"}, {"out"}, "stack");
  set_int_attribute(stack, "axis", 0);  // along a new axis 0
  set_int_attribute(stack, "new_axis", 1);
  add_output(g, "out", {"3", "2"});
  const std::string bytes = m.SerializeAsString();
  Session session = Session::from_bytes(as_bytes(bytes));
  const Tensor x = random_float_tensor({3, 2}, 8), bias = random_float_tensor({2}, 9);
  const std::vector<Tensor> out = session.run({{"x", x}, {"bias", bias}});
  ASSERT_EQ(out[0].shape(), (Shape{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(floats(out[0])[i], floats(x)[i] + floats(bias)[i % 2]);
}

TEST(Sequences, ListOpsNamesTheSequenceOps) {
  const std::vector<std::string> ops = list_operators("cpu");
  for (const char* op : {"SequenceAt", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "OptionalGetElement"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

}  // namespace
}  // namespace ember::test
