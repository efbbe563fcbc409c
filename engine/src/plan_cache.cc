#include "engine/src/plan_cache.h"

#include <algorithm>
#include <mutex>

namespace ember {

Device output_device(std::span<const Tensor> outputs, size_t i) {
  return i < outputs.size() ? outputs[i].device() : Device{};
}

namespace {

bool same_signature(const Plan& plan, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  if (plan.input_shapes.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (plan.input_shapes[i] != inputs[i].shape() || !(plan.input_devices[i] == inputs[i].device())) return false;
  for (size_t i = 0; i < plan.output_devices.size(); ++i)
    if (!(plan.output_devices[i] == output_device(outputs, i))) return false;
  return true;
}

}  // namespace

size_t plan_bytes(const Plan& plan) {
  size_t bytes = 0;
  for (const auto& [device, arena] : plan.arena_bytes) bytes += arena;
  for (const auto& t : plan.folded) bytes += t->nbytes();
  for (const auto& t : plan.device_constants) bytes += t->nbytes();
  return bytes + plan.kernel_bytes;
}

std::shared_ptr<const Plan> PlanCache::find(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const {
  std::shared_lock lock(mutex_);
  for (const auto& e : entries_)
    if (same_signature(*e->plan, inputs, outputs)) {
      e->last_used.store(clock_.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return e->plan;
    }
  return nullptr;
}

std::shared_ptr<const Plan> PlanCache::add(std::unique_ptr<Plan> plan) {
  auto entry = std::make_unique<Entry>();
  entry->bytes = plan_bytes(*plan);
  entry->plan = std::move(plan);
  entry->last_used = clock_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::shared_ptr<const Plan> added = entry->plan;
  std::vector<std::shared_ptr<const Plan>> evicted;  // freed after the lock is let go
  std::unique_lock lock(mutex_);
  bytes_ += entry->bytes;
  entries_.push_back(std::move(entry));
  const size_t max_plans = std::max<size_t>(limits_.max_plans, 1);
  while (entries_.size() > 1 && (entries_.size() > max_plans || bytes_ > limits_.max_bytes)) {
    auto oldest = std::min_element(entries_.begin(), entries_.end() - 1, [](const auto& a, const auto& b) {
      return a->last_used.load(std::memory_order_relaxed) < b->last_used.load(std::memory_order_relaxed);
    });
    bytes_ -= (*oldest)->bytes;
    evicted_bytes_.fetch_add((*oldest)->bytes, std::memory_order_relaxed);
    evicted.push_back(std::move((*oldest)->plan));
    entries_.erase(oldest);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  lock.unlock();
  return added;
}

bool PlanCache::contains(uint64_t plan_id) const {
  std::shared_lock lock(mutex_);
  for (const auto& e : entries_)
    if (e->plan->id == plan_id) return true;
  return false;
}

std::vector<std::shared_ptr<const Plan>> PlanCache::plans() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const Plan>> result;
  for (const auto& e : entries_) result.push_back(e->plan);
  return result;
}

size_t PlanCache::size() const {
  std::shared_lock lock(mutex_);
  return entries_.size();
}

size_t PlanCache::bytes() const {
  std::shared_lock lock(mutex_);
  return bytes_;
}

}  // namespace ember
