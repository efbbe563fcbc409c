// Intra-op parallelism for CPU kernels, on OpenMP (the runtime oneDNN uses too, so
// both share one pool of threads and one thread count).
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

// Under ThreadSanitizer: GCC's libgomp is not instrumented, so TSan cannot see that a
// parallel region's threads start after what its caller did before it and end before
// what the caller does after it. parallel_for tells it (as LLVM's archer does), so the
// regions' work is checked against other threads instead of read as racing with its own
// caller (and reported once per address: a test ran for minutes).
#if defined(__SANITIZE_THREAD__)
#define EMBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMBER_TSAN 1
#endif
#endif
#ifdef EMBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ember {

// Calls body(begin, end) on disjoint chunks covering [0, n), in parallel when the
// work is big enough. `cost_per_item` is a rough count of operations per item; chunks
// below ~32k operations run serially because a fork costs more than they do.
template <class Body>
void parallel_for(int64_t n, int64_t cost_per_item, const Body& body) {
  if (n <= 0) return;
  const int64_t total = n * std::max<int64_t>(cost_per_item, 1);
  int threads = 1;
#ifdef _OPENMP
  threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), total / 32768 + 1));
  threads = static_cast<int>(std::min<int64_t>(threads, n));
#endif
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#ifdef EMBER_TSAN
  char region_start = 0, region_end = 0;  // their addresses name the two edges
  __tsan_release(&region_start);
#endif
#pragma omp parallel num_threads(threads)
  {
#ifdef EMBER_TSAN
    __tsan_acquire(&region_start);
#endif
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
#ifdef EMBER_TSAN
    __tsan_release(&region_end);
#endif
  }
#ifdef EMBER_TSAN
  __tsan_acquire(&region_end);
#endif
#endif
}

}  // namespace ember

