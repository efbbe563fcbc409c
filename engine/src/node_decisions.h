// What planning decided for one node at one input signature, kept across the plans of
// a session: a new set of input shapes then re-plans only the nodes whose inputs
// changed. A decoder's generation step, whose cached past grows by one token each
// time, changes its attention's shapes but not its projections, norms or MLPs: their
// shapes, kernels and folded values are the previous plan's, shared.
#pragma once

#include "engine/src/backend.h"
#include "graph/graph.h"
#include "graph/schema.h"
#include "ops/kernel.h"
#include "ops/registry.h"

#include <ember/core/tensor.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

struct NodeDecision {
  std::vector<TensorType> out_types;
  // Folded at plan time: the outputs (empty tensors for absent ones). Empty otherwise.
  std::vector<std::shared_ptr<const Tensor>> folded;
  // Placed: the backend and kernel chosen, its workspace, the --explain note it made.
  Backend* backend = nullptr;
  const KernelEntry* entry = nullptr;
  std::shared_ptr<const Kernel> kernel;
  size_t workspace = 0;
  double flops = 0;
  std::string note;
  // Plan-time values the kernel was built from (folded by the plan that made it): a
  // kernel may point into them, so they live as long as it does.
  std::vector<std::shared_ptr<const Tensor>> kernel_inputs;
};

// A node's input signature, as the key of its decision: the node, and per input its
// type, device and, where known at plan time, which weight it is or the bytes of a
// folded value. Folded values larger than kMaxFoldedBytes make no key (such a node is
// planned anew each time): a key is compared in full.
class NodeSignature {
 public:
  static constexpr size_t kMaxFoldedBytes = 4096;
  void start(const Node& node, int num_threads);
  void add_absent();  // an absent optional input
  // `known`: the value when known at plan time (else nullptr), a session weight or a
  // folded value. False when it makes no key (see above).
  bool add(const TensorType& type, Device device, const Tensor* known, bool is_weight);
  const std::string& key() const { return key_; }

 private:
  template <class T>
  void append(const T& v) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  std::string key_;
};

// The decisions of the plans a session holds. Plans own their decisions (shared): one
// lives as long as a plan made with it, and the memo forgets it with the last of them.
// Used by one planner at a time (the session plans under a lock).
class NodeDecisions {
 public:
  std::shared_ptr<const NodeDecision> find(const std::string& key) const;
  void add(const std::string& key, const std::shared_ptr<const NodeDecision>& decision);
  // Forgets decisions no plan holds any more (after plans were evicted), once enough
  // have been added since the last time that most may be such.
  void forget_unused();
  size_t size() const { return decisions_.size(); }
  // is_value_node (ops/value_ops.h) of a node of the session's graph, found once: every
  // plan asks it of every node.
  bool is_value_node(const Node& node);

 private:
  std::unordered_map<std::string, std::weak_ptr<const NodeDecision>> decisions_;
  std::unordered_map<const Node*, bool> value_nodes_;
  size_t size_after_forgetting_ = 0;
};

}  // namespace ember
