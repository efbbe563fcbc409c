#include "ops/registry.h"

#include <ember/core/error.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

namespace ember {

namespace {

using Key = std::tuple<std::string, std::string, DeviceKind>;

std::map<Key, std::vector<KernelEntry>>& table() {
  static std::map<Key, std::vector<KernelEntry>> entries;
  return entries;
}

// The CUDA module registers its kernels when it is loaded, which may happen while
// another thread plans a CPU session. Entries never move once registered (map nodes
// are stable, and each key's vector is filled by one library's static initializers
// before anything looks that key up), so the pointers find_kernels returns stay valid.
std::mutex& table_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

bool register_kernel(KernelEntry entry) {
  std::lock_guard lock(table_mutex());
  auto& list = table()[{entry.domain, entry.op_type, entry.device}];
  list.push_back(std::move(entry));
  return true;
}

std::vector<const KernelEntry*> find_kernels(const std::string& domain, const std::string& op_type,
                                             int64_t opset, DeviceKind device) {
  std::vector<const KernelEntry*> found;
  std::lock_guard lock(table_mutex());
  auto it = table().find({domain, op_type, device});
  if (it == table().end()) return found;
  for (const auto& e : it->second)
    if (opset >= e.since_opset && opset <= e.until_opset) found.push_back(&e);
  return found;
}

std::vector<std::string> registered_ops(DeviceKind device) {
  std::set<std::string> names;
  std::lock_guard lock(table_mutex());
  for (const auto& [key, _] : table())
    if (std::get<2>(key) == device)
      names.insert(std::get<0>(key).empty() ? std::get<1>(key)
                                            : std::get<0>(key) + "::" + std::get<1>(key));
  return {names.begin(), names.end()};
}

void KernelInit::fail(const std::string& message) const {
  throw Error(node.label() + ": " + message);
}

}  // namespace ember
