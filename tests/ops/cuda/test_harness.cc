// The harness itself, so that a CUDA test cannot pass by comparing nothing.
#include "cuda_harness.h"

#include <gtest/gtest-spi.h>

namespace ember::test {

TEST(CudaHarness, SaysWhyThereIsNoGpu) {
  const std::string why = why_no_gpu();
  if (!why.empty()) {
    EXPECT_NE(why.find("no GPU: "), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
}

TEST(CudaHarness, ExpectCloseCatchesADifferentElement) {
  std::mt19937 rng(1);
  const Tensor want = random_tensor(DType::Float32, {3, 5}, 1, 2, rng);
  Tensor got = want.clone();
  got.data_as<float>()[7] += 0.01f;
  EXPECT_NONFATAL_FAILURE(expect_close(got, want, 1e-3, 1e-3, "case"), "element 7");
  expect_close(want, want, 0, 0, "same");
}

TEST(CudaHarness, RandomTensorsAreNotConstant) {
  std::mt19937 rng(2);
  const Tensor t = random_tensor(DType::Float16, {64}, -1, 1, rng);
  const Tensor f = cast_to(t, DType::Float32);
  EXPECT_NE(f.data_as<float>()[0], f.data_as<float>()[1]);
}

}  // namespace ember::test
