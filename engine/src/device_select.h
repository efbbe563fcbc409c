// Turning the user's device option into the backends a session plans over.
#pragma once

#include "engine/src/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace ember {

// "cpu" -> [cpu]; "cuda" / "cuda:N" -> [cuda:N, cpu] (CPU fallback for nodes the GPU
// lacks). Raises ember::Error with one clear sentence for a malformed option, a build
// without CUDA, no driver, no GPU, or an index out of range.
std::vector<std::unique_ptr<Backend>> select_backends(const std::string& device);

// Sets the intra-op thread count of the calling thread (0 keeps the default: all cores).
void apply_thread_count(int num_threads);

// The intra-op thread count a session uses: `requested`, or for 0 every core this
// process may run on (its affinity mask, as a container or taskset limits it). Raises
// on a negative count.
int resolve_thread_count(int requested);

}  // namespace ember
