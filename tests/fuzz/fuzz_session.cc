// Fuzz target: a whole Session on a mutated model: load, optimize, plan and run on the
// CPU with small inputs of the declared shapes. Any ember::Error is a correct answer;
// anything else (a crash, another exception, a sanitizer report, a leak, a hang) is a
// finding.
//
// Inputs: symbolic or unknown dims are 2; a model whose inputs would hold more than
// kMaxElements elements, or that has an input of a dtype no caller could pass, is
// skipped (return 0) so that one execution stays fast. Values are small and fixed by the
// model's bytes, so a finding replays exactly.
#include <ember/core/error.h>
#include <ember/session.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <vector>

namespace {

constexpr int64_t kMaxDim = 64;
constexpr int64_t kMaxElements = 4096;

// The Session takes a path (the public API); one file per process, rewritten each run.
const std::string& model_path() {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("ember-fuzz-session-" + std::to_string(getpid()) + ".onnx"))
          .string();
  return path;
}

uint64_t next(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Small values: integers in [-2, 5] (indices, axes, counts), floats in [-2, 2).
void fill(ember::Tensor& t, uint64_t& state) {
  using ember::DType;
  const int64_t n = t.numel();
  auto small_int = [&] { return static_cast<int64_t>(next(state) % 8) - 2; };
  auto small_float = [&] { return static_cast<double>(next(state) % 4096) / 1024.0 - 2.0; };
  switch (t.dtype()) {
    case DType::Float32: for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = static_cast<float>(small_float()); break;
    case DType::Float64: for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = small_float(); break;
    case DType::Int64: for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = small_int(); break;
    case DType::Int32: for (int64_t i = 0; i < n; ++i) t.data_as<int32_t>()[i] = static_cast<int32_t>(small_int()); break;
    case DType::Bool: for (int64_t i = 0; i < n; ++i) t.data_as<uint8_t>()[i] = next(state) & 1; break;
    default: {  // other dtypes: bytes below 0x40 (no NaN or Inf in the 16-bit floats)
      auto* p = static_cast<uint8_t*>(t.data());
      for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(next(state) & 0x3F);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(model_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  uint64_t state = size;
  for (size_t i = 0; i < size; i += 64) state = state * 31 + data[i];
  try {
    ember::SessionOptions options;
    options.num_threads = 1;  // one core per fuzzing job
    ember::Session session(model_path(), options);
    std::vector<std::pair<std::string, ember::Tensor>> inputs;
    int64_t total = 0;
    for (const ember::ValueDesc& d : session.inputs()) {
      if (d.dtype == ember::DType::Undefined || d.dtype == ember::DType::String || ember::dtype_bits(d.dtype) < 8)
        return 0;
      ember::Shape shape;
      int64_t numel = 1;
      for (const std::string& dim : d.dims) {
        int64_t v = 2;
        if (!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos) {
          if (dim.size() > 4) return 0;
          v = std::stoll(dim);
        }
        if (v > kMaxDim) return 0;
        shape.push_back(v);
        numel *= v;
        if (numel > kMaxElements) return 0;
      }
      total += numel;
      if (total > kMaxElements) return 0;
      ember::Tensor t(d.dtype, shape);
      fill(t, state);
      inputs.emplace_back(d.name, std::move(t));
    }
    session.run(inputs);
  } catch (const ember::Error&) {
  } catch (const std::bad_alloc&) {
    // A model may ask for more memory than there is (ConstantOfShape, Expand, Tile of
    // sizes it computes): refusing it is the allocator's answer, not a bug.
  }
  return 0;
}
