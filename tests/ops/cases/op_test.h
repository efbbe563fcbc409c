// One op-test harness for every device. A case (the node, its inputs, a plain
// reference, the tolerance per dtype) is written once, in tests/ops/cases/, and
// compiled into each kernel test program, which runs it on its own device:
//   test_ops_cpu            the CPU kernels;
//   test_ops_cuda           the CUDA kernels on a real GPU (skipped, saying why, without one);
//   test_ops_cuda_emulated  the CUDA kernels under the CUDA emulator (CI).
// Each run is compared with the reference, never with another device's kernel.
#pragma once

#include "graph/graph.h"
#include "test_util.h"

#include <ember/core/tensor.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace ember::test {

// What one device's kernel made of a node.
struct DeviceRun {
  bool taken = false;          // false: no kernel of the device takes the node
  std::string why_not;         // the factories' reasons when not taken
  std::vector<Tensor> outputs;  // host copies
};

// The device this test program runs op cases on (one definition per program).
struct OpTestDevice {
  std::string name;
  // Why kernels cannot run here (no GPU); empty when they can.
  std::function<std::string()> unavailable;
  // Builds the node's kernel as the planner would (the inputs listed in
  // `plan_time_inputs` are visible to the factory, as weights are), runs it once.
  std::function<DeviceRun(const Node&, int64_t opset, const std::vector<const Tensor*>& inputs,
                          const std::vector<int>& plan_time_inputs)>
      run;
};
const OpTestDevice& op_test_device();

struct Tolerance {
  double rtol = 0, atol = 0;
};

struct OpCase {
  Node node;
  int64_t opset = 21;
  std::vector<Tensor> inputs;  // an undefined Tensor marks an absent optional input
  std::vector<int> plan_time_inputs;
  // The outputs from the inputs, computed plainly (in double where it matters); they
  // are rounded to each output's dtype before the comparison.
  std::function<std::vector<Tensor>(const std::vector<const Tensor*>&)> reference;
  std::function<Tolerance(DType)> tolerance;
  std::string what;  // names the case in failure messages
};

// Runs the case on this program's device and compares every output with the
// reference. A device may decline a dtype (its factory says why, and the line is
// printed); declining float32 is a failure: every device that has the op takes it.
void expect_op_matches_reference(const OpCase& c);

// A test of op cases, compiled into every kernel test program; skipped, with the
// reason, where the program's device cannot run kernels.
#define EMBER_OP_TEST(suite, name)                                              \
  static void ember_op_test_##suite##_##name();                                 \
  TEST(suite, name) {                                                           \
    const std::string ember_why = ::ember::test::op_test_device().unavailable(); \
    if (!ember_why.empty()) GTEST_SKIP() << ember_why;                          \
    ember_op_test_##suite##_##name();                                           \
  }                                                                             \
  static void ember_op_test_##suite##_##name()

}  // namespace ember::test
