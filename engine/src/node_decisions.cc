#include "engine/src/node_decisions.h"

#include "ops/value_ops.h"

#include <cstdint>

namespace ember {

void NodeSignature::start(const Node& node, int num_threads) {
  key_.clear();
  key_.reserve(256);  // a few inputs' types: one allocation per node planned
  append(&node);
  append(num_threads);  // kernels are made for a thread count (a small plan's: one)
}

void NodeSignature::add_absent() { append('-'); }

bool NodeSignature::add(const TensorType& type, Device device, const Tensor* known, bool is_weight) {
  append(static_cast<int32_t>(type.dtype));
  append(static_cast<int32_t>(type.shape.size()));
  for (int64_t d : type.shape) append(d);
  append(static_cast<int32_t>(device.kind));
  append(static_cast<int32_t>(device.index));
  if (!known) {
    append('r');  // known only at run time
  } else if (is_weight) {
    append('w');  // a weight: the session's, at a fixed address
    append(known);
  } else {
    if (known->nbytes() > kMaxFoldedBytes || known->dtype() == DType::String) return false;
    append('f');
    key_.append(static_cast<const char*>(known->data()), known->nbytes());
  }
  return true;
}

std::shared_ptr<const NodeDecision> NodeDecisions::find(const std::string& key) const {
  auto it = decisions_.find(key);
  return it == decisions_.end() ? nullptr : it->second.lock();
}

void NodeDecisions::add(const std::string& key, const std::shared_ptr<const NodeDecision>& decision) {
  decisions_[key] = decision;
}

// Walks the memo only once it has doubled since the last walk: a plan evicted per new
// shape (a generation loop) then costs a walk every so many plans, not one each.
void NodeDecisions::forget_unused() {
  if (decisions_.size() < 2 * size_after_forgetting_) return;
  std::erase_if(decisions_, [](const auto& entry) { return entry.second.expired(); });
  size_after_forgetting_ = decisions_.size();
}

bool NodeDecisions::is_value_node(const Node& node) {
  auto [it, added] = value_nodes_.try_emplace(&node, false);
  if (added) it->second = ember::is_value_node(node);
  return it->second;
}

}  // namespace ember
