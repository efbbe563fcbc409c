// Schemas of the ai.onnx.ml tree ensembles. Their attributes come from model files, so
// every length, id and child is checked here, once, at load: a kernel then walks trees
// that are known to end (no cycle) and never reads outside X's row.
#include "graph/schemas/tree_ensemble.h"

#include <ember/core/element_types.h>
#include <ember/core/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace ember {

namespace {

using Attrs = TreeEnsembleAttributes;

std::string node_name(int64_t i) { return "tree node " + std::to_string(i); }

// Outputs per row. A model file can claim any n_targets; the kernel keeps a few hundred
// rows of sums per thread, so an absurd count must be an error, not an overflow.
constexpr int64_t kMaxTargets = int64_t{1} << 20;

void check_targets(int64_t targets) {
  if (targets < 1 || targets > kMaxTargets)
    throw Error("n_targets must be in [1, " + std::to_string(kMaxTargets) + "], got " + std::to_string(targets));
}

void check_length(size_t got, size_t want, const std::string& name, const std::string& like) {
  if (got != want)
    throw Error(name + " has " + std::to_string(got) + " entries but " + like + " has " + std::to_string(want));
}

TreeMode parse_legacy_mode(const std::string& s, size_t i) {
  static const std::map<std::string, TreeMode> modes = {
      {"BRANCH_LEQ", TreeMode::Leq}, {"BRANCH_LT", TreeMode::Lt},  {"BRANCH_GTE", TreeMode::Gte},
      {"BRANCH_GT", TreeMode::Gt},   {"BRANCH_EQ", TreeMode::Eq},  {"BRANCH_NEQ", TreeMode::Neq},
      {"LEAF", TreeMode::Leaf}};
  auto it = modes.find(s);
  if (it == modes.end())
    throw Error(node_name(static_cast<int64_t>(i)) + " has mode '" + s +
                "' (expected BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF)");
  return it->second;
}

TreeAggregate parse_aggregate(const std::string& s) {
  if (s == "SUM") return TreeAggregate::Sum;
  if (s == "AVERAGE") return TreeAggregate::Average;
  if (s == "MIN") return TreeAggregate::Min;
  if (s == "MAX") return TreeAggregate::Max;
  throw Error("aggregate_function '" + s + "' is not one of SUM, AVERAGE, MIN, MAX");
}

// base_values: none, one for every target, or one value every target starts from.
std::vector<double> expand_base_values(std::vector<double> base, int64_t targets) {
  if (base.size() == 1) return std::vector<double>(static_cast<size_t>(targets), base[0]);
  if (!base.empty() && static_cast<int64_t>(base.size()) != targets)
    throw Error("base_values has " + std::to_string(base.size()) + " entries; expected 1 or " +
                std::to_string(targets) + " (one per target)");
  return base;
}

// Gives each leaf its (target, weight) entries, in the order given. leaf_of[e] is the
// node entry e belongs to.
void set_leaf_weights(Attrs& a, const std::vector<int32_t>& leaf_of, const std::vector<int64_t>& targets,
                      const std::vector<double>& weights) {
  const size_t nodes = a.modes.size();
  a.weight_begin.assign(nodes + 1, 0);
  for (size_t e = 0; e < leaf_of.size(); ++e) {
    if (targets[e] < 0 || targets[e] >= a.num_targets)
      throw Error("weight entry " + std::to_string(e) + " is for target " + std::to_string(targets[e]) +
                  ", outside [0, " + std::to_string(a.num_targets) + ")");
    ++a.weight_begin[static_cast<size_t>(leaf_of[e]) + 1];
  }
  for (size_t i = 0; i < nodes; ++i) a.weight_begin[i + 1] += a.weight_begin[i];
  std::vector<int32_t> next(a.weight_begin.begin(), a.weight_begin.end() - 1);
  a.weight_targets.resize(leaf_of.size());
  a.weight_values.resize(leaf_of.size());
  for (size_t e = 0; e < leaf_of.size(); ++e) {
    const int32_t slot = next[static_cast<size_t>(leaf_of[e])]++;
    a.weight_targets[static_cast<size_t>(slot)] = targets[e];
    a.weight_values[static_cast<size_t>(slot)] = weights[e];
  }
}

// Checks that no walk from a root can loop and records each tree's depth: a depth-first
// search that meets a node still on its own path has found a cycle. Iterative, so a
// hostile chain of a million nodes does not overflow the stack.
template <class Th>
std::vector<PackedTreeNode<Th>> packed_as(const Attrs& a) {
  std::vector<PackedTreeNode<Th>> nodes(a.modes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    nodes[i] = {static_cast<Th>(a.thresholds[i]), static_cast<int32_t>(a.features[i]),
                {a.false_children[i], a.true_children[i]}, a.modes[i], a.missing_tracks_true[i]};
  return nodes;
}

// The kernels' forms of the checked nodes (tree_ensemble.h), made here, once per session.
void pack_nodes(Attrs& a) {
  if (!a.thresholds_double) a.packed_float = packed_as<float>(a);
  a.packed_double = packed_as<double>(a);
  bool one_mode = true;
  a.uniform_mode = TreeMode::Leaf;
  for (TreeMode m : a.modes) {
    if (m == TreeMode::Leaf) continue;
    if (a.uniform_mode == TreeMode::Leaf) a.uniform_mode = m;
    one_mode &= m == a.uniform_mode && m != TreeMode::Member;
  }
  if (!one_mode) a.uniform_mode = TreeMode::Member;  // stands for "mixed": the generic walk
}

void check_trees(Attrs& a) {
  const size_t n = a.modes.size();
  std::vector<int32_t> depth(n, -1);
  std::vector<uint8_t> on_path(n, 0);
  std::vector<int32_t> stack;
  for (int32_t root : a.roots) {
    stack.push_back(root);
    while (!stack.empty()) {
      const int32_t i = stack.back();
      const size_t u = static_cast<size_t>(i);
      if (depth[u] >= 0) {
        stack.pop_back();
        continue;
      }
      if (a.modes[u] == TreeMode::Leaf) {
        depth[u] = 0;
        stack.pop_back();
        continue;
      }
      on_path[u] = 1;
      bool pushed = false;
      for (int32_t child : {a.true_children[u], a.false_children[u]}) {
        const size_t c = static_cast<size_t>(child);
        if (depth[c] >= 0) continue;
        if (on_path[c])
          throw Error(node_name(i) + " leads back to " + node_name(child) + ": the trees have a cycle");
        stack.push_back(child);
        pushed = true;
      }
      if (pushed) continue;
      depth[u] = 1 + std::max(depth[static_cast<size_t>(a.true_children[u])],
                              depth[static_cast<size_t>(a.false_children[u])]);
      on_path[u] = 0;
      stack.pop_back();
    }
    a.depths.push_back(depth[static_cast<size_t>(root)]);
  }
  a.num_features = 0;
  for (size_t i = 0; i < n; ++i) {
    if (a.modes[i] == TreeMode::Leaf) continue;
    if (a.features[i] < 0)
      throw Error(node_name(static_cast<int64_t>(i)) + " reads feature " + std::to_string(a.features[i]));
    a.num_features = std::max(a.num_features, a.features[i] + 1);
  }
}

// TreeEnsembleRegressor and TreeEnsembleClassifier (opsets 1-4): nodes named by
// (tree id, node id), children by node id within the tree, leaf weights by
// (tree id, node id). `prefix` is "target" or "class".
std::shared_ptr<Attrs> parse_legacy(const Node& node, const std::string& prefix, int64_t num_targets) {
  const Attributes& at = node.attributes;
  check_targets(num_targets);
  auto a = std::make_shared<Attrs>();
  a->num_targets = num_targets;
  const auto tree_ids = at.get_ints_or("nodes_treeids", {});
  const auto node_ids = at.get_ints_or("nodes_nodeids", {});
  const auto features = at.get_ints_or("nodes_featureids", {});
  const auto modes = at.get_strings_or("nodes_modes", {});
  const auto true_ids = at.get_ints_or("nodes_truenodeids", {});
  const auto false_ids = at.get_ints_or("nodes_falsenodeids", {});
  const auto missing = at.get_ints_or("nodes_missing_value_tracks_true", {});
  const auto thresholds = ml_floats_or_tensor(node, "nodes_values", &a->thresholds_double);
  const size_t n = tree_ids.size();
  if (n == 0) throw Error("nodes_treeids is empty: the ensemble has no trees");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) throw Error("too many tree nodes");
  check_length(node_ids.size(), n, "nodes_nodeids", "nodes_treeids");
  check_length(features.size(), n, "nodes_featureids", "nodes_treeids");
  check_length(modes.size(), n, "nodes_modes", "nodes_treeids");
  check_length(true_ids.size(), n, "nodes_truenodeids", "nodes_treeids");
  check_length(false_ids.size(), n, "nodes_falsenodeids", "nodes_treeids");
  check_length(thresholds.size(), n, "nodes_values", "nodes_treeids");
  if (!missing.empty()) check_length(missing.size(), n, "nodes_missing_value_tracks_true", "nodes_treeids");

  std::map<std::pair<int64_t, int64_t>, int32_t> index;
  std::map<int64_t, int32_t> roots;  // tree id -> its first node, trees in id order
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(std::make_pair(tree_ids[i], node_ids[i]), static_cast<int32_t>(i)).second)
      throw Error(node_name(static_cast<int64_t>(i)) + ": tree " + std::to_string(tree_ids[i]) + " has node id " +
                  std::to_string(node_ids[i]) + " twice");
    roots.emplace(tree_ids[i], static_cast<int32_t>(i));
  }
  auto child = [&](size_t i, int64_t id, const char* which) {
    auto it = index.find({tree_ids[i], id});
    if (it == index.end())
      throw Error(node_name(static_cast<int64_t>(i)) + ": its " + which + " child id " + std::to_string(id) +
                  " is not a node of tree " + std::to_string(tree_ids[i]));
    return it->second;
  };
  for (size_t i = 0; i < n; ++i) {
    const TreeMode mode = parse_legacy_mode(modes[i], i);
    const bool leaf = mode == TreeMode::Leaf;
    const auto self = static_cast<int32_t>(i);
    a->modes.push_back(mode);
    a->features.push_back(leaf ? 0 : features[i]);
    a->thresholds.push_back(thresholds[i]);
    a->missing_tracks_true.push_back(!missing.empty() && missing[i] != 0);
    a->true_children.push_back(leaf ? self : child(i, true_ids[i], "true"));
    a->false_children.push_back(leaf ? self : child(i, false_ids[i], "false"));
  }
  for (const auto& [_, root] : roots) a->roots.push_back(root);
  a->member_begin.assign(n + 1, 0);

  const auto w_trees = at.get_ints_or(prefix + "_treeids", {});
  const auto w_nodes = at.get_ints_or(prefix + "_nodeids", {});
  const auto w_targets = at.get_ints_or(prefix + "_ids", {});
  const auto w_values = ml_floats_or_tensor(node, prefix + "_weights");
  check_length(w_nodes.size(), w_trees.size(), prefix + "_nodeids", prefix + "_treeids");
  check_length(w_targets.size(), w_trees.size(), prefix + "_ids", prefix + "_treeids");
  check_length(w_values.size(), w_trees.size(), prefix + "_weights", prefix + "_treeids");
  std::vector<int32_t> leaf_of(w_trees.size());
  for (size_t e = 0; e < w_trees.size(); ++e) {
    auto it = index.find({w_trees[e], w_nodes[e]});
    if (it == index.end() || a->modes[static_cast<size_t>(it->second)] != TreeMode::Leaf)
      throw Error(prefix + " weight " + std::to_string(e) + " names tree " + std::to_string(w_trees[e]) +
                  " node " + std::to_string(w_nodes[e]) + ", which is not a leaf");
    leaf_of[e] = it->second;
  }
  set_leaf_weights(*a, leaf_of, w_targets, w_values);
  a->base_values = expand_base_values(ml_floats_or_tensor(node, "base_values"), num_targets);
  a->post_transform = parse_ml_post_transform(at.get_string_or("post_transform", "NONE"));
  check_trees(*a);
  pack_nodes(*a);
  return a;
}

}  // namespace

