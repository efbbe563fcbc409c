// ArgMax and ArgMin on CUDA: the candidate order the kernels share (checked on the
// host against the CPU kernel, ties and NaN included), then the kernels themselves.
#include "ops/cuda/reduce_arg_impl.h"
#include "reduce_test_util.h"

#include <cmath>
#include <limits>

namespace ember::test {
namespace {

// The kernels' scheme on the host: `lanes` threads each scan j = lane, lane + lanes,
// ... of a row, then combine their candidates pairwise in xor-butterfly order.
template <bool kMax, bool kLast>
int64_t split_scan(const std::vector<float>& row, int lanes) {
  std::vector<float> v(lanes, 0.f);
  std::vector<long long> at(lanes, -1);
  for (int l = 0; l < lanes; ++l)
    for (size_t j = l; j < row.size(); j += lanes) cuda::arg_take_better<kMax, kLast>(v[l], at[l], row[j], j);
  for (int offset = lanes / 2; offset > 0; offset /= 2) {
    const std::vector<float> v0 = v;
    const std::vector<long long> at0 = at;
    for (int l = 0; l < lanes; ++l) cuda::arg_take_better<kMax, kLast>(v[l], at[l], v0[l ^ offset], at0[l ^ offset]);
  }
  return at[0];
}

template <bool kMax, bool kLast>
void check_split_scan_matches_cpu(const std::vector<float>& row) {
  Tensor x(DType::Float32, {static_cast<int64_t>(row.size())});
  std::copy(row.begin(), row.end(), x.data_as<float>());
  Attributes at;
  at.set_int("select_last_index", kLast);
  const Tensor want = evaluate_node(make_node(kMax ? "ArgMax" : "ArgMin", 1, 1, at), 13, {&x})[0];
  for (int lanes : {1, 2, 32, 256})
    EXPECT_EQ((split_scan<kMax, kLast>(row, lanes)), want.data_as<int64_t>()[0])
        << (kMax ? "ArgMax" : "ArgMin") << (kLast ? " last" : " first") << ", " << lanes << " lanes, row of "
        << row.size();
}

TEST(CudaArgReduceOrder, SplitScansGiveTheCpuAnswerWithTiesAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows = {
      {1},           {nan},         {2, 2, 2},          {nan, 5, 5},           {5, nan, 5, 1},
      {-inf, -inf},  {inf, 3, inf}, {nan, nan, nan},    {1, nan, nan, 0, 1},   {-0.f, 0.f, -0.f}};
  std::mt19937 rng(5);
  for (int64_t n : {7, 33, 100, 1000, 3000}) {  // few distinct values: many ties, NaN sprinkled
    std::vector<float> row(n);
    for (float& v : row) v = rng() % 13 == 0 ? nan : static_cast<float>(rng() % 5);
    rows.push_back(row);
    row[0] = nan;  // a NaN at index 0 wins
    rows.push_back(row);
  }
  for (const std::vector<float>& row : rows) {
    check_split_scan_matches_cpu<true, false>(row);
    check_split_scan_matches_cpu<true, true>(row);
    check_split_scan_matches_cpu<false, false>(row);
    check_split_scan_matches_cpu<false, true>(row);
  }
}

// Values from a small integer set, so that ties are common.
Tensor tied_values(DType dtype, const Shape& shape, uint32_t seed) {
  return cast_to(seeded_tensor(DType::Int32, shape, seed, -3, 3), dtype);
}

void check_arg(const std::string& op, const Shape& shape, int64_t axis, DType dtype, bool keepdims, bool last,
               bool ties) {
  Attributes at;
  at.set_int("axis", axis);
  at.set_int("keepdims", keepdims);
  if (last) at.set_int("select_last_index", 1);
  const uint32_t seed = static_cast<uint32_t>(shape_numel(shape) + axis);
  const Tensor x = ties ? tied_values(dtype, shape, seed) : seeded_tensor(dtype, shape, seed, -10, 10);
  SCOPED_TRACE(op + " " + dtype_name(dtype) + shape_to_string(shape) + " axis " + std::to_string(axis) +
               (keepdims ? " keepdims" : "") + (last ? " last" : " first") + (ties ? " ties" : ""));
  expect_cuda_matches_cpu(make_node(op, 1, 1, at), 13, {&x}, 0, 0);  // indices: exact
}

TEST(CudaArgReduce, EveryPathDtypeAndTieRule) {
  EMBER_REQUIRE_GPU();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},        {{3, 7}, 1},        {{3, 7}, 0},       {{4, 1000}, 1},  // warp per row
      {{3, 1024}, 1},  {{3, 1025}, 1},                                        // warp / block boundary
      {{2, 5000}, 1},  {{2, 5000}, -1},                                       // block per row
      {{2, 3, 4, 5}, 1}, {{2, 3, 4, 5}, 0}, {{2, 3, 4, 5}, 2}, {{1000, 3}, 0}, // a thread per column
      {{2, 3, 4, 5}, 3}};
  for (const std::string op : {"ArgMax", "ArgMin"})
    for (DType dtype : {DType::Float32, DType::Float16, DType::Int32, DType::Int64})
      for (const auto& [shape, axis] : cases)
        for (bool last : {false, true}) {
          check_arg(op, shape, axis, dtype, true, last, true);
          if (dtype == DType::Float32) check_arg(op, shape, axis, dtype, false, last, false);
        }
}

TEST(CudaArgReduce, DeclinesWithAReason) {
  EXPECT_EQ(cuda_verdict(make_node("ArgMax", 1), 13, {{DType::Float16, {2, 3}}}), "");
  EXPECT_EQ(cuda_verdict(make_node("ArgMin", 1), 1, {{DType::Int64, {2, 3}}}), "");
  const std::string f64 = cuda_verdict(make_node("ArgMax", 1), 13, {{DType::Float64, {2, 3}}});
  EXPECT_NE(f64.find("float64 is not supported on CUDA"), std::string::npos) << f64;
  const std::string u8 = cuda_verdict(make_node("ArgMin", 1), 13, {{DType::UInt8, {2, 3}}});
  EXPECT_NE(u8.find("uint8 is not supported on CUDA"), std::string::npos) << u8;
}

}  // namespace
}  // namespace ember::test
