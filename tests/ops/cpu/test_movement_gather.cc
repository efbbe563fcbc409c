// Gather, GatherElements, GatherND, ScatterND, ScatterElements against plain loops,
// with negative indices, int32 and int64 indices, every dtype, and out-of-range errors.
#include "test_movement_util.h"

namespace ember::test {
namespace {

Tensor random_indices(DType dt, const Shape& shape, int64_t n, std::mt19937& rng) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = static_cast<int64_t>(rng() % (2 * n)) - n;  // [-n, n)
    if (dt == DType::Int64) t.data_as<int64_t>()[i] = v;
    else t.data_as<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return t;
}

int64_t index_at(const Tensor& t, int64_t i, int64_t n) {
  const int64_t v = t.dtype() == DType::Int64 ? t.data_as<int64_t>()[i] : t.data_as<int32_t>()[i];
  return v < 0 ? v + n : v;
}

Node with_axis(const std::string& op, size_t inputs, int64_t axis) {
  Node n = make_node(op, inputs);
  n.attributes.set_int("axis", axis);
  return n;
}

TEST(MovementGather, EveryAxisWithNegativeIndicesEveryDtype) {
  std::mt19937 rng(41);
  const Shape data_shape{3, 4, 5};
  for (DType dt : movement_dtypes()) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const Tensor x = random_tensor(dt, data_shape, rng);
      const Tensor idx = random_indices(axis % 2 ? DType::Int32 : DType::Int64, {2, 3}, data_shape[a], rng);
      Shape out(data_shape.begin(), data_shape.begin() + a);
      out.insert(out.end(), {2, 3});
      out.insert(out.end(), data_shape.begin() + a + 1, data_shape.end());
      const Tensor expected = expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
        std::vector<int64_t> in(o.begin(), o.begin() + a);
        in.push_back(index_at(idx, o[a] * 3 + o[a + 1], data_shape[a]));
        in.insert(in.end(), o.begin() + a + 2, o.end());
        return ravel(in, data_shape);
      });
      expect_same(run(with_axis("Gather", 2, axis), 13, {&x, &idx})[0], expected);
    }
  }
}

TEST(MovementGather, EmbeddingRowsAndScalarIndexAndShapeArithmetic) {
  std::mt19937 rng(42);
  const Tensor table = random_tensor(DType::Float32, {50, 16}, rng);
  const Tensor ids = random_indices(DType::Int64, {2, 7}, 50, rng);
  const Tensor expected = expected_by_index(table, {2, 7, 16}, [&](const std::vector<int64_t>& o) {
    return index_at(ids, o[0] * 7 + o[1], 50) * 16 + o[2];
  });
  expect_same(run(make_node("Gather", 2), 13, {&table, &ids})[0], expected);
  // Shape -> Gather(scalar index) as in shape arithmetic gives a scalar.
  const Tensor shape = ints({2, 9, 768}), one = ints({-2}, {});
  expect_same(run(make_node("Gather", 2), 13, {&shape, &one})[0], ints({9}, {}));
  const Tensor none = ints({});
  EXPECT_EQ(run(make_node("Gather", 2), 1, {&table, &none})[0].numel(), 0);
}

TEST(MovementGather, OutOfRangeIndexIsAnErrorNamingTheNode) {
  const Tensor x(DType::Float32, {4, 3});
  const Node n = make_node("Gather", 2);
  for (int64_t bad : {4, -5, 1000}) {
    const Tensor idx = ints({0, bad});
    expect_error(n, "out of range", [&] { run(n, 13, {&x, &idx}); });
  }
}

TEST(MovementGatherElements, EveryAxisAgainstLoops) {
  std::mt19937 rng(43);
  const Shape data_shape{3, 4, 5};
  for (DType dt : movement_dtypes()) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const Tensor x = random_tensor(dt, data_shape, rng);
      const Shape idx_shape{2, 3, 4};
      const Tensor idx = random_indices(DType::Int64, idx_shape, data_shape[a], rng);
      const Tensor expected = expected_by_index(x, idx_shape, [&](std::vector<int64_t> o) {
        o[a] = index_at(idx, ravel(o, idx_shape), data_shape[a]);
        return ravel(o, data_shape);
      });
      expect_same(run(with_axis("GatherElements", 2, axis), 13, {&x, &idx})[0], expected);
    }
  }
  const Tensor x(DType::Float32, {2, 2});
  const Tensor bad = ints({0, 2, 1, 0}, {2, 2});
  const Node n = make_node("GatherElements", 2);
  expect_error(n, "out of range", [&] { run(n, 13, {&x, &bad}); });
}

