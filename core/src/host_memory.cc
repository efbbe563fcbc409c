#include "core/src/host_memory.h"

#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace ember {

namespace {

// From here up a block is mapped on its own (a few page faults on first touch cost
// less than a heap that never shrinks).
constexpr size_t kMappedFrom = size_t{1} << 20;

size_t rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + 63) / 64 * 64; }

std::atomic<size_t> heap_block_bytes{0};  // blocks below kMappedFrom, on malloc's heap

}  // namespace

size_t host_memory_available() {
  size_t available = SIZE_MAX;
  // MemAvailable (what the kernel can give without swapping) plus free swap.
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0, mem = SIZE_MAX, swap = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") mem = kib * 1024;
    if (key == "SwapFree:") swap = kib * 1024;
  }
  if (mem != SIZE_MAX) available = mem + swap;
  // A container's limit (cgroup v2): what is left under memory.max.
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  size_t limit = 0, current = 0;
  if (max_file >> limit && current_file >> current) available = std::min(available, limit > current ? limit - current : 0);
  return available;
}

void* allocate_host_block(size_t bytes) {
  if (bytes >= kMappedFrom) {
    // mmap would promise it (overcommit) and the first touches would then page for
    // minutes or end in the OOM killer: a model asking for more than there is (a Tile
    // or Expand to terabytes) gets a clear refusal instead.
    if (bytes > host_memory_available()) return nullptr;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;  // page aligned, zero-filled
  }
  void* p = std::aligned_alloc(64, rounded(bytes));
  if (!p) return nullptr;
  std::memset(p, 0, rounded(bytes));
  heap_block_bytes += rounded(bytes);
  return p;
}

void release_host_block(void* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kMappedFrom) {
    munmap(p, bytes);
    return;
  }
  std::free(p);
  heap_block_bytes -= rounded(bytes);
}

size_t heap_bytes_besides_blocks() {
#ifdef __GLIBC__
  const struct mallinfo2 info = mallinfo2();
  const size_t in_use = info.uordblks + info.hblkhd;
  const size_t blocks = heap_block_bytes;
  return in_use > blocks ? in_use - blocks : 0;
#else
  return 0;
#endif
}

}  // namespace ember