std::shared_ptr<const OpAttributes> parse_tree_ensemble_regressor(const Node& node, int64_t) {
  auto a = parse_legacy(node, "target", node.attributes.get_int_or("n_targets", 1));
  a->aggregate = parse_aggregate(node.attributes.get_string_or("aggregate_function", "SUM"));
  return a;
}

std::shared_ptr<const OpAttributes> parse_tree_ensemble_classifier(const Node& node, int64_t) {
  if (node.attributes.has("classlabels_strings"))
    throw Error("classlabels_strings is set: the session gives the labels' positions instead (lower_string_class_labels)");
  const auto labels = node.attributes.get_ints_or("classlabels_int64s", {});
  if (labels.size() < 2) throw Error("classlabels_int64s must name at least 2 classes");
  auto a = parse_legacy(node, "class", static_cast<int64_t>(labels.size()));
  a->class_labels = labels;
  const auto ids = node.attributes.get_ints_or("class_ids", {});
  a->binary = labels.size() == 2 && std::all_of(ids.begin(), ids.end(), [](int64_t c) { return c == 0; });
  return a;
}

std::shared_ptr<const OpAttributes> parse_tree_ensemble(const Node& node, int64_t) {
  const Attributes& at = node.attributes;
  auto a = std::make_shared<Attrs>();
  const auto features = at.get_ints("nodes_featureids");
  const auto true_ids = at.get_ints("nodes_truenodeids");
  const auto false_ids = at.get_ints("nodes_falsenodeids");
  const auto true_leafs = at.get_ints("nodes_trueleafs");
  const auto false_leafs = at.get_ints("nodes_falseleafs");
  const auto missing = at.get_ints_or("nodes_missing_value_tracks_true", {});
  const auto leaf_targets = at.get_ints("leaf_targetids");
  const auto roots = at.get_ints("tree_roots");
  const Tensor& modes = at.get_tensor("nodes_modes");
  const Tensor& splits = at.get_tensor("nodes_splits");
  const Tensor& leaf_weights = at.get_tensor("leaf_weights");
  if (modes.dtype() != DType::UInt8) throw Error("nodes_modes must be a uint8 tensor");
  auto floats = [](const Tensor& t, const char* name) {
    std::vector<double> v(static_cast<size_t>(t.numel()));
    bool ok = dispatch(TypeList<float, double, Float16>{}, t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(t.data_as<T>()[i]));
    });
    if (!ok) throw Error(std::string(name) + " must be a float, double or float16 tensor");
    return v;
  };
  const auto thresholds = floats(splits, "nodes_splits");
  const auto weights = floats(leaf_weights, "leaf_weights");
  a->thresholds_double = splits.dtype() == DType::Float64;

  const size_t n = features.size(), leaves = leaf_targets.size();
  if (n == 0 || roots.empty()) throw Error("the ensemble has no trees (nodes_featureids or tree_roots is empty)");
  if (n + leaves > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) throw Error("too many tree nodes");
  check_length(true_ids.size(), n, "nodes_truenodeids", "nodes_featureids");
  check_length(false_ids.size(), n, "nodes_falsenodeids", "nodes_featureids");
  check_length(true_leafs.size(), n, "nodes_trueleafs", "nodes_featureids");
  check_length(false_leafs.size(), n, "nodes_falseleafs", "nodes_featureids");
  check_length(static_cast<size_t>(modes.numel()), n, "nodes_modes", "nodes_featureids");
  check_length(thresholds.size(), n, "nodes_splits", "nodes_featureids");
  if (!missing.empty()) check_length(missing.size(), n, "nodes_missing_value_tracks_true", "nodes_featureids");
  check_length(weights.size(), leaves, "leaf_weights", "leaf_targetids");

  // Interior nodes keep their positions; leaf j becomes node n + j.
  auto child = [&](size_t i, int64_t id, int64_t is_leaf, const char* which) {
    const size_t limit = is_leaf ? leaves : n;
    if (id < 0 || static_cast<size_t>(id) >= limit)
      throw Error(node_name(static_cast<int64_t>(i)) + ": its " + which + " child " + std::to_string(id) +
                  " is outside [0, " + std::to_string(limit) + ") " + (is_leaf ? "leaves" : "nodes"));
    return static_cast<int32_t>(is_leaf ? n + static_cast<size_t>(id) : static_cast<size_t>(id));
  };
  std::vector<double> member_values;
  if (at.has("membership_values")) member_values = floats(at.get_tensor("membership_values"), "membership_values");
  size_t next_member = 0;
  a->member_begin.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t m = modes.data_as<uint8_t>()[i];
    if (m > 6) throw Error(node_name(static_cast<int64_t>(i)) + " has mode " + std::to_string(m) + " (expected 0 to 6)");
    a->modes.push_back(static_cast<TreeMode>(m));
    a->features.push_back(features[i]);
    a->thresholds.push_back(thresholds[i]);
    a->missing_tracks_true.push_back(!missing.empty() && missing[i] != 0);
    a->true_children.push_back(child(i, true_ids[i], true_leafs[i], "true"));
    a->false_children.push_back(child(i, false_ids[i], false_leafs[i], "false"));
    if (a->modes.back() == TreeMode::Member) {
      // This node's set runs up to the next NaN in membership_values.
      if (next_member >= member_values.size())
        throw Error(node_name(static_cast<int64_t>(i)) + " is a set-membership node but membership_values has no set left for it");
      const size_t begin = a->members.size();
      while (next_member < member_values.size() && !std::isnan(member_values[next_member]))
        a->members.push_back(member_values[next_member++]);
      ++next_member;  // the NaN that ends the set
      std::sort(a->members.begin() + static_cast<std::ptrdiff_t>(begin), a->members.end());
    }
    a->member_begin.push_back(static_cast<int32_t>(a->members.size()));
  }
  if (next_member < member_values.size())
    throw Error("membership_values has more sets than there are set-membership nodes");
  for (size_t j = 0; j < leaves; ++j) {
    const auto self = static_cast<int32_t>(n + j);
    a->modes.push_back(TreeMode::Leaf);
    a->features.push_back(0);
    a->thresholds.push_back(0);
    a->missing_tracks_true.push_back(0);
    a->true_children.push_back(self);
    a->false_children.push_back(self);
    a->member_begin.push_back(a->member_begin.back());
  }
  for (int64_t r : roots) {
    if (r < 0 || static_cast<size_t>(r) >= n)
      throw Error("tree root " + std::to_string(r) + " is outside [0, " + std::to_string(n) + ") nodes");
    a->roots.push_back(static_cast<int32_t>(r));
  }
  const int64_t max_target =
      leaf_targets.empty() ? 0 : *std::max_element(leaf_targets.begin(), leaf_targets.end());
  // n_targets is optional in the schema; without it, every target a leaf names.
  a->num_targets = at.get_int_or("n_targets", max_target + 1);
  check_targets(a->num_targets);
  std::vector<int32_t> leaf_of(leaves);
  for (size_t j = 0; j < leaves; ++j) leaf_of[j] = static_cast<int32_t>(n + j);
  set_leaf_weights(*a, leaf_of, leaf_targets, weights);

  const int64_t aggregate = at.get_int_or("aggregate_function", 1);
  const int64_t post = at.get_int_or("post_transform", 0);
  if (aggregate < 0 || aggregate > 3) throw Error("aggregate_function must be 0 to 3, got " + std::to_string(aggregate));
  if (post < 0 || post > 4) throw Error("post_transform must be 0 to 4, got " + std::to_string(post));
  static constexpr TreeAggregate kAggregates[] = {TreeAggregate::Average, TreeAggregate::Sum, TreeAggregate::Min,
                                                  TreeAggregate::Max};
  static constexpr MlPostTransform kTransforms[] = {MlPostTransform::None, MlPostTransform::Softmax,
                                                    MlPostTransform::Logistic, MlPostTransform::SoftmaxZero,
                                                    MlPostTransform::Probit};
  a->aggregate = kAggregates[aggregate];
  a->post_transform = kTransforms[post];
  check_trees(*a);
  pack_nodes(*a);
  return a;
}

