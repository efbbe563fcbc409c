#include "engine/src/node_decisions.h"

#include <cstdint>

namespace ember {

bool NodeSignature::make(const Node& node, std::span<const TensorType> types, std::span<const Tensor* const> values,
                         const std::vector<bool>& is_weight, std::span<const Device> devices) {
  key_.clear();
  append(&node);
  for (size_t i = 0; i < types.size(); ++i) {
    const TensorType& t = types[i];
    append(static_cast<int32_t>(t.dtype));
    append(static_cast<int32_t>(t.shape.size()));
    for (int64_t d : t.shape) append(d);
    append(static_cast<int32_t>(devices[i].kind));
    append(static_cast<int32_t>(devices[i].index));
    const Tensor* v = values[i];
    if (!v) {
      append('r');  // known only at run time
    } else if (is_weight[i]) {
      append('w');  // a weight: the session's, at a fixed address
      append(v);
    } else {
      if (v->nbytes() > kMaxFoldedBytes || v->dtype() == DType::String) return false;
      append('f');
      key_.append(static_cast<const char*>(v->data()), v->nbytes());
    }
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

}  // namespace ember
