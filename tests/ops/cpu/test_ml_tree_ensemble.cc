// The ai.onnx.ml tree ensembles against a plain reference written here: it walks each
// row down each tree by (tree id, node id) lookups, the way the ONNX spec words it, on
// random forests with every branch mode, NaN inputs, several targets, each aggregate and
// post_transform; TreeEnsemble (opset 5) on the same forests re-encoded. Bad attributes
// (lengths, ids, cycles, features outside X, string labels) are one clear ember::Error.
#include <ember/core/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/evaluate.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::make_node;

const char* const kMl = "ai.onnx.ml";
const std::vector<std::string> kModes = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                         "BRANCH_GT",  "BRANCH_EQ", "BRANCH_NEQ"};

// A forest in the opset 1-4 encoding.
struct Forest {
  std::vector<int64_t> tree_ids, node_ids, features, true_ids, false_ids, missing;
  std::vector<std::string> modes;
  std::vector<float> thresholds;
  std::vector<int64_t> w_trees, w_nodes, w_targets;
  std::vector<float> w_values;
};

// Random trees of up to `depth` levels; node ids are shuffled within each tree so the
// walk cannot rely on any order. Thresholds are drawn from a few values so EQ/NEQ
// branches see equal inputs.
Forest random_forest(int trees, int depth, int features, int targets, const std::vector<std::string>& modes,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> coin(0, 3);
  Forest f;
  for (int t = 0; t < trees; ++t) {
    // Build breadth-first into local arrays, then give shuffled ids.
    std::vector<int> level_of{0};
    std::vector<bool> leaf;
    std::vector<int> tchild, fchild;
    for (size_t i = 0; i < level_of.size(); ++i) {
      const bool is_leaf = level_of[i] == depth || (level_of[i] > 0 && coin(rng) == 0);
      leaf.push_back(is_leaf);
      tchild.push_back(-1);
      fchild.push_back(-1);
      if (!is_leaf) {
        tchild[i] = static_cast<int>(level_of.size());
        level_of.push_back(level_of[i] + 1);
        fchild[i] = static_cast<int>(level_of.size());
        level_of.push_back(level_of[i] + 1);
      }
    }
    const int n = static_cast<int>(level_of.size());
    std::vector<int64_t> id(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) id[static_cast<size_t>(i)] = i * 3 + 7;
    std::shuffle(id.begin() + 1, id.end(), rng);  // the root stays first, as the spec's root is
    for (int i = 0; i < n; ++i) {
      const size_t u = static_cast<size_t>(i);
      f.tree_ids.push_back(t * 5 + 2);
      f.node_ids.push_back(id[u]);
      f.features.push_back(leaf[u] ? 0 : std::uniform_int_distribution<int>(0, features - 1)(rng));
      f.modes.push_back(leaf[u] ? "LEAF" : modes[std::uniform_int_distribution<size_t>(0, modes.size() - 1)(rng)]);
      f.thresholds.push_back(static_cast<float>(std::uniform_int_distribution<int>(-4, 4)(rng)) * 0.25f);
      f.true_ids.push_back(leaf[u] ? 0 : id[static_cast<size_t>(tchild[u])]);
      f.false_ids.push_back(leaf[u] ? 0 : id[static_cast<size_t>(fchild[u])]);
      f.missing.push_back(coin(rng) & 1);
      if (leaf[u]) {
        // One or two weights per leaf, for random targets.
        for (int k = 0; k < 1 + (coin(rng) == 0); ++k) {
          f.w_trees.push_back(t * 5 + 2);
          f.w_nodes.push_back(id[u]);
          f.w_targets.push_back(std::uniform_int_distribution<int>(0, targets - 1)(rng));
          f.w_values.push_back(std::uniform_real_distribution<float>(-2, 2)(rng));
        }
      }
    }
  }
  return f;
}

// Inputs on the thresholds' grid (so EQ hits), with a few NaNs.
Tensor forest_input(int64_t rows, int64_t features, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x(DType::Float32, {rows, features});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int k = std::uniform_int_distribution<int>(-5, 5)(rng);
    x.data_as<float>()[i] = k == 5 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(k) * 0.25f;
  }
  return x;
}

void set_strings(Node& node, const std::string& name, std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  node.attributes.set(name, std::move(a));
}

