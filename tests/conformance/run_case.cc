#include "conformance/run_case.h"

#include <ember/core/error.h>
#include <ember/session.h>

#include "loader/onnx_loader.h"
#include "ops/cpu/quant_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

namespace fs = std::filesystem;

namespace ember::conformance {

const char* status_name(Status status) {
  switch (status) {
    case Status::Passed: return "passed";
    case Status::Failed: return "failed";
    case Status::Crashed: return "crashed";
    case Status::Unsupported: return "unsupported";
    case Status::OutOfScope: return "out of scope";
  }
  return "?";
}

namespace {

// The types compared as values with a tolerance, as the ONNX backend runner does (it
// compares float8 and float4 through ml_dtypes, so -0 matches +0 there too).
bool is_float(DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::Float64: case DType::Float16: case DType::BFloat16:
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ: case DType::Float4E2M1: case DType::Float8E8M0: return true;
    default: return false;
  }
}

double float_at(const Tensor& t, int64_t i) { return load_element(t.dtype(), t.data(), i); }

std::string compare_floats(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  // The ONNX runner allows bfloat16 two units in the last place.
  if (expected.dtype() == DType::BFloat16) tol.rtol = std::max(tol.rtol, 0x1p-6);
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = float_at(actual, i), e = float_at(expected, i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (a == e) continue;  // equal infinities too
    const double excess = std::fabs(a - e) - (tol.atol + tol.rtol * std::fabs(e));
    if (excess <= 0) continue;  // NaN against a number falls through: !(NaN <= 0)
    ++bad;
    if (worst < 0 || !(excess <= worst_excess)) worst = i, worst_excess = excess;
  }
  if (!bad) return "";
  std::ostringstream os;
  os.precision(7);
  os << bad << " of " << expected.numel() << " values differ; worst at flat index " << worst
     << ": got " << float_at(actual, worst) << ", expected " << float_at(expected, worst);
  return os.str();
}

std::string compare_bits(const Tensor& actual, const Tensor& expected) {
  const size_t bytes = expected.nbytes();
  if (std::memcmp(actual.data(), expected.data(), bytes) == 0) return "";
  const auto* a = static_cast<const unsigned char*>(actual.data());
  const auto* e = static_cast<const unsigned char*>(expected.data());
  size_t bad = 0, first = bytes;
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != e[i]) ++bad, first = std::min(first, i);
  // Packed 4-bit types hold two elements per byte, the first in the low nibble.
  const int bits = dtype_bits(expected.dtype());
  const size_t element = bits < 8 ? first * 2 + ((a[first] ^ e[first]) & 0x0f ? 0 : 1) : first / (bits / 8);
  return std::to_string(bad) + " of " + std::to_string(bytes) + " bytes differ; first at element " +
         std::to_string(element) + " (exact match required for " + dtype_name(expected.dtype()) + ")";
}

// The first line of an error, without the case's directory: errors name the model
// or data file, and the case id already says which case it is.
// String tensors hold std::string objects, not bytes: compared element by element, exactly.
std::string compare_strings(const Tensor& actual, const Tensor& expected) {
  const auto* a = actual.data_as<std::string>();
  const auto* e = expected.data_as<std::string>();
  for (int64_t i = 0; i < expected.numel(); ++i)
    if (a[i] != e[i])
      return "string " + std::to_string(i) + " is '" + a[i] + "', expected '" + e[i] + "' (exact match required)";
  return "";
}

std::string first_line(const std::string& text, const std::string& case_dir) {
  std::string line = text.substr(0, text.find('\n'));
  for (const std::string& strip : {case_dir + "/model.onnx: ", case_dir + "/"})
    for (size_t at; (at = line.find(strip)) != std::string::npos;) line.erase(at, strip.size());
  return line.size() > 240 ? line.substr(0, 237) + "..." : line;
}

// check_supported() lists one "  Op 'node' ... at opset N" line per refused node.
std::string refused_ops(const std::string& message) {
  if (message.find("use operators ember does not support") == std::string::npos) return "";
  std::string ops;
  std::istringstream lines(message);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    if (!line.starts_with("  ") || line == "  ...") continue;
    std::string op = line.substr(2, line.find(' ', 2) - 2);
    if (const size_t d = line.find("(domain "); d != std::string::npos)
      op = line.substr(d + 8, line.find(')', d) - d - 8) + "." + op;
    if ((", " + ops + ",").find(", " + op + ",") == std::string::npos) ops += (ops.empty() ? "" : ", ") + op;
  }
  return "op " + ops;
}