namespace {

// X is [N, F] (or [F], one row); every feature a branch reads must be a column of it.
int64_t tree_rows(const InferContext& ctx, const Attrs& a) {
  const TensorType& x = ctx.input(0);
  if (x.shape.empty() || x.shape.size() > 2)
    ctx.fail("X must be [N, F] or [F], got " + shape_to_string(x.shape));
  if (x.shape.back() < a.num_features)
    ctx.fail("X has " + std::to_string(x.shape.back()) + " features but the trees read feature " +
             std::to_string(a.num_features - 1));
  return x.shape.size() == 2 ? x.shape[0] : 1;
}

bool legacy_input_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int32 || d == DType::Int64;
}

std::vector<TensorType> infer_tree_regressor(const InferContext& ctx) {
  const auto a = attributes_of<Attrs>(ctx.node, ctx.opset);
  if (!legacy_input_dtype(ctx.input(0).dtype)) ctx.fail("X must be float, double, int32 or int64");
  return {{DType::Float32, {tree_rows(ctx, *a), a->num_targets}}};
}

std::vector<TensorType> infer_tree_classifier(const InferContext& ctx) {
  const auto a = attributes_of<Attrs>(ctx.node, ctx.opset);
  if (!legacy_input_dtype(ctx.input(0).dtype)) ctx.fail("X must be float, double, int32 or int64");
  const int64_t rows = tree_rows(ctx, *a);
  return {{DType::Int64, {rows}}, {DType::Float32, {rows, a->num_targets}}};
}

std::vector<TensorType> infer_tree_ensemble(const InferContext& ctx) {
  const auto a = attributes_of<Attrs>(ctx.node, ctx.opset);
  const DType d = ctx.input(0).dtype;
  if (d != DType::Float32 && d != DType::Float64 && d != DType::Float16) ctx.fail("X must be float, double or float16");
  return {{d, {tree_rows(ctx, *a), a->num_targets}}};
}

}  // namespace

EMBER_SCHEMA("TreeEnsembleRegressor", kMlDomain, infer_tree_regressor, parse_tree_ensemble_regressor);
EMBER_SCHEMA("TreeEnsembleClassifier", kMlDomain, infer_tree_classifier, parse_tree_ensemble_classifier);
EMBER_SCHEMA("TreeEnsemble", kMlDomain, infer_tree_ensemble, parse_tree_ensemble);

}  // namespace ember
