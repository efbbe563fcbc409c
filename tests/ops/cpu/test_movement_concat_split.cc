// Concat and Split against index arithmetic with plain loops: negative axes, empty
// pieces, every dtype, and every Split form (attribute, input, even, num_outputs).
#include "test_movement_util.h"

namespace ember::test {
namespace {

// The concatenation of xs along axis, element by element.
Tensor concat_reference(const std::vector<const Tensor*>& xs, int64_t axis) {
  Shape out = xs[0]->shape();
  out[axis] = 0;
  for (const Tensor* x : xs) out[axis] += x->shape()[axis];
  Tensor result(xs[0]->dtype(), out);
  const size_t elem = dtype_bits(result.dtype()) / 8;
  for (int64_t o = 0; o < result.numel(); ++o) {
    std::vector<int64_t> idx = unravel(o, out);
    size_t piece = 0;
    while (idx[axis] >= xs[piece]->shape()[axis]) idx[axis] -= xs[piece++]->shape()[axis];
    std::memcpy(static_cast<uint8_t*>(result.data()) + o * elem,
                static_cast<const uint8_t*>(xs[piece]->data()) + ravel(idx, xs[piece]->shape()) * elem, elem);
  }
  return result;
}

Tensor slice_reference(const Tensor& x, int64_t axis, int64_t begin, int64_t len) {
  Shape out = x.shape();
  out[axis] = len;
  return expected_by_index(x, out, [&](std::vector<int64_t> o) {
    o[axis] += begin;
    return ravel(o, x.shape());
  });
}

Node concat_node(size_t n, int64_t axis) {
  Node node = make_node("Concat", n);
  node.attributes.set_int("axis", axis);
  return node;
}

TEST(MovementConcat, EveryAxisNegativeToo_EveryDtype) {
  std::mt19937 rng(21);
  for (DType dt : movement_dtypes()) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      Shape s0{2, 3, 5}, s1{2, 3, 5}, s2{2, 3, 5};
      s0[a] = 1;
      s1[a] = 4;
      s2[a] = 2;
      const Tensor x0 = random_tensor(dt, s0, rng), x1 = random_tensor(dt, s1, rng), x2 = random_tensor(dt, s2, rng);
      expect_same(run(concat_node(3, axis), 13, {&x0, &x1, &x2})[0], concat_reference({&x0, &x1, &x2}, a));
    }
  }
}

TEST(MovementConcat, EmptyPiecesAndSingleInput) {
  std::mt19937 rng(22);
  const Tensor x0 = random_tensor(DType::Int64, {3, 0}, rng), x1 = random_tensor(DType::Int64, {3, 4}, rng);
  expect_same(run(concat_node(2, 1), 11, {&x0, &x1})[0], concat_reference({&x0, &x1}, 1));
  expect_same(run(concat_node(1, 0), 4, {&x1})[0], x1);
  // Shape arithmetic: 1-D int64 pieces.
  const Tensor a = ints({1, 2}), b = ints({-1});
  expect_same(run(concat_node(2, 0), 13, {&a, &b})[0], ints({1, 2, -1}));
}

TEST(MovementConcat, MismatchedDimsNameTheNode) {
  const Tensor x0(DType::Float32, {2, 3}), x1(DType::Float32, {3, 3});
  const Node n = concat_node(2, 1);
  expect_error(n, "does not match", [&] { run(n, 13, {&x0, &x1}); });
  const Tensor x2(DType::Int64, {2, 3});
  expect_error(n, "dtype", [&] { run(n, 13, {&x0, &x2}); });
  const Node bad_axis = concat_node(2, 2);
  expect_error(bad_axis, "out of range", [&] { run(bad_axis, 13, {&x0, &x0}); });
}

TEST(MovementSplit, SplitAsInputFromOpset13WithNegativeAxis) {
  std::mt19937 rng(23);
  for (DType dt : movement_dtypes()) {
    const Tensor x = random_tensor(dt, {3, 7, 2}, rng);
    const Tensor split = ints({2, 0, 5});
    Node n = make_node("Split", 2, 3);
    n.attributes.set_int("axis", -2);
    const auto out = run(n, 13, {&x, &split});
    ASSERT_EQ(out.size(), 3u);
    expect_same(out[0], slice_reference(x, 1, 0, 2));
    expect_same(out[1], slice_reference(x, 1, 2, 0));
    expect_same(out[2], slice_reference(x, 1, 2, 5));
  }
}

TEST(MovementSplit, SplitAsAttributeBeforeOpset13) {
  std::mt19937 rng(24);
  const Tensor x = random_tensor(DType::Float32, {5, 4}, rng);
  Node n = make_node("Split", 1, 2);
  n.attributes.set_ints("split", {1, 4});
  for (int64_t opset : {2, 11}) {
    const auto out = run(n, opset, {&x});
    expect_same(out[0], slice_reference(x, 0, 0, 1));
    expect_same(out[1], slice_reference(x, 0, 1, 4));
  }
}

TEST(MovementSplit, EvenSplitWithoutSizes) {
  std::mt19937 rng(25);
  const Tensor x = random_tensor(DType::Int64, {2, 9}, rng);
  Node n = make_node("Split", 1, 3);
  n.attributes.set_int("axis", 1);
  const auto out = run(n, 13, {&x});
  for (int64_t i = 0; i < 3; ++i) expect_same(out[i], slice_reference(x, 1, 3 * i, 3));
  const Tensor y(DType::Int64, {2, 8});
  expect_error(n, "evenly", [&] { run(n, 13, {&y}); });
}

TEST(MovementSplit, NumOutputsFromOpset18MakesTheLastChunkSmaller) {
  std::mt19937 rng(26);
  const Tensor x = random_tensor(DType::Bool, {11, 2}, rng);
  Node n = make_node("Split", 1, 3);
  n.attributes.set_int("num_outputs", 3);
  const auto out = run(n, 18, {&x});
  expect_same(out[0], slice_reference(x, 0, 0, 4));
  expect_same(out[1], slice_reference(x, 0, 4, 4));
  expect_same(out[2], slice_reference(x, 0, 8, 3));
}

TEST(MovementSplit, SizesThatDoNotAddUpNameTheNode) {
  const Tensor x(DType::Float32, {6});
  const Tensor split = ints({2, 3});
  const Node n = make_node("Split", 2, 2);
  expect_error(n, "sum to 6", [&] { run(n, 13, {&x, &split}); });
}

}  // namespace
}  // namespace ember::test
