// CUDA Pad against the CPU kernel (skip without a GPU): constant (fill from the
// constant_value input, the opset-2 attribute, or zero), reflect, edge and wrap, with
// negative pads (crops) and opset 18's axes, on float32/float16/int64/bool/int8. Exact.
#include "test_movement_util.h"

namespace ember::test {
namespace {

TEST(CudaPad, EveryModeMatchesCpu) {
  EMBER_REQUIRE_GPU();
  for (const MoveCase& c : pad_cases()) {
    SCOPED_TRACE(c.label);
    expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 0, 0, c.plan_time);  // bytes moved: exact
  }
}

}  // namespace
}  // namespace ember::test
