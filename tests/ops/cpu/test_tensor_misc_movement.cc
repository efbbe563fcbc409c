// The element-moving tensor ops against index references ("output element i reads
// input element src(i)"): Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence,
// CenterCropPad, OneHot, BitCast, TensorScatter, Compress and NonZero, on several
// dtypes and odd sizes.
#include "test_movement_util.h"

namespace ember::test {
namespace {

TEST(TensorMisc, TriluKeepsTheTriangleForEveryDiagonalShift) {
  std::mt19937 rng(11);
  for (DType dtype : movement_dtypes())
    for (int upper = 0; upper < 2; ++upper)
      for (int64_t k : {-4, -1, 0, 2, 5}) {
        const Tensor x = random_tensor(dtype, {2, 3, 5}, rng);
        const Tensor kt = ints({k}, {});
        Node node = make_node("Trilu", 2);
        node.attributes.set_int("upper", upper);
        const auto y = run(node, 14, {&x, &kt});
        const Tensor zero(dtype, {1});
        const Tensor want = expected_by_index(x, x.shape(), [&](const std::vector<int64_t>& i) -> int64_t {
          const bool keep = upper ? i[2] - i[1] >= k : i[2] - i[1] <= k;
          return keep ? ravel(i, x.shape()) : -1;
        }, zero.data());
        expect_same(y[0], want);
      }
}

TEST(TensorMisc, EyeLikeSetsOnesOnTheShiftedDiagonalInTheRequestedDtype) {
  for (int64_t k : {-2, 0, 3}) {
    const Tensor x(DType::Int32, {4, 6});
    Node node = make_node("EyeLike", 1);
    node.attributes.set_int("k", k);
    node.attributes.set_int("dtype", static_cast<int64_t>(DType::Float64));
    const auto y = run(node, 22, {&x});
    ASSERT_EQ(y[0].dtype(), DType::Float64);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(y[0].data_as<double>()[i * 6 + j], j - i == k ? 1.0 : 0.0);
  }
}

TEST(TensorMisc, DepthToSpaceAndSpaceToDepthFollowTheSpecsReshapes) {
  std::mt19937 rng(12);
  const int64_t n = 2, c = 3, h = 3, w = 5, b = 2;
  for (std::string mode : {"DCR", "CRD"}) {
    const Tensor x = random_tensor(DType::Float32, {n, c * b * b, h, w}, rng);
    Node node = make_node("DepthToSpace", 1);
    node.attributes.set_int("blocksize", b);
    node.attributes.set_string("mode", mode);
    const auto y = run(node, 13, {&x});
    expect_same(y[0], expected_by_index(x, {n, c, h * b, w * b}, [&](const std::vector<int64_t>& i) {
      const int64_t bh = i[2] % b, bw = i[3] % b;
      const int64_t ch = mode == "DCR" ? (bh * b + bw) * c + i[1] : i[1] * b * b + bh * b + bw;
      return ravel({i[0], ch, i[2] / b, i[3] / b}, x.shape());
    }));
    // SpaceToDepth is the exact inverse of DepthToSpace in the same mode.
    Node back = make_node("SpaceToDepth", 1);
    back.attributes.set_int("blocksize", b);
    back.attributes.set_string("mode", mode);
    expect_same(run(back, 28, {&y[0]})[0], x);
  }
}

TEST(TensorMisc, ReverseSequenceReversesEachBatchPrefix) {
  std::mt19937 rng(13);
  for (int batch_axis = 0; batch_axis < 2; ++batch_axis) {
    const int64_t batch = 4, time = 5;
    const Shape shape = batch_axis == 0 ? Shape{batch, time, 3} : Shape{time, batch, 3};
    const Tensor x = random_tensor(DType::Int64, shape, rng);
    const Tensor lens = ints({5, 1, 0, 3});
    Node node = make_node("ReverseSequence", 2);
    node.attributes.set_int("batch_axis", batch_axis);
    node.attributes.set_int("time_axis", 1 - batch_axis);
    const auto y = run(node, 10, {&x, &lens});
    expect_same(y[0], expected_by_index(x, shape, [&](std::vector<int64_t> i) {
      int64_t& t = i[1 - batch_axis];
      const int64_t len = lens.data_as<int64_t>()[i[batch_axis]];
      if (t < len) t = len - 1 - t;
      return ravel(i, shape);
    }));
  }
}

TEST(TensorMisc, CenterCropPadCropsAndPadsAroundTheCentre) {
  std::mt19937 rng(14);
  const Tensor x = random_tensor(DType::Float32, {5, 4, 3}, rng);
  const Tensor sizes = ints({2, 7});  // crop dim 0 (odd difference), pad dim 1 (odd difference)
  Node node = make_node("CenterCropPad", 2);
  node.attributes.set_ints("axes", {0, -2});
  const auto y = run(node, 18, {&x, &sizes});
  const float zero = 0;
  expect_same(y[0], expected_by_index(x, {2, 7, 3}, [&](const std::vector<int64_t>& i) -> int64_t {
    const int64_t r = i[0] + 1, c = i[1] - 1;  // crop starts at (5-2)/2 = 1, pad begins with (7-4)/2 = 1
    return c < 0 || c >= 4 ? -1 : ravel({r, c, i[2]}, x.shape());
  }, &zero));
}

TEST(TensorMisc, OneHotWritesOnValueAtEachIndexAlongAxis) {
  const Tensor indices = ints({0, -1, 3, 7, 2, -4}, {2, 3});  // 7 is out of range: all off
  Tensor depth(DType::Float32, {});
  *depth.data_as<float>() = 4.7f;  // truncates to 4
  const Tensor values = floats({-2.5f, 3.5f});
  for (int64_t axis : {0, 1, -1}) {
    Node node = make_node("OneHot", 3);
    node.attributes.set_int("axis", axis);
    const auto y = run(node, 11, {&indices, &depth, &values});
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape want = {2, 3};
    want.insert(want.begin() + a, 4);
    ASSERT_EQ(y[0].shape(), want);
    for (int64_t o = 0; o < y[0].numel(); ++o) {
      std::vector<int64_t> i = unravel(o, want);
      const int64_t d = i[a];
      i.erase(i.begin() + a);
      int64_t hot = indices.data_as<int64_t>()[ravel(i, {2, 3})];
      if (hot < 0) hot += 4;
      EXPECT_EQ(y[0].data_as<float>()[o], d == hot ? 3.5f : -2.5f) << o;
    }
  }
}

TEST(TensorMisc, BitCastKeepsTheBytes) {
  std::mt19937 rng(15);
  const Tensor x = random_tensor(DType::Float32, {3, 5}, rng);
  Node node = make_node("BitCast", 1);
  node.attributes.set_int("to", static_cast<int64_t>(DType::Int32));
  const auto y = run(node, 26, {&x});
  ASSERT_EQ(y[0].dtype(), DType::Int32);
  EXPECT_EQ(std::memcmp(y[0].data(), x.data(), x.nbytes()), 0);
  node.attributes.set_int("to", static_cast<int64_t>(DType::Int64));
  expect_error(node, "element sizes differ", [&] { run(node, 26, {&x}); });
}

TEST(TensorMisc, TensorScatterWritesUpdatesAtEachBatchWriteIndex) {
  std::mt19937 rng(16);
  for (std::string mode : {"linear", "circular"}) {
    const Tensor cache = random_tensor(DType::Float32, {3, 2, 6, 4}, rng);
    const Tensor update = random_tensor(DType::Float32, {3, 2, 3, 4}, rng);
    const Tensor where = ints({0, 3, mode == "circular" ? 5 : 2});
    Node node = make_node("TensorScatter", 3);
    node.attributes.set_string("mode", mode);
    const auto y = run(node, 24, {&cache, &update, &where});
    Tensor want = cache.clone();
    for (int64_t o = 0; o < update.numel(); ++o) {
      std::vector<int64_t> i = unravel(o, update.shape());
      i[2] = (i[2] + where.data_as<int64_t>()[i[0]]) % 6;
      want.data_as<float>()[ravel(i, cache.shape())] = update.data_as<float>()[o];
    }
    expect_same(y[0], want);
  }
}

TEST(TensorMisc, CompressKeepsTheSelectedSlices) {
  std::mt19937 rng(17);
  const Tensor x = random_tensor(DType::Int64, {3, 5, 2}, rng);
  Tensor cond(DType::Bool, {4});  // shorter than the axis: the rest is dropped
  const bool pick[] = {true, false, true, true};
  std::copy(pick, pick + 4, cond.data_as<bool>());
  Node node = make_node("Compress", 2);
  node.attributes.set_int("axis", -2);
  const std::vector<int64_t> kept = {0, 2, 3};
  expect_same(run(node, 11, {&x, &cond})[0], expected_by_index(x, {3, 3, 2}, [&](std::vector<int64_t> i) {
    i[1] = kept[i[1]];
    return ravel(i, x.shape());
  }));
  Node flat = make_node("Compress", 2);
  expect_same(run(flat, 11, {&x, &cond})[0],
              expected_by_index(x, {3}, [&](const std::vector<int64_t>& i) { return kept[i[0]]; }));
}

TEST(TensorMisc, NonZeroListsTheIndicesOfNonZeroElementsInOrder) {
  std::mt19937 rng(18);
  for (DType dtype : {DType::Float32, DType::Bool, DType::Int32}) {
    Tensor x = random_tensor(dtype, {3, 4, 5}, rng);
    if (dtype == DType::Float32)  // make a third of the elements zero (one a negative zero)
      for (int64_t i = 0; i < x.numel(); i += 3) x.data_as<float>()[i] = i == 3 ? -0.0f : 0.0f;
    if (dtype == DType::Int32)
      for (int64_t i = 0; i < x.numel(); i += 2) x.data_as<int32_t>()[i] = 0;
    std::vector<int64_t> want;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool nz = dtype == DType::Float32 ? x.data_as<float>()[i] != 0
                      : dtype == DType::Bool  ? x.data_as<bool>()[i]
                                              : x.data_as<int32_t>()[i] != 0;
      if (nz) want.push_back(i);
    }
    const auto y = run(make_node("NonZero", 1), 13, {&x});
    const int64_t count = static_cast<int64_t>(want.size());
    ASSERT_EQ(y[0].shape(), (Shape{3, count}));
    for (int64_t c = 0; c < count; ++c) {
      const std::vector<int64_t> idx = unravel(want[c], x.shape());
      for (int64_t d = 0; d < 3; ++d) EXPECT_EQ(y[0].data_as<int64_t>()[d * count + c], idx[d]);
    }
  }
}

}  // namespace
}  // namespace ember::test
