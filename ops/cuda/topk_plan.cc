// TopK on CUDA, host side of the passes (topk_impl.h): which passes a row length and K
// take, where each reads and writes, and the shared memory a pass's blocks need.
#include "ops/cuda/topk_block.h"
#include "ops/cuda/topk_impl.h"

#include <algorithm>

namespace ember::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

int topk_chunk_capacity(int64_t in_len) { return topk::chunk_capacity(in_len); }

size_t topk_shared_bytes_for(size_t value_bytes, int64_t in_len) {
  const int cap = topk::chunk_capacity(in_len);
  return topk::index_offset(value_bytes, cap) + sizeof(int32_t) * static_cast<size_t>(cap);
}

TopKPlan plan_topk(int64_t n, int64_t k, int64_t rows, int64_t inner, size_t value_bytes) {
  TopKPlan plan;
  size_t buffer_elements[2] = {0, 0};
  if (rows > 0 && k > 0) {
    // Shrink each row to its per-chunk winners until it fits one chunk. With
    // K <= C / 2 a pass leaves ceil(len / C) * K < (len / C + 1) * C / 2 <= len
    // elements when len > C, so the loop ends.
    int64_t len = n;
    int source = kTopKNodeTensors, dest = 0;
    while (len > kTopKChunk) {
      TopKPlan::Step step;
      step.source = source;
      step.dest = dest;
      TopKPass& p = step.pass;
      p.in_len = len;
      p.in_inner = source == kTopKNodeTensors ? inner : 1;
      p.rows = rows;
      p.chunks = (len + kTopKChunk - 1) / kTopKChunk;
      p.keep = k;
      p.out_len = p.chunks * k;
      p.out_inner = 1;
      p.out_int64 = false;
      buffer_elements[dest] = std::max(buffer_elements[dest], static_cast<size_t>(rows * p.out_len));
      plan.steps.push_back(step);
      len = p.out_len;
      source = dest;
      dest ^= 1;
    }
    TopKPlan::Step last;
    last.source = source;
    last.dest = kTopKNodeTensors;
    TopKPass& p = last.pass;
    p.in_len = len;
    p.in_inner = source == kTopKNodeTensors ? inner : 1;
    p.rows = rows;
    p.chunks = 1;
    p.keep = k;
    p.out_len = k;
    p.out_inner = inner;
    p.out_int64 = true;
    plan.steps.push_back(last);
  }
  // Buffer b: values, then int32 indices, each from a 256-byte boundary.
  size_t bytes = 0;
  for (int b = 0; b < 2; ++b) {
    plan.value_offset[b] = bytes;
    bytes += align_up(buffer_elements[b] * value_bytes);
    plan.index_offset[b] = bytes;
    bytes += align_up(buffer_elements[b] * sizeof(int32_t));
  }
  plan.workspace_bytes = bytes;
  return plan;
}

TopKPass bind_topk_pass(const TopKPlan& plan, size_t step, const void* x, void* values, int64_t* indices,
                        void* workspace) {
  const TopKPlan::Step& s = plan.steps[step];
  auto* ws = static_cast<unsigned char*>(workspace);
  TopKPass p = s.pass;
  if (s.source == kTopKNodeTensors) {
    p.in_values = x;
    p.in_indices = nullptr;
  } else {
    p.in_values = ws + plan.value_offset[s.source];
    p.in_indices = reinterpret_cast<const int32_t*>(ws + plan.index_offset[s.source]);
  }
  if (s.dest == kTopKNodeTensors) {
    p.out_values = values;
    p.out_indices = indices;
  } else {
    p.out_values = ws + plan.value_offset[s.dest];
    p.out_indices = ws + plan.index_offset[s.dest];
  }
  return p;
}

}  // namespace ember::cuda
