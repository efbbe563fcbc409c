// CUDA Resize/Upsample against the CPU kernel (skip without a GPU): {1,3,7,9} and other
// shapes up and down, from scales and from sizes, every coordinate mode the kernel
// takes with every nearest_mode, and bilinear.
#include "test_movement_util.h"

namespace ember::test {
namespace {

TEST(CudaResize, NearestMatchesCpuExactly) {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Int8}) {
    for (const MoveCase& c : resize_cases(false, t)) {
      SCOPED_TRACE(c.label);
      // Nearest copies the element the CPU picks (same double coordinates): exact.
      expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 0, 0, c.plan_time);
    }
  }
}

TEST(CudaResize, LinearMatchesCpu) {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::Float32, DType::Float16}) {
    for (const MoveCase& c : resize_cases(true, t)) {
      SCOPED_TRACE(c.label);
      // float32: weights and the 4-tap sum in float vs the CPU's double, values up to
      // 100 (absolute rounding ~1e-5); float16: the stored half (relative 2^-11).
      if (t == DType::Float32) expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 1e-5, 1e-4, c.plan_time);
      else expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 1e-2, 1e-2, c.plan_time);
    }
  }
}

}  // namespace
}  // namespace ember::test
