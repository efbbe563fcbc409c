// CUDA Gather, GatherElements, GatherND, ScatterElements and ScatterND against the CPU
// kernels (skip without a GPU): any axis incl. negative, int32 and int64 indices incl.
// negative ones, float32/float16/int64/bool/int8 data. Exact (tolerance 0): bytes are
// moved. Out-of-range indices, where the CPU raises, gather zeros on CUDA.
#include "test_movement_util.h"

namespace ember::test {
namespace {

TEST(CudaGather, GatherFamilyMatchesCpu) {
  EMBER_REQUIRE_GPU();
  for (const MoveCase& c : gather_cases()) {
    SCOPED_TRACE(c.label);
    expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 0, 0, c.plan_time);
  }
}

TEST(CudaGather, ScattersMatchCpu) {
  EMBER_REQUIRE_GPU();
  for (const MoveCase& c : scatter_cases()) {
    SCOPED_TRACE(c.label);
    expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 0, 0, c.plan_time);
  }
}

TEST(CudaGather, OutOfRangeIndicesGatherZeros) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(40);
  const Tensor data = random_tensor(DType::Float32, {3, 5}, 1, 2, rng);  // no zeros
  const Tensor indices = int_vector({0, 5, -6, 1000000, -5, 4});
  const std::vector<Tensor> got = run_on_cuda(make_node("Gather", 2, 1, with_int("axis", 1)), 13, {&data, &indices});
  ASSERT_EQ(got.size(), 1u);
  const float* x = data.data_as<float>();
  const float* y = got[0].data_as<float>();
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(y[r * 6 + 0], x[r * 5 + 0]);
    EXPECT_EQ(y[r * 6 + 1], 0.f);
    EXPECT_EQ(y[r * 6 + 2], 0.f);
    EXPECT_EQ(y[r * 6 + 3], 0.f);
    EXPECT_EQ(y[r * 6 + 4], x[r * 5 + 0]);
    EXPECT_EQ(y[r * 6 + 5], x[r * 5 + 4]);
  }
}

}  // namespace
}  // namespace ember::test