Node legacy_node(const std::string& op, const Forest& f, const std::string& prefix) {
  Node node = make_node(op, {"X"}, op == "TreeEnsembleClassifier" ? std::vector<std::string>{"Y", "Z"}
                                                                    : std::vector<std::string>{"Y"},
                        {}, kMl);
  Attributes& a = node.attributes;
  a.set_ints("nodes_treeids", f.tree_ids);
  a.set_ints("nodes_nodeids", f.node_ids);
  a.set_ints("nodes_featureids", f.features);
  a.set_ints("nodes_truenodeids", f.true_ids);
  a.set_ints("nodes_falsenodeids", f.false_ids);
  a.set_ints("nodes_missing_value_tracks_true", f.missing);
  a.set_floats("nodes_values", f.thresholds);
  set_strings(node, "nodes_modes", f.modes);
  a.set_ints(prefix + "_treeids", f.w_trees);
  a.set_ints(prefix + "_nodeids", f.w_nodes);
  a.set_ints(prefix + "_ids", f.w_targets);
  a.set_floats(prefix + "_weights", f.w_values);
  return node;
}

// ---- the reference --------------------------------------------------------------------

bool branch(const std::string& mode, double x, double th, bool missing_true) {
  if (std::isnan(x) && missing_true) return true;
  if (mode == "BRANCH_LEQ") return x <= th;
  if (mode == "BRANCH_LT") return x < th;
  if (mode == "BRANCH_GTE") return x >= th;
  if (mode == "BRANCH_GT") return x > th;
  if (mode == "BRANCH_EQ") return x == th;
  return x != th;
}

double probit(double p) {  // the spec's (and ONNX Runtime's) erf-inverse approximation
  const double x = 2 * p - 1, sign = x < 0 ? -1 : 1, y = (1 - x) * (1 + x);
  if (y == 0) return 0;
  const double l = std::log(y), a = 2 / (M_PI * 0.147) + 0.5 * l, b = l / 0.147;
  return 1.41421356 * sign * std::sqrt(-a + std::sqrt(a * a - b));
}

void transform(const std::string& post, std::vector<double>& v) {
  if (post == "LOGISTIC") for (double& x : v) x = 1 / (1 + std::exp(-x));
  if (post == "PROBIT") for (double& x : v) x = probit(x);
  if (post == "SOFTMAX" || post == "SOFTMAX_ZERO") {
    const double top = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double& x : v) sum += x = (post == "SOFTMAX" || std::abs(x) > 1e-7) ? std::exp(x - top) : x * std::exp(-top);
    for (double& x : v) x /= sum;
  }
}

// Per row, per target: the aggregated leaf weights (0 where no leaf gave one).
std::vector<std::vector<double>> reference_sums(const Forest& f, const Tensor& x, int64_t targets,
                                                const std::string& aggregate) {
  std::map<std::pair<int64_t, int64_t>, size_t> index;
  std::map<int64_t, size_t> roots;
  for (size_t i = 0; i < f.tree_ids.size(); ++i) {
    index[{f.tree_ids[i], f.node_ids[i]}] = i;
    roots.emplace(f.tree_ids[i], i);
  }
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  std::vector<std::vector<double>> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> sum(static_cast<size_t>(targets), 0);
    std::vector<bool> has(static_cast<size_t>(targets), false);
    for (const auto& [tree, root] : roots) {
      size_t i = root;
      while (f.modes[i] != "LEAF") {
        const double v = x.data_as<float>()[r * cols + f.features[i]];
        const bool t = branch(f.modes[i], v, f.thresholds[i], f.missing[i] != 0);
        i = index.at({tree, t ? f.true_ids[i] : f.false_ids[i]});
      }
      for (size_t e = 0; e < f.w_trees.size(); ++e) {
        if (f.w_trees[e] != tree || f.w_nodes[e] != f.node_ids[i]) continue;
        const size_t k = static_cast<size_t>(f.w_targets[e]);
        const double w = f.w_values[e];
        if (aggregate == "MIN") sum[k] = has[k] ? std::min(sum[k], w) : w;
        else if (aggregate == "MAX") sum[k] = has[k] ? std::max(sum[k], w) : w;
        else sum[k] += w;
        has[k] = true;
      }
    }
    if (aggregate == "AVERAGE")
      for (double& s : sum) s /= static_cast<double>(roots.size());
    out.push_back(sum);
  }
  return out;
}

