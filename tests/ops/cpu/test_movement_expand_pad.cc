// Expand, Tile and Pad against index arithmetic with plain loops: broadcasting both
// ways, zero repeats, every pad mode and opset form, negative pads, empty tensors.
#include "test_movement_util.h"

#include <algorithm>

namespace ember::test {
namespace {

TEST(MovementExpand, BroadcastsBothWaysForEveryDtype) {
  std::mt19937 rng(51);
  for (DType dt : movement_dtypes()) {
    const Tensor x = random_tensor(dt, {3, 1, 5}, rng);
    const Tensor shape = ints({2, 1, 4, 1});
    const Shape out{2, 3, 4, 5};
    const Tensor expected = expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
      return ravel({o[1], 0, o[3]}, x.shape());
    });
    expect_same(run(make_node("Expand", 2), 13, {&x, &shape})[0], expected);
  }
}

TEST(MovementExpand, ScalarToShapeAndEmptyAndClash) {
  std::mt19937 rng(52);
  const Tensor s = random_tensor(DType::Int64, {}, rng);
  const Tensor shape = ints({3, 2});
  expect_same(run(make_node("Expand", 2), 8, {&s, &shape})[0],
              expected_by_index(s, {3, 2}, [](const std::vector<int64_t>&) { return 0; }));
  const Tensor e = random_tensor(DType::Float32, {0, 1}, rng);
  const Tensor to = ints({0, 4});
  EXPECT_EQ(shape_to_string(run(make_node("Expand", 2), 13, {&e, &to})[0].shape()), "[0, 4]");
  const Tensor x(DType::Float32, {3, 2});
  const Tensor bad = ints({4, 2});
  const Node n = make_node("Expand", 2);
  expect_error(n, "broadcast", [&] { run(n, 13, {&x, &bad}); });
  // Found by fuzzing a Session: -2 against a 1 is no broadcast (it was an output dim).
  const Tensor one(DType::Float32, {1, 3});
  const Tensor negative = ints({-2, 3});
  expect_error(n, "negative dimension", [&] { run(n, 13, {&one, &negative}); });
}

TEST(MovementTile, RepeatsIncludingOneAndZero) {
  std::mt19937 rng(53);
  for (DType dt : movement_dtypes()) {
    const Tensor x = random_tensor(dt, {2, 3, 5}, rng);
    const Tensor repeats = ints({3, 1, 2});
    const Tensor expected = expected_by_index(x, {6, 3, 10}, [&](const std::vector<int64_t>& o) {
      return ravel({o[0] % 2, o[1], o[2] % 5}, x.shape());
    });
    expect_same(run(make_node("Tile", 2), 13, {&x, &repeats})[0], expected);
  }
  const Tensor x(DType::Float32, {2, 3});
  const Tensor zero = ints({0, 2});
  EXPECT_EQ(shape_to_string(run(make_node("Tile", 2), 6, {&x, &zero})[0].shape()), "[0, 6]");
  const Tensor wrong_length = ints({2});
  const Node n = make_node("Tile", 2);
  expect_error(n, "repeats", [&] { run(n, 13, {&x, &wrong_length}); });
}

// numpy.pad semantics per dim for index j relative to the kept input of length m.
int64_t pad_source(int64_t j, int64_t m, const std::string& mode) {
  if (j >= 0 && j < m) return j;
  if (mode == "constant") return -1;
  if (mode == "edge") return j < 0 ? 0 : m - 1;
  if (mode == "wrap") {
    while (j < 0) j += m;
    return j % m;
  }
  // reflect: bounce off the ends, not repeating the edge (one element just repeats)
  if (m == 1) return 0;
  while (j < 0 || j >= m) j = j < 0 ? -j : 2 * (m - 1) - j;
  return j;
}

Tensor pad_reference(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::string& mode, const void* fill) {
  const int64_t rank = x.rank();
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) out[d] = x.shape()[d] + begin[d] + end[d];
  return expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in(rank);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t lo = std::max<int64_t>(0, -begin[d]);
      const int64_t kept = x.shape()[d] - lo - std::max<int64_t>(0, -end[d]);
      const int64_t j = pad_source(o[d] - std::max<int64_t>(0, begin[d]), kept, mode);
      if (j < 0) return int64_t{-1};
      in[d] = lo + j;
    }
    return ravel(in, x.shape());
  }, fill);
}

