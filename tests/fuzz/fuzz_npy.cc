// Fuzz target: the .npy reader (core/src/npy.cc) on arbitrary bytes. Any ember::Error
// is a correct answer; anything else (a crash, another exception, a sanitizer report,
// a leak, a hang) is a finding.
#include <ember/core/error.h>
#include <ember/core/npy.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ember::Tensor t =
        ember::read_npy_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    // Touch every byte: a tensor that claims more than it holds shows up here under ASan.
    volatile uint8_t sum = 0;
    const auto* p = static_cast<const uint8_t*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i) sum = sum + p[i];
  } catch (const ember::Error&) {
  }
  return 0;
}