// float32 leaf weights summed over up to 30 trees, and transforms in float: 1e-5
// relative, 1e-5 absolute.
constexpr double kTol = 1e-5;

TEST(TreeEnsembleRegressor, MatchesReferenceForEveryAggregateAndTransform) {
  const int64_t targets = 3, features = 6;
  const Forest f = random_forest(12, 5, static_cast<int>(features), static_cast<int>(targets), kModes, 11);
  const Tensor x = forest_input(41, features, 12);
  const std::vector<float> base = {0.5f, -1.25f, 2.0f};
  for (const std::string aggregate : {"SUM", "AVERAGE", "MIN", "MAX"}) {
    // PROBIT is checked below, on scores inside (0, 1) where it is defined.
    for (const std::string post : {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"}) {
      Node node = legacy_node("TreeEnsembleRegressor", f, "target");
      node.attributes.set_int("n_targets", targets);
      node.attributes.set_string("aggregate_function", aggregate);
      node.attributes.set_string("post_transform", post);
      node.attributes.set_floats("base_values", base);
      const auto out = evaluate_node(node, 3, {&x});
      ASSERT_EQ(out[0].shape(), (Shape{41, targets}));
      std::vector<double> want;
      for (auto row : reference_sums(f, x, targets, aggregate)) {
        for (size_t k = 0; k < row.size(); ++k) row[k] += base[k];
        transform(post, row);
        want.insert(want.end(), row.begin(), row.end());
      }
      expect_close(out[0], want, kTol, kTol, "regressor " + aggregate + " " + post);
    }
  }
}

TEST(TreeEnsembleRegressor, ProbitMatchesReferenceInsideUnitInterval) {
  // Leaf weights in (0, 0.5) on one target with MAX: scores stay inside (0, 1).
  Forest f = random_forest(5, 4, 4, 1, kModes, 21);
  for (float& w : f.w_values) w = std::abs(w) * 0.2f + 0.05f;
  const Tensor x = forest_input(17, 4, 22);
  Node node = legacy_node("TreeEnsembleRegressor", f, "target");
  node.attributes.set_string("aggregate_function", "MAX");
  node.attributes.set_string("post_transform", "PROBIT");
  const auto out = evaluate_node(node, 1, {&x});
  std::vector<double> want;
  for (auto row : reference_sums(f, x, 1, "MAX")) {
    transform("PROBIT", row);
    want.push_back(row[0]);
  }
  expect_close(out[0], want, 1e-4, 1e-5, "regressor PROBIT");
}

TEST(TreeEnsembleRegressor, DoubleThresholdsAndInputsCompareInDouble) {
  // 0.1 as a double threshold: a float input of 0.1f (> 0.1) must go false under LEQ,
  // which comparing in float would get wrong.
  Node node = make_node("TreeEnsembleRegressor", {"X"}, {"Y"}, {}, kMl);
  Attributes& a = node.attributes;
  a.set_ints("nodes_treeids", {0, 0, 0});
  a.set_ints("nodes_nodeids", {0, 1, 2});
  a.set_ints("nodes_featureids", {0, 0, 0});
  a.set_ints("nodes_truenodeids", {1, 0, 0});
  a.set_ints("nodes_falsenodeids", {2, 0, 0});
  set_strings(node, "nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF"});
  Tensor th(DType::Float64, {3});
  th.data_as<double>()[0] = 0.1;
  th.data_as<double>()[1] = th.data_as<double>()[2] = 0;
  a.set_tensor("nodes_values_as_tensor", th);
  a.set_ints("target_treeids", {0, 0});
  a.set_ints("target_nodeids", {1, 2});
  a.set_ints("target_ids", {0, 0});
  Tensor w(DType::Float64, {2});
  w.data_as<double>()[0] = 1;
  w.data_as<double>()[1] = 2;
  a.set_tensor("target_weights_as_tensor", w);
  const Tensor xf = test::from_values(DType::Float32, {2, 1}, {0.1, 0.0999});
  expect_close(evaluate_node(node, 3, {&xf})[0], std::vector<double>{2, 1}, 0, 0, "float X, double thresholds");
  const Tensor xi = test::from_values(DType::Int64, {2, 1}, {0, 1});
  expect_close(evaluate_node(node, 3, {&xi})[0], std::vector<double>{1, 2}, 0, 0, "int64 X");
}

