#include "engine/src/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace ember {

namespace {

bool overlaps(const Lifetime& a, const Lifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

// Greedy by size, largest first: each value goes in the lowest gap that no value
// alive at the same time occupies. Simple, and within a few percent of optimal on
// the chain-like graphs of CNNs and transformers.
ArenaLayout plan_arena(const std::vector<Lifetime>& lifetimes, size_t alignment) {
  ArenaLayout layout;
  layout.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return lifetimes[a].bytes > lifetimes[b].bytes;
  });

  std::vector<size_t> placed;
  for (size_t i : order) {
    const size_t size = (lifetimes[i].bytes + alignment - 1) / alignment * alignment;
    std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of conflicting values
    for (size_t j : placed)
      if (overlaps(lifetimes[i], lifetimes[j]))
        busy.emplace_back(layout.offsets[j],
                          layout.offsets[j] + (lifetimes[j].bytes + alignment - 1) / alignment * alignment);
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.peak_bytes = std::max(layout.peak_bytes, offset + size);
    placed.push_back(i);
  }
  return layout;
}

}  // namespace ember