TEST(MovementPad, EveryModeFromOpset19WithPadsAsInput) {
  std::mt19937 rng(54);
  for (DType dt : movement_dtypes()) {
    for (const std::string mode : {"constant", "reflect", "edge", "wrap"}) {
      const Tensor x = random_tensor(dt, {3, 4, 5}, rng);
      const std::vector<int64_t> begin{1, 0, 3}, end{2, -1, 4};
      std::vector<int64_t> pads = begin;
      pads.insert(pads.end(), end.begin(), end.end());
      const Tensor p = ints(pads);
      const Tensor value = random_tensor(dt, {}, rng);
      Node n = make_node("Pad", 3);
      n.attributes.set_string("mode", mode);
      expect_same(run(n, 19, {&x, &p, &value})[0], pad_reference(x, begin, end, mode, value.data()));
    }
  }
}

TEST(MovementPad, ConstantDefaultsToZeroAndAxesFromOpset18) {
  std::mt19937 rng(55);
  const Tensor x = random_tensor(DType::Float32, {2, 3, 4}, rng);
  const Tensor pads = ints({2, 1, 0, 3});  // axes (-1, 0): begin 2, 1; end 0, 3
  const Tensor axes = ints({-1, 0});
  const float zero = 0;
  const Node n = make_node("Pad", 4, 1, {true, true, false, true});
  expect_same(run(n, 18, {&x, &pads, nullptr, &axes})[0], pad_reference(x, {1, 0, 2}, {3, 0, 0}, "constant", &zero));
}

TEST(MovementPad, AttributeFormsBeforeOpset11) {
  std::mt19937 rng(56);
  const Tensor x = random_tensor(DType::Float32, {3, 4}, rng);
  const float value = 1.5f;
  Node v2 = make_node("Pad", 1);
  v2.attributes.set_ints("pads", {1, 2, 0, 1});
  v2.attributes.set_float("value", value);
  expect_same(run(v2, 2, {&x})[0], pad_reference(x, {1, 2}, {0, 1}, "constant", &value));
  Node v1 = make_node("Pad", 1);
  v1.attributes.set_ints("paddings", {0, 3, 2, 0});
  v1.attributes.set_string("mode", "reflect");
  expect_same(run(v1, 1, {&x})[0], pad_reference(x, {0, 3}, {2, 0}, "reflect", nullptr));
  // float16 data gets the float value converted: 1.5 is 0x3e00.
  const Tensor h = random_tensor(DType::Float16, {2}, rng);
  const uint16_t h_value = 0x3e00;
  Node hv = make_node("Pad", 1);
  hv.attributes.set_ints("pads", {1, 1});
  hv.attributes.set_float("value", 1.5f);
  expect_same(run(hv, 2, {&h})[0], pad_reference(h, {1}, {1}, "constant", &h_value));
}

TEST(MovementPad, ReflectWiderThanTheInputAndLengthOne) {
  std::mt19937 rng(57);
  const Tensor x = random_tensor(DType::Int64, {3, 1}, rng);
  const Tensor pads = ints({5, 2, 4, 3});
  Node n = make_node("Pad", 2);
  n.attributes.set_string("mode", "reflect");
  expect_same(run(n, 13, {&x, &pads})[0], pad_reference(x, {5, 2}, {4, 3}, "reflect", nullptr));
}

TEST(MovementPad, EmptyInputAndErrors) {
  const Tensor x(DType::Float32, {0, 2});
  const Tensor pads = ints({1, 0, 1, 0});
  const float zero = 0;
  expect_same(run(make_node("Pad", 2), 13, {&x, &pads})[0], pad_reference(x, {1, 0}, {1, 0}, "constant", &zero));
  Node edge = make_node("Pad", 2);
  edge.attributes.set_string("mode", "edge");
  expect_error(edge, "empty", [&] { run(edge, 13, {&x, &pads}); });
  Node wrap = make_node("Pad", 2);
  wrap.attributes.set_string("mode", "wrap");
  const Tensor y(DType::Float32, {2, 2});
  expect_error(wrap, "mode", [&] { run(wrap, 18, {&y, &pads}); });
  const Tensor too_few = ints({1, 1});
  expect_error(make_node("Pad", 2), "pads must have 4", [&] { run(make_node("Pad", 2), 13, {&y, &too_few}); });
}

}  // namespace
}  // namespace ember::test
