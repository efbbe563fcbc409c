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
#include <vector>

namespace ember {

// A branch goes to its true child when `x <mode> threshold` holds, or when x is NaN
// and the node's missing_tracks_true is set (as ONNX Runtime and the opset-5 reference
// define it for every mode). Member tests x against the node's set of values.
enum class TreeMode : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Member, Leaf };
enum class TreeAggregate : uint8_t { Sum, Average, Min, Max };

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

std::shared_ptr<const OpAttributes> parse_tree_ensemble_regressor(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_tree_ensemble_classifier(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_tree_ensemble(const Node& node, int64_t opset);

}  // namespace ember
