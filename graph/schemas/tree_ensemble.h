// The ai.onnx.ml tree ensembles (TreeEnsembleRegressor, TreeEnsembleClassifier, opsets
// 1-4, and TreeEnsemble, opset 5) as one validated forest, parsed once at load by the
// schemas in tree_ensemble.cc and read by every device's kernel. The three ops encode
// trees differently (ids per tree, or positions with separate leaves); here they are
// one array of nodes in which leaves are nodes too, so a kernel walks any of them the
// same way and never meets an id it has to look up.
#pragma once

#include "graph/schema.h"
#include "graph/schemas/ml.h"

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace ember {

// A branch goes to its true child when `x <mode> threshold` holds, or when x is NaN
// and the node's missing_tracks_true is set (as ONNX Runtime and the opset-5 reference
// define it for every mode). Member tests x against the node's set of values.
enum class TreeMode : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Member, Leaf };
enum class TreeAggregate : uint8_t { Sum, Average, Min, Max };

// One node as a kernel walks it: 20-24 bytes, so a step down a tree reads one cache
// line instead of one entry in each of five arrays. children[go_true] indexes the next
// node with no branch to mispredict.
template <class Th>
struct PackedTreeNode {
  Th threshold;
  int32_t feature;
  int32_t children[2];  // [false, true]
  TreeMode mode;
  uint8_t missing_tracks_true;
};

struct TreeEnsembleAttributes final : OpAttributes {
  // Per node (struct of arrays). A leaf's true and false children are itself, so a walk
  // may step on past a leaf without leaving it.
  std::vector<TreeMode> modes;
  std::vector<int64_t> features;
  std::vector<double> thresholds;  // as given (float or double values)
  std::vector<uint8_t> missing_tracks_true;
  std::vector<int32_t> true_children, false_children;
  // A leaf's (target, weight) pairs are entries [weight_begin[i], weight_begin[i + 1]).
  std::vector<int32_t> weight_begin;
  std::vector<int64_t> weight_targets;
  std::vector<double> weight_values;
  // A Member node's set is members[member_begin[i], member_begin[i + 1]), sorted.
  std::vector<int32_t> member_begin;
  std::vector<double> members;

  // The nodes packed, made once at load and shared by every plan's kernel: with float
  // thresholds (only when the model gives floats) and with double ones (always: double
  // and integer inputs compare in double).
  std::vector<PackedTreeNode<float>> packed_float;
  std::vector<PackedTreeNode<double>> packed_double;
  // The one mode of every branch, or Member for "mixed or set membership" (the generic
  // walk); Leaf when there is no branch at all.
  TreeMode uniform_mode = TreeMode::Leaf;

  std::vector<int32_t> roots;   // one per tree
  std::vector<int32_t> depths;  // per tree: the most steps from its root to a leaf
  int64_t num_features = 0;     // 1 + the largest feature a branch reads (X needs as many)
  int64_t num_targets = 1;      // outputs per row (classes for the classifier)
  bool thresholds_double = false;  // given as doubles: compare in double
  TreeAggregate aggregate = TreeAggregate::Sum;
  MlPostTransform post_transform = MlPostTransform::None;
  std::vector<double> base_values;  // empty, or one per target

  // TreeEnsembleClassifier only: the int64 label of each class and whether the model
  // scores only the second of two classes (all class_ids 0), the first's score then
  // being derived from it as the ONNX reference does.
  std::vector<int64_t> class_labels;
  bool binary = false;
};

// The packed node forms of a validated forest's node arrays, and its uniform mode.
template <class Th>
const std::vector<PackedTreeNode<Th>>& packed_nodes(const TreeEnsembleAttributes& a) {
  if constexpr (std::is_same_v<Th, float>) return a.packed_float;
  else return a.packed_double;
}

std::shared_ptr<const OpAttributes> parse_tree_ensemble_regressor(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_tree_ensemble_classifier(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_tree_ensemble(const Node& node, int64_t opset);

}  // namespace ember