TEST(TreeEnsembleClassifier, MatchesReferenceMulticlass) {
  const int64_t classes = 4, features = 5;
  const Forest f = random_forest(9, 4, static_cast<int>(features), static_cast<int>(classes), kModes, 31);
  const Tensor x = forest_input(29, features, 32);
  const std::vector<int64_t> labels = {10, -3, 7, 42};
  for (const std::string post : {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"}) {
    Node node = legacy_node("TreeEnsembleClassifier", f, "class");
    node.attributes.set_ints("classlabels_int64s", labels);
    node.attributes.set_string("post_transform", post);
    node.attributes.set_floats("base_values", {0.1f, 0.2f, -0.3f, 0.0f});
    const auto out = evaluate_node(node, 3, {&x});
    ASSERT_EQ(out[0].shape(), (Shape{29}));
    ASSERT_EQ(out[1].shape(), (Shape{29, classes}));
    std::vector<double> want_scores, want_labels;
    for (auto row : reference_sums(f, x, classes, "SUM")) {
      const double base[] = {0.1f, 0.2f, -0.3f, 0.0f};
      for (size_t k = 0; k < row.size(); ++k) row[k] += base[k];
      transform(post, row);
      want_scores.insert(want_scores.end(), row.begin(), row.end());
      want_labels.push_back(static_cast<double>(labels[static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin())]));
    }
    expect_close(out[1], want_scores, kTol, kTol, "classifier scores " + post);
    expect_close(out[0], want_labels, 0, 0, "classifier labels " + post);
  }
}

TEST(TreeEnsembleClassifier, BinaryWithOneClassWeight) {
  // Every weight on class 0: the model scores the positive class only (as gradient
  // boosting exports do); the negative class's score is 1 - s (NONE) or -s (LOGISTIC).
  const Forest f = random_forest(7, 3, 3, 1, kModes, 41);
  const Tensor x = forest_input(23, 3, 42);
  for (const std::string post : {"NONE", "LOGISTIC"}) {
    Node node = legacy_node("TreeEnsembleClassifier", f, "class");
    node.attributes.set_ints("classlabels_int64s", {0, 1});
    node.attributes.set_string("post_transform", post);
    node.attributes.set_floats("base_values", {0.3f});
    const auto out = evaluate_node(node, 3, {&x});
    ASSERT_EQ(out[1].shape(), (Shape{23, 2}));
    std::vector<double> want_scores, want_labels;
    for (const auto& row : reference_sums(f, x, 1, "SUM")) {
      const double s = row[0] + 0.3f;
      std::vector<double> two = {post == "NONE" ? 1 - s : -s, s};
      transform(post, two);
      want_scores.insert(want_scores.end(), two.begin(), two.end());
      want_labels.push_back(two[1] > two[0] ? 1 : 0);
    }
    expect_close(out[1], want_scores, kTol, kTol, "binary scores " + post);
    expect_close(out[0], want_labels, 0, 0, "binary labels " + post);
  }
}

