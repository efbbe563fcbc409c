#include "op_test.h"

#include <iostream>

namespace ember::test {

namespace {

// The reference rounded to the dtype the kernel writes, so the tolerance measures the
// kernel's error, not the output format's.
Tensor rounded_to(const Tensor& reference, DType dtype) {
  Tensor out(dtype, reference.shape());
  for (int64_t i = 0; i < reference.numel(); ++i) set_element(out, i, element(reference, i));
  return out;
}

}  // namespace

void expect_op_matches_reference(const OpCase& c) {
  const OpTestDevice& device = op_test_device();
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : c.inputs) inputs.push_back(t.dtype() == DType::Undefined ? nullptr : &t);
  const std::string what = c.what + " on " + device.name;
  SCOPED_TRACE(what);
  const DeviceRun run = device.run(c.node, c.opset, inputs, c.plan_time_inputs);
  const DType dtype = inputs.at(0)->dtype();
  if (!run.taken) {
    if (dtype == DType::Float32) ADD_FAILURE() << what << ": no kernel takes float32 (" << run.why_not << ")";
    else std::cout << "[ declined ] " << what << ": " << run.why_not << "\n";
    return;
  }
  const std::vector<Tensor> want = c.reference(inputs);
  ASSERT_EQ(run.outputs.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& got = run.outputs[i];
    ASSERT_EQ(got.shape(), want[i].shape()) << what << ", output " << i;
    const Tolerance tol = c.tolerance(got.dtype());
    expect_close(got, rounded_to(want[i], got.dtype()), tol.rtol, tol.atol, what + ", output " + std::to_string(i));
  }
}

}  // namespace ember::test
