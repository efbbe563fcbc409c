// Host memory for tensors and arenas: 64-byte aligned, zero-filled.
//
// Large blocks come straight from the kernel (mmap) and go straight back when released.
// Through malloc, glibc raises its mmap threshold after the first large free and keeps
// later large blocks on its heap, where they fragment: a service running many input
// shapes saw its resident memory creep up for good.
#pragma once

#include <cstddef>

namespace ember {

// nullptr when the memory is not there: a block of 1 MiB or more also when it exceeds
// host_memory_available().
void* allocate_host_block(size_t bytes);
// Bytes this process could still get without the OOM killer: MemAvailable plus free
// swap, within the cgroup's memory.max where one is set.
size_t host_memory_available();
// `bytes` as given to allocate_host_block.
void release_host_block(void* p, size_t bytes);

// Bytes malloc has handed out for anything but the blocks above (kernels, descriptors,
// the code oneDNN generates, ...): what making a plan adds to it is what its kernels
// hold. 0 where the allocator cannot say (not glibc's; a sanitizer's).
size_t heap_bytes_besides_blocks();

}  // namespace ember
