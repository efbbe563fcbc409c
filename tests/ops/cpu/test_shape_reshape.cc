// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: output shapes for every
// opset form, the bytes unchanged, the alias flag, and the error cases.
#include "ops/registry.h"
#include "test_movement_util.h"

namespace ember::test {
namespace {

// Checks the op keeps the bytes of x and gives `shape`.
void expect_reinterpreted(const std::vector<Tensor>& out, const Tensor& x, const Shape& shape) {
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(shape_to_string(out[0].shape()), shape_to_string(shape));
  Tensor expected = x.clone();
  expected.set_shape(shape);
  expect_same(out[0], expected);
}

bool registered_as_alias(const std::string& op, int64_t opset) {
  for (const KernelEntry* e : find_kernels("", op, opset, DeviceKind::Cpu))
    if (e->flags.output_aliases_input0) return true;
  return false;
}

TEST(ShapeReshape, AllAliasOpsAreRegisteredAsAliases) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
    EXPECT_TRUE(registered_as_alias(op, 13)) << op;
}

TEST(ShapeReshape, ReshapeInputFormWithZeroAndMinusOneForEveryDtype) {
  std::mt19937 rng(1);
  for (DType dt : movement_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 3, 5}, rng);
    const Tensor shape = ints({0, -1});
    expect_reinterpreted(run(make_node("Reshape", 2), 13, {&x, &shape}), x, {2, 15});
  }
}

TEST(ShapeReshape, ReshapeAttributeFormBeforeOpset5) {
  std::mt19937 rng(2);
  const Tensor x = random_tensor(DType::Float32, {4, 3}, rng);
  Node n = make_node("Reshape", 1);
  n.attributes.set_ints("shape", {2, 0, -1});  // 0 copies input dim 1
  expect_reinterpreted(run(n, 4, {&x}), x, {2, 3, 2});
}

TEST(ShapeReshape, AllowZeroKeepsZeroAsZeroFromOpset14) {
  const Tensor x(DType::Float32, {0, 4});
  const Tensor shape = ints({4, 0});
  Node n = make_node("Reshape", 2);
  n.attributes.set_int("allowzero", 1);
  EXPECT_EQ(shape_to_string(run(n, 14, {&x, &shape})[0].shape()), "[4, 0]");
  // Without allowzero, 0 copies the input dim: [0, 4] -> [4, 4] does not fit.
  expect_error(n, "cannot reshape", [&] { run(make_node("Reshape", 2), 14, {&x, &shape}); });
}

TEST(ShapeReshape, ReshapeToIncompatibleSizeNamesTheNode) {
  const Tensor x(DType::Float32, {2, 3});
  const Tensor shape = ints({4, 2});
  const Node n = make_node("Reshape", 2);
  expect_error(n, "cannot reshape", [&] { run(n, 13, {&x, &shape}); });
  const Tensor two_unknowns = ints({-1, -1});
  expect_error(n, "more than one -1", [&] { run(n, 13, {&x, &two_unknowns}); });
}

TEST(ShapeReshape, FlattenAllAxesIncludingNegativeAndRank) {
  std::mt19937 rng(3);
  const Tensor x = random_tensor(DType::Int64, {2, 3, 5}, rng);
  const std::vector<std::pair<int64_t, Shape>> cases{
      {0, {1, 30}}, {1, {2, 15}}, {2, {6, 5}}, {3, {30, 1}}, {-1, {6, 5}}, {-3, {1, 30}}};
  for (const auto& [axis, shape] : cases) {
    Node n = make_node("Flatten", 1);
    n.attributes.set_int("axis", axis);
    expect_reinterpreted(run(n, 13, {&x}), x, shape);
  }
  Node bad = make_node("Flatten", 1);
  bad.attributes.set_int("axis", 4);
  expect_error(bad, "out of range", [&] { run(bad, 13, {&x}); });
}

TEST(ShapeReshape, SqueezeAttributeAndInputForms) {
  std::mt19937 rng(4);
  const Tensor x = random_tensor(DType::Bool, {1, 3, 1, 5, 1}, rng);
  Node attr = make_node("Squeeze", 1);
  attr.attributes.set_ints("axes", {0, -1});
  expect_reinterpreted(run(attr, 11, {&x}), x, {3, 1, 5});
  const Tensor axes = ints({-3});
  expect_reinterpreted(run(make_node("Squeeze", 2), 13, {&x, &axes}), x, {1, 3, 5, 1});
  // No axes: every 1 goes.
  expect_reinterpreted(run(make_node("Squeeze", 1), 13, {&x}), x, {3, 5});
  const Tensor not_one = ints({1});
  const Node n = make_node("Squeeze", 2);
  expect_error(n, "not 1", [&] { run(n, 13, {&x, &not_one}); });
}

