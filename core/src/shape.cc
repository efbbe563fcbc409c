#include <ember/core/shape.h>

#include <ember/core/error.h>

#include <string>

namespace ember {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  // Shapes computed from a model's data can be absurd; their size must not be
  // undefined behaviour (fuzzing: UBSan in shape inference).
  if (overflow) throw Error("shape " + shape_to_string(shape) + " has more elements than int64 can count");
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace ember
