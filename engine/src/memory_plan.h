// Liveness-based placement of values in one arena: two values share bytes only when
// their lifetimes (in step indices, inclusive) do not overlap.
#pragma once

#include <cstddef>
#include <vector>

namespace ember {

struct Lifetime {
  size_t bytes = 0;
  int first_step = 0;  // the step that writes it
  int last_step = 0;   // the last step that reads it
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // one per lifetime, multiples of the alignment
  size_t peak_bytes = 0;
};

ArenaLayout plan_arena(const std::vector<Lifetime>& lifetimes, size_t alignment = 64);

}  // namespace ember
