// Slice against a reference that lists, per dim, the indices a Python-style slice
// visits (with ONNX's clamping), for random starts/ends/steps, both opset forms.
#include "test_movement_util.h"

#include <algorithm>

namespace ember::test {
namespace {

// The indices data[start:end:step] visits along a dim of length n, ONNX clamping.
std::vector<int64_t> visited(int64_t start, int64_t end, int64_t step, int64_t n) {
  if (n == 0) return {};
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
  } else {
    start = std::clamp<int64_t>(start, 0, n - 1);
    end = std::clamp<int64_t>(end, -1, n - 1);
  }
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) out.push_back(i);
  return out;
}

struct SliceCase {
  std::vector<int64_t> starts, ends, axes, steps;
};

Tensor slice_reference(const Tensor& x, const SliceCase& c) {
  const int64_t rank = x.rank();
  std::vector<std::vector<int64_t>> picks(rank);
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < x.shape()[d]; ++i) picks[d].push_back(i);
  for (size_t k = 0; k < c.starts.size(); ++k) {
    const int64_t axis = c.axes.empty() ? k : (c.axes[k] < 0 ? c.axes[k] + rank : c.axes[k]);
    const int64_t step = c.steps.empty() ? 1 : c.steps[k];
    picks[axis] = visited(c.starts[k], c.ends[k], step, x.shape()[axis]);
  }
  Shape out;
  for (const auto& p : picks) out.push_back(static_cast<int64_t>(p.size()));
  return expected_by_index(x, out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in(rank);
    for (int64_t d = 0; d < rank; ++d) in[d] = picks[d][o[d]];
    return ravel(in, x.shape());
  });
}

Tensor run_slice(const Tensor& x, const SliceCase& c, int64_t opset) {
  if (opset < 10) {
    Node n = make_node("Slice", 1);
    n.attributes.set_ints("starts", c.starts);
    n.attributes.set_ints("ends", c.ends);
    if (!c.axes.empty()) n.attributes.set_ints("axes", c.axes);
    return run(n, opset, {&x})[0];
  }
  const Tensor starts = ints(c.starts), ends = ints(c.ends), axes = ints(c.axes), steps = ints(c.steps);
  const bool has_axes = !c.axes.empty(), has_steps = !c.steps.empty();
  const Node n = make_node("Slice", 5, 1, {true, true, true, has_axes, has_steps});
  return run(n, opset, {&x, &starts, &ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr})[0];
}

TEST(MovementSlice, RandomStartsEndsStepsIncludingNegativeAndOutOfRange) {
  std::mt19937 rng(31);
  const Shape shape{4, 7, 5};
  for (int iter = 0; iter < 200; ++iter) {
    const DType dt = movement_dtypes()[iter % 4];
    const Tensor x = random_tensor(dt, shape, rng);
    SliceCase c;
    std::vector<int64_t> axes{0, 1, 2};
    std::shuffle(axes.begin(), axes.end(), rng);
    const int64_t count = 1 + rng() % 3;
    for (int64_t k = 0; k < count; ++k) {
      c.axes.push_back(axes[k] - (rng() % 2 ? 3 : 0));
      c.starts.push_back(static_cast<int64_t>(rng() % 21) - 10);
      c.ends.push_back(static_cast<int64_t>(rng() % 21) - 10);
      int64_t step = static_cast<int64_t>(rng() % 7) - 3;
      c.steps.push_back(step == 0 ? 1 : step);
    }
    expect_same(run_slice(x, c, 13), slice_reference(x, c));
  }
}

TEST(MovementSlice, HugeEndsAndDefaultAxesAndSteps) {
  std::mt19937 rng(32);
  const Tensor x = random_tensor(DType::Float32, {6, 5}, rng);
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  const SliceCase to_end{{1, 0}, {big, 3}, {}, {}};
  expect_same(run_slice(x, to_end, 10), slice_reference(x, to_end));
  const SliceCase reversed{{-1}, {small}, {1}, {-1}};
  expect_same(run_slice(x, reversed, 13), slice_reference(x, reversed));
  const SliceCase empty{{4}, {2}, {0}, {1}};
  EXPECT_EQ(run_slice(x, empty, 13).numel(), 0);
}

TEST(MovementSlice, AttributeFormBeforeOpset10) {
  std::mt19937 rng(33);
  const Tensor x = random_tensor(DType::Int64, {3, 8}, rng);
  const SliceCase c{{1, -6}, {1000, -1}, {0, 1}, {}};
  expect_same(run_slice(x, c, 1), slice_reference(x, c));
  const SliceCase no_axes{{0, 2}, {2, 7}, {}, {}};
  expect_same(run_slice(x, no_axes, 1), slice_reference(x, no_axes));
}

TEST(MovementSlice, Int32ParametersAndShapeArithmetic) {
  // Shape -> Slice on a small int64 tensor, as the planner folds it.
  const Tensor shape = ints({2, 3, 5, 7});
  Tensor starts(DType::Int32, {1}), ends(DType::Int32, {1});
  starts.data_as<int32_t>()[0] = -2;
  ends.data_as<int32_t>()[0] = 100;
  const Tensor out = run(make_node("Slice", 3), 13, {&shape, &starts, &ends})[0];
  expect_same(out, ints({5, 7}));
}

TEST(MovementSlice, EmptyInputAndErrors) {
  const Tensor x(DType::Float32, {0, 3});
  const SliceCase c{{-1}, {-10}, {0}, {-1}};
  EXPECT_EQ(shape_to_string(run_slice(x, c, 13).shape()), "[0, 3]");
  const Tensor y(DType::Float32, {4});
  const SliceCase zero_step{{0}, {4}, {0}, {0}};
  expect_error(make_node("Slice", 5), "step", [&] { run_slice(y, zero_step, 13); });
  const SliceCase bad_axis{{0}, {4}, {1}, {1}};
  expect_error(make_node("Slice", 5), "out of range", [&] { run_slice(y, bad_axis, 13); });
}

}  // namespace
}  // namespace ember::test