std::vector<fs::path> data_sets(const std::string& case_dir) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(case_dir))
    if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_"))
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::vector<Tensor> load_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0; fs::exists(dir / (prefix + std::to_string(k) + ".pb")); ++k)
    tensors.push_back(load_tensor_proto((dir / (prefix + std::to_string(k) + ".pb")).string()));
  return tensors;
}

// The engine refusing a node it has no kernel for (an op, a dtype, an attribute value)
// is a gap in coverage, not a wrong result.
bool is_refusal(const std::string& message) {
  for (const char* sign : {"no kernel can run it", "no CPU kernel", "no CUDA kernel", "not support"})
    if (message.find(sign) != std::string::npos) return true;
  return false;
}

// Values files named prefix0.pb, prefix1.pb, ...: each a TensorProto, SequenceProto or
// OptionalProto as the model declares that input or output.
std::vector<Value> load_numbered_values(const fs::path& dir, const std::string& prefix,
                                        const std::vector<ValueDesc>& descs) {
  std::vector<Value> values;
  for (size_t k = 0; fs::exists(dir / (prefix + std::to_string(k) + ".pb")); ++k) {
    const std::string path = (dir / (prefix + std::to_string(k) + ".pb")).string();
    const std::string type = k < descs.size() ? descs[k].type : "tensor";
    if (type.starts_with("seq(")) values.push_back(load_value_proto(path, true));
    else if (type.starts_with("optional(")) values.push_back(load_value_proto(path, false));
    else values.emplace_back(load_tensor_proto(path));
  }
  return values;
}

std::string compare_values(const Value& actual, const Value& expected, Tolerance tol) {
  if (actual.kind() != expected.kind()) return actual.describe() + ", expected " + expected.describe();
  if (expected.is_tensor()) return compare_tensors(actual.tensor(), expected.tensor(), tol);
  if (expected.is_none()) return "";
  const auto& a = actual.elements();
  const auto& e = expected.elements();
  if (a.size() != e.size()) return actual.describe() + ", expected " + expected.describe();
  for (size_t i = 0; i < e.size(); ++i)
    if (std::string diff = compare_values(a[i], e[i], tol); !diff.empty())
      return "element " + std::to_string(i) + ": " + diff;
  return "";
}

// A model with sequence or optional inputs or outputs, through Session::run_values.
Result run_value_data_set(Session& session, const fs::path& dir, Tolerance tol, const std::string& case_dir) {
  std::vector<Value> inputs, expected;
  try {
    inputs = load_numbered_values(dir, "input_", session.inputs());
    expected = load_numbered_values(dir, "output_", session.outputs());
  } catch (const std::exception& e) {
    return {Status::Unsupported, "test data: " + first_line(e.what(), case_dir)};
  }
  if (inputs.size() != session.inputs().size())
    return {Status::Failed, std::to_string(inputs.size()) + " input files, the model has " +
                                std::to_string(session.inputs().size()) + " inputs"};
  std::vector<std::pair<std::string, Value>> named;
  for (size_t k = 0; k < inputs.size(); ++k) named.emplace_back(session.inputs()[k].name, inputs[k]);
  std::vector<Value> outputs;
  try {
    outputs = session.run_values(named);
  } catch (const std::exception& e) {
    const Status s = is_refusal(e.what()) ? Status::Unsupported : Status::Failed;
    return {s, "run: " + first_line(e.what(), case_dir)};
  }
  if (outputs.size() != expected.size())
    return {Status::Failed, std::to_string(outputs.size()) + " outputs, expected " + std::to_string(expected.size())};
  for (size_t k = 0; k < expected.size(); ++k)
    if (std::string diff = compare_values(outputs[k], expected[k], tol); !diff.empty())
      return {Status::Failed, "output " + std::to_string(k) + " '" + session.outputs()[k].name + "': " + diff};
  return {};
}