// The same forest in the opset-5 encoding: interior nodes by position, leaves apart.
Node opset5_node(const Forest& f, int64_t targets) {
  std::map<std::pair<int64_t, int64_t>, size_t> index;
  for (size_t i = 0; i < f.tree_ids.size(); ++i) index[{f.tree_ids[i], f.node_ids[i]}] = i;
  std::vector<int64_t> position(f.tree_ids.size(), -1);  // interior node or leaf number
  std::vector<int64_t> features, missing, roots, leaf_targets;
  std::vector<float> splits, leaf_weights;
  std::vector<uint8_t> modes;
  int64_t interior = 0, leaves = 0;
  for (size_t i = 0; i < f.tree_ids.size(); ++i) position[i] = f.modes[i] == "LEAF" ? leaves++ : interior++;
  std::vector<int64_t> t_ids, f_ids, t_leaf, f_leaf;
  std::map<int64_t, bool> seen;
  for (size_t i = 0; i < f.tree_ids.size(); ++i) {
    if (f.modes[i] == "LEAF") {
      // One weight per leaf in this encoding: the test forests' first entry.
      for (size_t e = 0; e < f.w_trees.size(); ++e)
        if (f.w_trees[e] == f.tree_ids[i] && f.w_nodes[e] == f.node_ids[i]) {
          leaf_targets.push_back(f.w_targets[e]);
          leaf_weights.push_back(f.w_values[e]);
          break;
        }
      continue;
    }
    if (!seen[f.tree_ids[i]]) roots.push_back(position[i]);
    seen[f.tree_ids[i]] = true;
    features.push_back(f.features[i]);
    missing.push_back(f.missing[i]);
    splits.push_back(f.thresholds[i]);
    modes.push_back(static_cast<uint8_t>(std::find(kModes.begin(), kModes.end(), f.modes[i]) - kModes.begin()));
    const size_t t = index.at({f.tree_ids[i], f.true_ids[i]}), fl = index.at({f.tree_ids[i], f.false_ids[i]});
    t_ids.push_back(position[t]);
    f_ids.push_back(position[fl]);
    t_leaf.push_back(f.modes[t] == "LEAF");
    f_leaf.push_back(f.modes[fl] == "LEAF");
  }
  Node node = make_node("TreeEnsemble", {"X"}, {"Y"}, {}, kMl);
  Attributes& a = node.attributes;
  a.set_ints("nodes_featureids", features);
  a.set_ints("nodes_truenodeids", t_ids);
  a.set_ints("nodes_falsenodeids", f_ids);
  a.set_ints("nodes_trueleafs", t_leaf);
  a.set_ints("nodes_falseleafs", f_leaf);
  a.set_ints("nodes_missing_value_tracks_true", missing);
  a.set_ints("leaf_targetids", leaf_targets);
  a.set_ints("tree_roots", roots);
  a.set_int("n_targets", targets);
  Tensor m(DType::UInt8, {static_cast<int64_t>(modes.size())});
  std::copy(modes.begin(), modes.end(), m.data_as<uint8_t>());
  a.set_tensor("nodes_modes", m);
  a.set_tensor("nodes_splits", test::from_values(DType::Float32, {static_cast<int64_t>(splits.size())},
                                                 std::vector<double>(splits.begin(), splits.end())));
  a.set_tensor("leaf_weights", test::from_values(DType::Float32, {static_cast<int64_t>(leaf_weights.size())},
                                                 std::vector<double>(leaf_weights.begin(), leaf_weights.end())));
  return node;
}

// Keeps each leaf's first weight only, as the opset-5 encoding holds one per leaf.
Forest first_weights_only(Forest f) {
  Forest g = f;
  g.w_trees.clear(), g.w_nodes.clear(), g.w_targets.clear(), g.w_values.clear();
  std::map<std::pair<int64_t, int64_t>, bool> seen;
  for (size_t e = 0; e < f.w_trees.size(); ++e) {
    if (seen[{f.w_trees[e], f.w_nodes[e]}]) continue;
    seen[{f.w_trees[e], f.w_nodes[e]}] = true;
    g.w_trees.push_back(f.w_trees[e]), g.w_nodes.push_back(f.w_nodes[e]);
    g.w_targets.push_back(f.w_targets[e]), g.w_values.push_back(f.w_values[e]);
  }
  return g;
}

TEST(TreeEnsemble, MatchesReferenceForEveryAggregate) {
  const Forest f = first_weights_only(random_forest(10, 5, 5, 2, kModes, 51));
  const Tensor x = forest_input(33, 5, 52);
  const char* names[] = {"AVERAGE", "SUM", "MIN", "MAX"};
  for (int64_t aggregate = 0; aggregate < 4; ++aggregate) {
    Node node = opset5_node(f, 2);
    node.attributes.set_int("aggregate_function", aggregate);
    node.attributes.set_int("post_transform", 2);  // LOGISTIC
    const auto out = evaluate_node(node, 5, {&x});
    std::vector<double> want;
    for (auto row : reference_sums(f, x, 2, names[aggregate])) {
      transform("LOGISTIC", row);
      want.insert(want.end(), row.begin(), row.end());
    }
    expect_close(out[0], want, kTol, kTol, std::string("TreeEnsemble ") + names[aggregate]);
  }
}

