// The harness every CUDA kernel test uses: run one node through its CUDA kernel and
// through the CPU kernels (the reference), and compare. Tests skip, with the reason
// printed, on a machine where no GPU can be used. Nodes, random tensors and
// expect_close come from tests/test_util.h.
#pragma once

#include "graph/graph.h"
#include "ops/cases/op_test.h"
#include "test_util.h"

#include <ember/core/tensor.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace ember::test {

// Why CUDA kernels cannot run here; empty when a GPU is usable.
std::string why_no_gpu();

#define EMBER_REQUIRE_GPU()                                             \
  do {                                                                 \
    const std::string ember_why_no_gpu = ::ember::test::why_no_gpu(); \
    if (!ember_why_no_gpu.empty()) GTEST_SKIP() << ember_why_no_gpu;   \
  } while (0)

// In the CUDA emulator (tests/cuda_emulator), which runs every CUDA thread as a fiber
// on the CPU, a case of hundreds of millions of threads takes minutes: such cases run
// on GPUs only, and say so.
#ifdef EMBER_CUDA_EMULATOR
#define EMBER_SKIP_IF_EMULATED(why) GTEST_SKIP() << "too slow in the CUDA emulator: " << why
#else
#define EMBER_SKIP_IF_EMULATED(why) \
  do {                              \
  } while (0)
#endif

// `t` converted to `dtype` on the host (through the CPU Cast kernel).
Tensor cast_to(const Tensor& t, DType dtype);

// Builds the node's CUDA kernel as the planner would (see run_on_cuda); not taken,
// with the factories' reasons, when none takes the node.
DeviceRun try_run_on_cuda(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                          const std::vector<int>& plan_time_inputs = {});

// Builds the node's CUDA kernel as the planner would (inputs whose index is in
// `plan_time_inputs` are visible to the factory as session weights, which it may pack)
// and runs it once on
// device copies of `inputs`. Returns host copies of the outputs; fails the test with
// the factory's reason when no CUDA kernel takes the node.
std::vector<Tensor> run_on_cuda(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                const std::vector<int>& plan_time_inputs = {});

// The CPU reference. float16 and bfloat16 inputs are widened to float32 first (the
// reference is the float32 computation on the same rounded values), so outputs may be
// float32.
std::vector<Tensor> run_on_cpu(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs);

// run_on_cuda vs run_on_cpu for every output.
void expect_cuda_matches_cpu(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                             double rtol, double atol, const std::vector<int>& plan_time_inputs = {});

}  // namespace ember::test
