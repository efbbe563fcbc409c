// TopK on CUDA: the pass plan (host, topk_plan.cc) and the launcher (topk_impl.cu). A
// plain C++ header.
//
// One pass sorts chunks of at most kTopKChunk elements of each row in shared memory
// (a bitonic sort of (value, index) pairs, padded to a power of two) and writes the
// first `keep` of each chunk. A row that fits one chunk takes one pass straight into
// the outputs; a longer row first goes through passes that shrink it to the
// concatenated per-chunk winners in the workspace (the top K of a union is the top K
// of the per-part top Ks), until it fits one chunk.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::cuda {

enum class TopKType : int32_t { Float32, Float16, Int32, Int64 };

// Elements per chunk: 4096 (value, int32 index) pairs of int64 are 48 KiB, the shared
// memory a block gets without opting in.
inline constexpr int64_t kTopKChunk = 4096;

// Element j of row r of a "row layout" (rows = outer * inner, len along the axis)
// lives at (r / inner) * len * inner + j * inner + r % inner.
struct TopKPass {
  const void* in_values = nullptr;
  const int32_t* in_indices = nullptr;  // nullptr: an element's index is its position j
  int64_t in_len = 0, in_inner = 1;
  void* out_values = nullptr;
  void* out_indices = nullptr;  // int64 when out_int64 (the final pass), else int32
  bool out_int64 = false;
  int64_t out_len = 0, out_inner = 1;  // out_len = chunks * keep
  int64_t rows = 0;
  int64_t chunks = 1;  // per row: ceil(in_len / kTopKChunk)
  int64_t keep = 0;    // written per chunk: the first `keep` of its sorted order
};

// Where a pass reads and writes: the node's input / outputs, or workspace buffer 0 or 1.
inline constexpr int kTopKNodeTensors = -1;

struct TopKPlan {
  struct Step {
    TopKPass pass;  // pointers null until bind_topk_pass
    int source = kTopKNodeTensors, dest = kTopKNodeTensors;
  };
  std::vector<Step> steps;  // empty when there is nothing to write (K = 0 or no rows)
  // Workspace buffer b: values at value_offset[b], int32 indices at index_offset[b].
  size_t value_offset[2] = {0, 0}, index_offset[2] = {0, 0};
  size_t workspace_bytes = 0;
};

// The passes for `rows` rows of n elements (`inner` apart), K of them kept, values of
// value_bytes each. Needs n <= kTopKChunk or k <= kTopKChunk / 2, and n < 2^31.
TopKPlan plan_topk(int64_t n, int64_t k, int64_t rows, int64_t inner, size_t value_bytes);

// Step `step` of the plan with its pointers set.
TopKPass bind_topk_pass(const TopKPlan& plan, size_t step, const void* x, void* values, int64_t* indices,
                        void* workspace);

// Elements a pass's blocks sort at most: in_len or kTopKChunk rounded up to a power of 2.
int topk_chunk_capacity(int64_t in_len);

// Dynamic shared memory of one pass's blocks: at most 48 KiB (no opt-in needed)
// for value_bytes <= 8, since rows are cut into chunks of kTopKChunk.
size_t topk_shared_bytes_for(size_t value_bytes, int64_t in_len);

void launch_topk_pass(TopKType type, bool largest, const TopKPass& pass, cudaStream_t stream);

}  // namespace ember::cuda