TEST(TreeEnsemble, SetMembershipWithDoubleAndHalfInputs) {
  // One tree: x0 in {1, 3.5} -> leaf 0 (weight 10); else x1 <= 0 -> leaf 1 (20), else leaf 2 (30).
  Node node = make_node("TreeEnsemble", {"X"}, {"Y"}, {}, kMl);
  Attributes& a = node.attributes;
  a.set_ints("nodes_featureids", {0, 1});
  a.set_ints("nodes_truenodeids", {0, 1});
  a.set_ints("nodes_falsenodeids", {1, 2});
  a.set_ints("nodes_trueleafs", {1, 1});
  a.set_ints("nodes_falseleafs", {0, 1});
  a.set_ints("leaf_targetids", {0, 0, 0});
  a.set_ints("tree_roots", {0});
  a.set_int("n_targets", 1);
  Tensor m(DType::UInt8, {2});
  m.data_as<uint8_t>()[0] = 6;
  m.data_as<uint8_t>()[1] = 0;
  a.set_tensor("nodes_modes", m);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  a.set_tensor("nodes_splits", test::from_values(DType::Float64, {2}, {nan, 0}));
  a.set_tensor("leaf_weights", test::from_values(DType::Float64, {3}, {10, 20, 30}));
  a.set_tensor("membership_values", test::from_values(DType::Float64, {3}, {3.5, 1, nan}));
  const Tensor x = test::from_values(DType::Float64, {4, 2}, {1, 5, 3.5, 5, 2, -1, 0, 1});
  const auto out = evaluate_node(node, 5, {&x});
  EXPECT_EQ(out[0].dtype(), DType::Float64);
  expect_close(out[0], std::vector<double>{10, 10, 20, 30}, 0, 0, "set membership");
  // The same tree in float16 (every value here is exact in half).
  a.set_tensor("nodes_splits", test::from_values(DType::Float16, {2}, {nan, 0}));
  a.set_tensor("leaf_weights", test::from_values(DType::Float16, {3}, {10, 20, 30}));
  const Tensor xh = test::from_values(DType::Float16, {4, 2}, {1, 5, 3.5, 5, 2, -1, 0, 1});
  const auto half = evaluate_node(node, 5, {&xh});
  EXPECT_EQ(half[0].dtype(), DType::Float16);
  expect_close(half[0], std::vector<double>{10, 10, 20, 30}, 0, 0, "set membership, float16");
}

TEST(TreeEnsemble, ManyRowsOnSeveralThreadsMatchOneThread) {
  const Forest f = first_weights_only(random_forest(20, 7, 8, 1, {"BRANCH_LEQ"}, 61));
  const Tensor x = forest_input(1000, 8, 62);
  const Node node = opset5_node(f, 1);
  const auto one = evaluate_node(node, 5, {&x}, 1);
  const auto two = evaluate_node(node, 5, {&x}, 2);
  expect_close(two[0], one[0], 0, 0, "2 threads vs 1");
  std::vector<double> want;
  for (const auto& row : reference_sums(f, x, 1, "SUM")) want.push_back(row[0]);
  expect_close(one[0], want, kTol, kTol, "single-mode forest");
}

// ---- hostile attributes ---------------------------------------------------------------

Node small_regressor() {
  Node node = make_node("TreeEnsembleRegressor", {"X"}, {"Y"}, {}, kMl);
  Attributes& a = node.attributes;
  a.set_ints("nodes_treeids", {0, 0, 0});
  a.set_ints("nodes_nodeids", {0, 1, 2});
  a.set_ints("nodes_featureids", {1, 0, 0});
  a.set_ints("nodes_truenodeids", {1, 0, 0});
  a.set_ints("nodes_falsenodeids", {2, 0, 0});
  a.set_floats("nodes_values", {0.5f, 0, 0});
  set_strings(node, "nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF"});
  a.set_ints("target_treeids", {0, 0});
  a.set_ints("target_nodeids", {1, 2});
  a.set_ints("target_ids", {0, 0});
  a.set_floats("target_weights", {1, 2});
  return node;
}