TEST(MovementGatherND, WithAndWithoutBatchDims) {
  std::mt19937 rng(44);
  const Shape data_shape{2, 3, 4, 5};
  for (int64_t b : {0, 1}) {
    for (int64_t k = 1; b + k <= 4; ++k) {
      const Tensor x = random_tensor(DType::Float32, data_shape, rng);
      Shape idx_shape = b ? Shape{2, 3, k} : Shape{3, k};
      Tensor idx(DType::Int64, idx_shape);
      for (int64_t i = 0; i < idx.numel(); ++i) {
        const int64_t n = data_shape[b + i % k];
        idx.data_as<int64_t>()[i] = static_cast<int64_t>(rng() % (2 * n)) - n;
      }
      Shape out(idx_shape.begin(), idx_shape.end() - 1);
      out.insert(out.end(), data_shape.begin() + b + k, data_shape.end());
      const Tensor expected = expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
        // o = [batch..., tuple..., rest...]
        const int64_t tuple_rank = static_cast<int64_t>(idx_shape.size()) - 1;
        std::vector<int64_t> tuple_pos(o.begin(), o.begin() + tuple_rank);
        tuple_pos.push_back(0);
        const int64_t base = ravel(tuple_pos, idx_shape);
        std::vector<int64_t> in(o.begin(), o.begin() + b);
        for (int64_t j = 0; j < k; ++j) in.push_back(index_at(idx, base + j, data_shape[b + j]));
        in.insert(in.end(), o.begin() + tuple_rank, o.end());
        return ravel(in, data_shape);
      });
      Node n = make_node("GatherND", 2);
      n.attributes.set_int("batch_dims", b);
      expect_same(run(n, 13, {&x, &idx})[0], expected);
    }
  }
  const Tensor x(DType::Float32, {2, 2});
  const Tensor bad = ints({1, 2}, {1, 2});
  const Node n = make_node("GatherND", 2);
  expect_error(n, "out of range", [&] { run(n, 13, {&x, &bad}); });
}

TEST(MovementScatterND, NoneAndAddAndMaxAgainstLoops) {
  std::mt19937 rng(45);
  const Shape data_shape{4, 3, 2};
  const Tensor x = random_tensor(DType::Float32, data_shape, rng);
  const Tensor idx = ints({1, 0, -1, 2, 1, 0}, {3, 2});  // duplicates (1,0) for reductions
  const Tensor updates = random_tensor(DType::Float32, {3, 2}, rng);
  for (const std::string reduction : {"none", "add", "mul", "max", "min"}) {
    Tensor expected = x.clone();
    float* e = expected.data_as<float>();
    for (int64_t t = 0; t < 3; ++t) {
      int64_t i0 = idx.data_as<int64_t>()[2 * t], i1 = idx.data_as<int64_t>()[2 * t + 1];
      if (i0 < 0) i0 += 4;
      for (int64_t r = 0; r < 2; ++r) {
        float& dst = e[(i0 * 3 + i1) * 2 + r];
        const float u = updates.data_as<float>()[t * 2 + r];
        dst = reduction == "none" ? u : reduction == "add" ? dst + u : reduction == "mul" ? dst * u
            : reduction == "max" ? std::max(dst, u) : std::min(dst, u);
      }
    }
    Node n = make_node("ScatterND", 3);
    if (reduction != "none") n.attributes.set_string("reduction", reduction);
    if (reduction == "none") {
      // Duplicate indices make "none" order-dependent; use the unique ones only.
      const Tensor uniq = ints({1, 0, -1, 2}, {2, 2});
      const Tensor upd2 = random_tensor(DType::Float32, {2, 2}, rng);
      Tensor exp2 = x.clone();
      for (int64_t r = 0; r < 2; ++r) {
        exp2.data_as<float>()[(1 * 3 + 0) * 2 + r] = upd2.data_as<float>()[r];
        exp2.data_as<float>()[(3 * 3 + 2) * 2 + r] = upd2.data_as<float>()[2 + r];
      }
      expect_same(run(n, 11, {&x, &uniq, &upd2})[0], exp2);
      continue;
    }
    expect_same(run(n, 18, {&x, &idx, &updates})[0], expected);
  }
  const Tensor bad = ints({4, 0}, {1, 2});
  const Tensor upd = random_tensor(DType::Float32, {1, 2}, rng);
  const Node n = make_node("ScatterND", 3);
  expect_error(n, "out of range", [&] { run(n, 13, {&x, &bad, &upd}); });
}

TEST(MovementScatterElements, EveryAxisNoneAndAdd) {
  std::mt19937 rng(46);
  const Shape data_shape{3, 4, 5};
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const Tensor x = random_tensor(DType::Int64, data_shape, rng);
    const Shape idx_shape{2, 3, 4};
    const Tensor idx = random_indices(DType::Int32, idx_shape, data_shape[a], rng);
    const Tensor updates = random_tensor(DType::Int64, idx_shape, rng);
    Tensor expected = x.clone();
    for (int64_t k = 0; k < idx.numel(); ++k) {
      std::vector<int64_t> pos = unravel(k, idx_shape);
      pos[a] = index_at(idx, k, data_shape[a]);
      expected.data_as<int64_t>()[ravel(pos, data_shape)] += updates.data_as<int64_t>()[k];
    }
    Node n = with_axis("ScatterElements", 3, axis);
    n.attributes.set_string("reduction", "add");
    expect_same(run(n, 16, {&x, &idx, &updates})[0], expected);
  }
  // Plain Scatter (opset 9-10) on bool data with unique positions.
  const Tensor x = random_tensor(DType::Bool, {2, 3}, rng);
  const Tensor idx = ints({2, 0}, {1, 2});
  Tensor upd(DType::Bool, {1, 2});
  upd.data_as<uint8_t>()[0] = !x.data_as<uint8_t>()[2];
  upd.data_as<uint8_t>()[1] = !x.data_as<uint8_t>()[0];
  Tensor expected = x.clone();
  expected.data_as<uint8_t>()[2] = upd.data_as<uint8_t>()[0];
  expected.data_as<uint8_t>()[0] = upd.data_as<uint8_t>()[1];
  expect_same(run(with_axis("Scatter", 3, 1), 9, {&x, &idx, &upd})[0], expected);
}

}  // namespace
}  // namespace ember::test
