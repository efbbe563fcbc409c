// Plans cached per signature — input shapes, and where the inputs and outputs live —
// in an LRU bounded by a count and by bytes, so a service that sees many input shapes
// holds a bounded number of plans. An evicted plan lives on while a run or a run
// context still holds it (shared_ptr), and is freed with the last of them.
#pragma once

#include "engine/src/plan.h"

#include <ember/core/tensor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <span>
#include <vector>

namespace ember {

// The session's options (SessionOptions::plan_cache_max_plans / _max_bytes) say them.
struct PlanCacheLimits {
  size_t max_plans = 0;  // at least one plan is always kept
  size_t max_bytes = 0;
};

// What a plan needs while it is cached and runs: its arenas and the constants folded
// for its shapes.
size_t plan_bytes(const Plan& plan);

// Where output i of a run lives: on the caller's tensor's device, on the host when the
// caller passes no outputs (make_outputs, explain).
Device output_device(std::span<const Tensor> outputs, size_t i);

class PlanCache {
 public:
  explicit PlanCache(PlanCacheLimits limits) : limits_(limits) {}

  // The cached plan for this signature (absent `outputs` mean host outputs), or
  // nullptr. Allocates nothing.
  std::shared_ptr<const Plan> find(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const;
  // Caches `plan`, then evicts the least recently used beyond the limits (never the
  // plan just added, so one plan larger than the byte budget still runs).
  std::shared_ptr<const Plan> add(std::unique_ptr<Plan> plan);

  bool contains(uint64_t plan_id) const;
  std::vector<std::shared_ptr<const Plan>> plans() const;
  size_t size() const;
  size_t bytes() const;
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  // The bytes (plan_bytes) of every plan evicted so far, summed.
  uint64_t evicted_bytes() const { return evicted_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::shared_ptr<const Plan> plan;
    size_t bytes = 0;
    mutable std::atomic<uint64_t> last_used{0};
  };
  PlanCacheLimits limits_;
  mutable std::shared_mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
  size_t bytes_ = 0;
  mutable std::atomic<uint64_t> clock_{0};
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> evicted_bytes_{0};
};

}  // namespace ember