// The error names the node and says what is wrong.
void expect_error(const Node& node, const Tensor& x, const std::string& fragment, int64_t opset = 3) {
  try {
    evaluate_node(node, opset, {&x});
    ADD_FAILURE() << "no error; expected one with '" << fragment << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(node.name), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(TreeEnsembleRegressor, BadAttributesAreClearErrors) {
  const Tensor x = test::random_floats({3, 2}, 1);
  expect_close(evaluate_node(small_regressor(), 3, {&x})[0],
               std::vector<double>{x.data_as<float>()[1] <= 0.5f ? 1.0 : 2.0, x.data_as<float>()[3] <= 0.5f ? 1.0 : 2.0,
                                   x.data_as<float>()[5] <= 0.5f ? 1.0 : 2.0},
               0, 0, "the valid model");
  Node n = small_regressor();
  n.attributes.set_floats("nodes_values", {0.5f, 0});
  expect_error(n, x, "nodes_values has 2 entries");
  n = small_regressor();
  n.attributes.set_ints("nodes_truenodeids", {9, 0, 0});
  expect_error(n, x, "true child id 9 is not a node of tree 0");
  n = small_regressor();
  n.attributes.set_ints("nodes_nodeids", {0, 1, 1});
  expect_error(n, x, "node id 1 twice");
  n = small_regressor();
  set_strings(n, "nodes_modes", {"BRANCH_LEQ", "BRANCH_GT", "LEAF"});
  n.attributes.set_ints("nodes_truenodeids", {1, 0, 0});  // node 1 leads back to the root
  n.attributes.set_ints("target_nodeids", {2, 2});
  expect_error(n, x, "cycle");
  n = small_regressor();
  set_strings(n, "nodes_modes", {"BRANCH_LEQ", "BRANCH_SOMETIMES", "LEAF"});
  expect_error(n, x, "BRANCH_SOMETIMES");
  n = small_regressor();
  n.attributes.set_ints("target_nodeids", {1, 0});
  expect_error(n, x, "not a leaf");
  n = small_regressor();
  n.attributes.set_ints("target_ids", {0, 3});
  expect_error(n, x, "target 3");
  n = small_regressor();
  n.attributes.set_ints("nodes_featureids", {5, 0, 0});
  expect_error(n, x, "trees read feature 5");
  n = small_regressor();
  n.attributes.set_floats("base_values", {1, 2});
  expect_error(n, x, "base_values has 2 entries");
  n = small_regressor();
  n.attributes.set_string("aggregate_function", "MEDIAN");
  expect_error(n, x, "MEDIAN");
  n = small_regressor();
  n.attributes.set_int("n_targets", int64_t{1} << 40);  // would size the kernel's sums
  expect_error(n, x, "n_targets must be in [1, 1048576]");
}

TEST(TreeEnsembleClassifier, StringLabelsAreRejectedClearly) {
  Node node = small_regressor();
  node.op_type = "TreeEnsembleClassifier";
  node.outputs = {"Y", "Z"};
  for (const char* name : {"target_treeids", "target_nodeids", "target_ids", "target_weights"}) {
    Attribute a = *node.attributes.find(name);
    node.attributes.erase(name);
    node.attributes.set(std::string("class") + (name + 6), a);
  }
  set_strings(node, "classlabels_strings", {"cat", "dog"});
  const Tensor x = test::random_floats({3, 2}, 1);
  expect_error(node, x, "classlabels_strings is set: the session gives the labels' positions instead");
}

TEST(TreeEnsemble, BadAttributesAreClearErrors) {
  const Forest f = first_weights_only(random_forest(2, 2, 2, 1, kModes, 71));
  const Tensor x = forest_input(3, 2, 72);
  Node n = opset5_node(f, 1);
  n.attributes.set_ints("tree_roots", {0, 99});
  expect_error(n, x, "tree root 99", 5);
  n = opset5_node(f, 1);
  auto t = n.attributes.get_ints("nodes_truenodeids");
  t[0] = -1;
  n.attributes.set_ints("nodes_truenodeids", t);
  expect_error(n, x, "true child -1", 5);
  n = opset5_node(f, 1);
  Tensor m = n.attributes.get_tensor("nodes_modes").clone();
  m.data_as<uint8_t>()[0] = 6;  // a set-membership node with no set
  n.attributes.set_tensor("nodes_modes", m);
  expect_error(n, x, "membership_values has no set left", 5);
  n = opset5_node(f, 1);
  n.attributes.set_int("aggregate_function", 7);
  expect_error(n, x, "aggregate_function must be 0 to 3", 5);
  // A cycle through interior nodes: node 0's false branch is node 0 itself.
  n = opset5_node(f, 1);
  auto fl = n.attributes.get_ints("nodes_falsenodeids");
  auto fleaf = n.attributes.get_ints("nodes_falseleafs");
  fl[0] = 0;
  fleaf[0] = 0;
  n.attributes.set_ints("nodes_falsenodeids", fl);
  n.attributes.set_ints("nodes_falseleafs", fleaf);
  expect_error(n, x, "cycle", 5);
}

}  // namespace
}  // namespace ember
