// Running one backend test case in this process and judging its outputs.
#pragma once

#include <ember/core/tensor.h>

#include <string>

namespace ember::conformance {

enum class Status { Passed, Failed, Crashed, Unsupported, OutOfScope };
const char* status_name(Status status);  // "passed", "failed", ...

struct Result {
  Status status = Status::Passed;
  std::string detail;  // one line: the mismatch, the error, the refused op; empty on pass
};

// The ONNX backend test defaults.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// "" when `actual` matches `expected`: same dtype and shape, floating values (float8
// and float4 included) within atol + rtol * |expected| (NaN matches NaN; bfloat16 gets
// rtol 2^-6 at least, as in ONNX's runner), every other dtype bit for bit.
// Otherwise says what differs (the worst element for values).
std::string compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol);

// Loads the case's model on `device` with one thread, runs every test_data_set_* and
// compares the outputs. Never throws: refusals to load or plan are Unsupported,
// anything else that goes wrong is Failed. A model with a `non_tensor_io` ("sequence",
// ...) graph input or output is only loaded: its data files are not TensorProtos.
//
// `random`: the op under test draws random values (Bernoulli), so its expected outputs
// are one draw ember cannot reproduce. Such a case passes when every output has the
// expected dtype and shape and holds only 0 and 1, and, when `random.seeded`, a second
// run gives the same values bit for bit; the values are not compared.
struct RandomCheck {
  bool draws = false;
  bool seeded = false;
};
Result run_case(const std::string& case_dir, const std::string& non_tensor_io,
                const std::string& device, Tolerance tol, RandomCheck random = {});

}  // namespace ember::conformance