// What a random draw must satisfy: the expected dtype and shape, only 0 and 1.
std::string check_draw(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype())
    return std::string("dtype ") + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (actual.shape() != expected.shape())
    return "shape " + shape_to_string(actual.shape()) + ", expected " + shape_to_string(expected.shape());
  for (int64_t i = 0; i < actual.numel(); ++i)
    if (const double v = load_element(actual.dtype(), actual.data(), i); v != 0 && v != 1)
      return "value " + std::to_string(v) + " at flat index " + std::to_string(i) + " is neither 0 nor 1";
  return "";
}

Result run_data_set(Session& session, const fs::path& dir, Tolerance tol, const std::string& case_dir,
                    RandomCheck random) {
  std::vector<Tensor> inputs, expected;
  try {
    inputs = load_numbered(dir, "input_");
    expected = load_numbered(dir, "output_");
  } catch (const std::exception& e) {
    return {Status::Unsupported, "test data: " + first_line(e.what(), case_dir)};
  }
  std::vector<Tensor> outputs;
  try {
    outputs = session.make_outputs(inputs);
  } catch (const std::exception& e) {
    const Status s = is_refusal(e.what()) ? Status::Unsupported : Status::Failed;
    return {s, "plan: " + first_line(e.what(), case_dir)};
  }
  try {
    session.run(inputs, outputs);
  } catch (const std::exception& e) {
    // Nodes after a data-dependent shape are planned while running, so refusals show here too.
    const Status s = is_refusal(e.what()) ? Status::Unsupported : Status::Failed;
    return {s, "run: " + first_line(e.what(), case_dir)};
  }
  if (outputs.size() != expected.size())
    return {Status::Failed, std::to_string(outputs.size()) + " outputs, expected " +
                                std::to_string(expected.size())};
  if (random.draws) {
    std::vector<Tensor> again;
    if (random.seeded) {
      try {
        again = session.make_outputs(inputs);
        session.run(inputs, again);
      } catch (const std::exception& e) {
        return {Status::Failed, "second run: " + first_line(e.what(), case_dir)};
      }
    }
    for (size_t k = 0; k < expected.size(); ++k) {
      std::string diff = check_draw(outputs[k], expected[k]);
      if (diff.empty() && random.seeded && compare_tensors(again[k], outputs[k], {0, 0}) != "")
        diff = "a second run with the same seed drew other values";
      if (!diff.empty())
        return {Status::Failed, "output " + std::to_string(k) + " '" + session.outputs()[k].name + "': " + diff};
    }
    return {};
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    const std::string diff = compare_tensors(outputs[k], expected[k], tol);
    if (!diff.empty())
      return {Status::Failed, "output " + std::to_string(k) + " '" + session.outputs()[k].name +
                                  "': " + diff};
  }
  return {};
}

}  // namespace

std::string compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  if (actual.dtype() != expected.dtype())
    return std::string("dtype ") + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (actual.shape() != expected.shape())
    return "shape " + shape_to_string(actual.shape()) + ", expected " + shape_to_string(expected.shape());
  if (expected.dtype() == DType::String) return compare_strings(actual, expected);
  return is_float(expected.dtype()) ? compare_floats(actual, expected, tol) : compare_bits(actual, expected);
}

Result run_case(const std::string& case_dir, const std::string& non_tensor_io,
                const std::string& device, Tolerance tol, RandomCheck random) {
  std::unique_ptr<Session> session;
  try {
    SessionOptions options;
    options.device = device;
    options.num_threads = 1;
    session = std::make_unique<Session>(case_dir + "/model.onnx", options);
  } catch (const std::exception& e) {
    const std::string ops = refused_ops(e.what());
    if (!ops.empty()) return {Status::Unsupported, ops};
    const Status s = is_refusal(e.what()) ? Status::Unsupported : Status::Failed;
    return {s, "load: " + first_line(e.what(), case_dir)};
  }
  // Maps (ZipMap's output) have no ember value yet.
  if (non_tensor_io == "map") return {Status::Unsupported, "runner: a map graph input or output"};
  const auto sets = data_sets(case_dir);
  if (sets.empty()) return {Status::Failed, "no test_data_set_* directory"};
  for (const auto& dir : sets) {
    Result r = non_tensor_io.empty() ? run_data_set(*session, dir, tol, case_dir, random)
                                     : run_value_data_set(*session, dir, tol, case_dir);
    if (r.status == Status::Passed) continue;
    if (sets.size() > 1) r.detail = dir.filename().string() + ": " + r.detail;
    return r;
  }
  return {};
}

}  // namespace ember::conformance
