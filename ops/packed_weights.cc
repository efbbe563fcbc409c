#include "ops/packed_weights.h"

namespace ember {

std::shared_ptr<void> PackedWeights::get(const Tensor& weight, const std::string& form, size_t bytes,
                                         const Make& make, Device device) {
  auto key = std::make_pair(&weight, form);
  {
    std::lock_guard lock(mutex_);
    if (auto it = forms_.find(key); it != forms_.end()) return it->second.packed;
  }
  // Made outside the lock: a weight given back is packed from one of its other forms,
  // which make() reads through forms_of (under the lock, it waited on itself forever).
  std::shared_ptr<void> packed = make();
  std::lock_guard lock(mutex_);
  return forms_.emplace(std::move(key), Form{std::move(packed), bytes, device}).first->second.packed;  // the first made wins
}

std::vector<std::pair<std::string, std::shared_ptr<void>>> PackedWeights::forms_of(const Tensor& weight) const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::shared_ptr<void>>> result;
  for (auto it = forms_.lower_bound({&weight, std::string()}); it != forms_.end() && it->first.first == &weight; ++it)
    result.emplace_back(it->first.second, it->second.packed);
  return result;
}

size_t PackedWeights::bytes(Device device) const {
  std::lock_guard lock(mutex_);
  size_t sum = 0;
  for (const auto& [key, form] : forms_)
    if (form.device == device) sum += form.bytes;
  return sum;
}

size_t PackedWeights::forms() const {
  std::lock_guard lock(mutex_);
  return forms_.size();
}

}  // namespace ember
