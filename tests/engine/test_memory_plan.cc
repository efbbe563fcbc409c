#include "engine/src/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ember {
namespace {

bool overlap_in_time(const Lifetime& a, const Lifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

TEST(MemoryPlan, ValuesAliveAtTheSameTimeNeverShareBytes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Lifetime> lifetimes;
    for (int i = 0; i < 40; ++i) {
      const int first = static_cast<int>(rng() % 30);
      lifetimes.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 6)});
    }
    const ArenaLayout layout = plan_arena(lifetimes);
    size_t live_max = 0;
    for (size_t i = 0; i < lifetimes.size(); ++i) {
      EXPECT_EQ(layout.offsets[i] % 64, 0u);
      EXPECT_LE(layout.offsets[i] + lifetimes[i].bytes, layout.peak_bytes);
      for (size_t j = i + 1; j < lifetimes.size(); ++j) {
        if (!overlap_in_time(lifetimes[i], lifetimes[j])) continue;
        const bool disjoint = layout.offsets[i] + lifetimes[i].bytes <= layout.offsets[j] ||
                              layout.offsets[j] + lifetimes[j].bytes <= layout.offsets[i];
        EXPECT_TRUE(disjoint) << "values " << i << " and " << j << " overlap";
      }
    }
    for (int step = 0; step < 36; ++step) {
      size_t live = 0;
      for (const auto& l : lifetimes)
        if (l.first_step <= step && step <= l.last_step) live += (l.bytes + 63) / 64 * 64;
      live_max = std::max(live_max, live);
    }
    EXPECT_GE(layout.peak_bytes, live_max);
    EXPECT_LE(layout.peak_bytes, live_max * 2) << "greedy layout far from the live maximum";
  }
}

// The greedy layout as first written: each value tested against every value placed
// before it. plan_arena finds the same conflicts through the steps, so the same layout.
ArenaLayout reference_layout(const std::vector<Lifetime>& lifetimes) {
  ArenaLayout layout;
  layout.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> order(lifetimes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  auto rounded = [&](size_t i) { return (lifetimes[i].bytes + 63) / 64 * 64; };
  std::vector<size_t> placed;
  for (size_t i : order) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (overlap_in_time(lifetimes[i], lifetimes[j])) busy.emplace_back(layout.offsets[j], layout.offsets[j] + rounded(j));
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + rounded(i) <= begin) break;
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.peak_bytes = std::max(layout.peak_bytes, offset + rounded(i));
    placed.push_back(i);
  }
  return layout;
}

TEST(MemoryPlan, SameLayoutAsTestingEveryPlacedValue) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<Lifetime> lifetimes;
    for (int i = 0; i < 200; ++i) {
      const int first = static_cast<int>(rng() % 150);
      // Mostly short lives, some across most of the steps (a residual stream, a value
      // the eager tail reads), some of equal sizes (ties keep their order).
      const int length = rng() % 10 == 0 ? static_cast<int>(rng() % 150) : static_cast<int>(rng() % 4);
      const size_t bytes = rng() % 4 == 0 ? 4096 : 1 + rng() % 100000;
      lifetimes.push_back({bytes, first, first + length});
    }
    const ArenaLayout got = plan_arena(lifetimes), want = reference_layout(lifetimes);
    EXPECT_EQ(got.offsets, want.offsets);
    EXPECT_EQ(got.peak_bytes, want.peak_bytes);
  }
}

TEST(MemoryPlan, ValuesWithDisjointLifetimesReuseBytes) {
  const ArenaLayout layout = plan_arena({{1000, 0, 1}, {1000, 2, 3}, {1000, 4, 5}});
  EXPECT_EQ(layout.peak_bytes, 1024u);
  EXPECT_EQ(layout.offsets[0], layout.offsets[1]);
}

}  // namespace
}  // namespace ember
