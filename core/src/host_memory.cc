#include "core/src/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ember {

namespace {

// From here up a block is mapped on its own (a few page faults on first touch cost
// less than a heap that never shrinks).
constexpr size_t kMappedFrom = size_t{1} << 20;

size_t rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + 63) / 64 * 64; }

}  // namespace

void* allocate_host_block(size_t bytes) {
  if (bytes >= kMappedFrom) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;  // page aligned, zero-filled
  }
  void* p = std::aligned_alloc(64, rounded(bytes));
  if (p) std::memset(p, 0, rounded(bytes));
  return p;
}

void release_host_block(void* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kMappedFrom)
    munmap(p, bytes);
  else
    std::free(p);
}

}  // namespace ember
