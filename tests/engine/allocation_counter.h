// Counts the heap allocations a piece of code makes on the calling thread, by
// replacing the global operator new for the whole test program.
#pragma once

namespace ember::testing {

template <class F>
int count_allocations(const F& f);

namespace detail {
int& allocations();
bool& counting();
}  // namespace detail

template <class F>
int count_allocations(const F& f) {
  detail::allocations() = 0;
  detail::counting() = true;
  f();
  detail::counting() = false;
  return detail::allocations();
}

}  // namespace ember::testing
