// Fuzz target: the ONNX loader (loader/onnx_loader.cc, load_model_from_bytes) on
// arbitrary bytes: protobuf parsing, validation, function inlining, topological sort.
// Any ember::Error is a correct answer; anything else is a finding. External data is
// refused (base_dir ""), so no input makes the loader read files.
#include "loader/onnx_loader.h"

#include <ember/core/error.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::load_model_from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", "");
  } catch (const ember::Error&) {
  }
  return 0;
}
