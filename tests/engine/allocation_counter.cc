#include "allocation_counter.h"

#include <cstdlib>
#include <new>

namespace ember::testing::detail {
int& allocations() {
  static thread_local int n = 0;
  return n;
}
bool& counting() {
  static thread_local bool on = false;
  return on;
}
}  // namespace ember::testing::detail

void* operator new(size_t n) {
  if (ember::testing::detail::counting()) ++ember::testing::detail::allocations();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too (std::stable_sort's buffer uses them): every allocation this
// program's delete frees must come from this malloc. Left to the runtime, an ASan build
// allocates them with its own operator new and reports our free() as a mismatch.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (ember::testing::detail::counting()) ++ember::testing::detail::allocations();
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