TEST(ShapeReshape, UnsqueezeAttributeAndInputFormsWithNegativeAxes) {
  std::mt19937 rng(5);
  const Tensor x = random_tensor(DType::Float16, {3, 5}, rng);
  Node attr = make_node("Unsqueeze", 1);
  attr.attributes.set_ints("axes", {0, 3});
  expect_reinterpreted(run(attr, 1, {&x}), x, {1, 3, 5, 1});
  const Tensor axes = ints({-1, 1});
  expect_reinterpreted(run(make_node("Unsqueeze", 2), 13, {&x, &axes}), x, {3, 1, 5, 1});
  const Tensor scalar_axes = ints({0}, {});
  const Tensor s = random_tensor(DType::Float32, {}, rng);
  expect_reinterpreted(run(make_node("Unsqueeze", 2), 21, {&s, &scalar_axes}), s, {1});
  const Tensor dup = ints({1, 1});
  const Node n = make_node("Unsqueeze", 2);
  expect_error(n, "more than once", [&] { run(n, 13, {&x, &dup}); });
}

TEST(ShapeReshape, IdentityAndEmptyTensors) {
  std::mt19937 rng(6);
  const Tensor x = random_tensor(DType::Int64, {4, 0, 3}, rng);
  expect_reinterpreted(run(make_node("Identity", 1), 19, {&x}), x, {4, 0, 3});
  const Tensor y = random_tensor(DType::Float32, {7}, rng);
  expect_reinterpreted(run(make_node("Identity", 1), 1, {&y}), y, {7});
}

TEST(ShapeReshape, AliasKernelsCopyWhenRunDirectly) {
  std::mt19937 rng(7);
  const Tensor x = random_tensor(DType::Float32, {3, 4}, rng);
  const Node n = make_node("Flatten", 1);
  const std::vector<TensorType> types{{x.dtype(), x.shape()}};
  KernelInit init{n, 13, Device{}, types, {&x}, infer_node(n, 13, types, {&x})};
  std::string why;
  auto kernel = find_kernels("", "Flatten", 13, DeviceKind::Cpu)[0]->factory(init, &why);
  ASSERT_TRUE(kernel);
  Tensor out(DType::Float32, {3, 4});
  const Tensor* ins[] = {&x};
  Tensor* outs[] = {&out};
  kernel->run(RunArgs{ins, outs});
  expect_same(out, x);
}

TEST(ShapeReshape, DropoutWithoutMaskIsIdentity) {
  std::mt19937 rng(8);
  const Tensor x = random_tensor(DType::Float32, {5, 3}, rng);
  Node n = make_node("Dropout", 1);
  n.attributes.set_float("ratio", 0.3f);
  expect_reinterpreted(run(n, 7, {&x}), x, {5, 3});
  const Tensor ratio = floats({0.5f}, {});
  Tensor no_training(DType::Bool, {});
  expect_reinterpreted(run(make_node("Dropout", 3), 13, {&x, &ratio, &no_training}), x, {5, 3});
}

TEST(ShapeReshape, DropoutMaskIsAllTrueBoolFromOpset10AndOnesBefore) {
  std::mt19937 rng(9);
  const Tensor x = random_tensor(DType::Float32, {2, 7}, rng);
  auto out = run(make_node("Dropout", 1, 2), 13, {&x});
  expect_same(out[0], x);
  ASSERT_EQ(out[1].dtype(), DType::Bool);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_EQ(out[1].data_as<uint8_t>()[i], 1);
  out = run(make_node("Dropout", 1, 2), 7, {&x});
  ASSERT_EQ(out[1].dtype(), DType::Float32);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_EQ(out[1].data_as<float>()[i], 1.0f);
}

TEST(ShapeReshape, DropoutInTrainingModeIsRefused) {
  const Tensor x(DType::Float32, {3});
  const Tensor ratio = floats({0.5f}, {});
  Tensor training(DType::Bool, {});
  training.data_as<uint8_t>()[0] = 1;
  const Node n = make_node("Dropout", 3);
  expect_error(n, "training_mode", [&] { run(n, 13, {&x, &ratio, &training}); });
}

}  // namespace
}  // namespace ember::test
