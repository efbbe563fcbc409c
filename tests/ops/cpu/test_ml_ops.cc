// The ai.onnx.ml preprocessing, feature and linear ops against plain loop references
// written here, on random (never all-zero) inputs of each numeric dtype; and their bad
// attributes and inputs as one clear ember::Error naming the node.
#include <ember/core/error.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/evaluate.h"
#include "test_util.h"

namespace ember {
namespace {

using test::element;
using test::expect_close;
using test::from_values;
using test::make_node;
using test::seeded_tensor;

const char* const kMl = "ai.onnx.ml";
const DType kMlTypes[] = {DType::Float32, DType::Float64, DType::Int32, DType::Int64};

Node ml_node(const std::string& op, std::vector<std::string> inputs = {"X"}, std::vector<std::string> outputs = {"Y"}) {
  return make_node(op, std::move(inputs), std::move(outputs), {}, kMl);
}

void expect_error(const Node& node, const std::vector<const Tensor*>& inputs, const std::string& fragment,
                  int64_t opset = 1) {
  try {
    evaluate_node(node, opset, inputs);
    ADD_FAILURE() << node.op_type << ": no error; expected one with '" << fragment << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(node.name), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

// Float outputs computed in float from float32 inputs: 1e-6 relative (the references
// compute in double).
constexpr double kTol = 1e-6;

TEST(MlScaler, MatchesReferencePerFeatureAndBroadcast) {
  for (DType dtype : kMlTypes) {
    const Tensor x = seeded_tensor(dtype, {7, 3}, 1, -20, 20);
    Node node = ml_node("Scaler");
    node.attributes.set_floats("offset", {1.5f, -2.0f, 0.25f});
    node.attributes.set_floats("scale", {0.5f});
    const auto out = evaluate_node(node, 1, {&x});
    ASSERT_EQ(out[0].dtype(), DType::Float32);
    std::vector<double> want;
    const double offset[] = {1.5, -2.0, 0.25};
    for (int64_t i = 0; i < x.numel(); ++i) want.push_back((element(x, i) - offset[i % 3]) * 0.5);
    expect_close(out[0], want, kTol, kTol, std::string("Scaler ") + dtype_name(dtype));
  }
}

TEST(MlNormalizer, MatchesReferenceForEachNorm) {
  const Tensor x = seeded_tensor(DType::Float32, {5, 4}, 2, -3, 3);
  for (const std::string norm : {"MAX", "L1", "L2"}) {
    Node node = ml_node("Normalizer");
    node.attributes.set_string("norm", norm);
    const auto out = evaluate_node(node, 1, {&x});
    std::vector<double> want;
    for (int64_t r = 0; r < 5; ++r) {
      double d = norm == "MAX" ? -1e300 : 0;
      for (int64_t c = 0; c < 4; ++c) {
        const double v = element(x, r * 4 + c);
        d = norm == "MAX" ? std::max(d, v) : norm == "L1" ? d + std::abs(v) : d + v * v;
      }
      if (norm == "L2") d = std::sqrt(d);
      for (int64_t c = 0; c < 4; ++c) want.push_back(element(x, r * 4 + c) / d);
    }
    expect_close(out[0], want, 1e-5, 1e-6, "Normalizer " + norm);
  }
  // A row of zeros is copied, not divided by zero.
  const Tensor zeros = from_values(DType::Int64, {1, 3}, {0, 0, 0});
  Node node = ml_node("Normalizer");
  node.attributes.set_string("norm", "L2");
  expect_close(evaluate_node(node, 1, {&zeros})[0], std::vector<double>{0, 0, 0}, 0, 0, "zero row");
  node.attributes.set_string("norm", "L3");
  expect_error(node, {&x}, "norm 'L3'");
}

TEST(MlBinarizer, MatchesReference) {
  for (DType dtype : kMlTypes) {
    const Tensor x = seeded_tensor(dtype, {4, 5}, 3, -5, 5);
    Node node = ml_node("Binarizer");
    node.attributes.set_float("threshold", 1.0f);
    const auto out = evaluate_node(node, 1, {&x});
    ASSERT_EQ(out[0].dtype(), dtype);
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i) want.push_back(element(x, i) > 1.0 ? 1 : 0);
    expect_close(out[0], want, 0, 0, std::string("Binarizer ") + dtype_name(dtype));
  }
}

TEST(MlImputer, ReplacesValuesAndNaNs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor xf = from_values(DType::Float32, {2, 3}, {nan, 1, 2, 3, nan, nan});
  Node node = ml_node("Imputer");
  node.attributes.set_float("replaced_value_float", std::numeric_limits<float>::quiet_NaN());
  node.attributes.set_floats("imputed_value_floats", {7, 8, 9});
  expect_close(evaluate_node(node, 1, {&xf})[0], std::vector<double>{7, 1, 2, 3, 8, 9}, 0, 0, "NaN per feature");
  const Tensor xi = from_values(DType::Int32, {2, 2}, {-1, 4, 5, -1});
  Node ints = ml_node("Imputer");
  ints.attributes.set_int("replaced_value_int64", -1);
  ints.attributes.set_ints("imputed_value_int64s", {0});
  expect_close(evaluate_node(ints, 1, {&xi})[0], std::vector<double>{0, 4, 5, 0}, 0, 0, "int -1 to 0");
  ints.attributes.set_ints("imputed_value_int64s", {1, 2, 3});
  expect_error(ints, {&xi}, "expected 1 or 2");
  Node missing = ml_node("Imputer");
  expect_error(missing, {&xf}, "imputed_value_floats must be given");
}

TEST(MlArrayFeatureExtractor, PicksColumnsAndRejectsBadIndices) {
  const Tensor x = seeded_tensor(DType::Float64, {2, 3, 4}, 4, -9, 9);
  const Tensor idx = from_values(DType::Int64, {3}, {3, 0, 3});
  const auto out = evaluate_node(ml_node("ArrayFeatureExtractor", {"X", "Y"}, {"Z"}), 1, {&x, &idx});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 3}));
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j : {3, 0, 3}) want.push_back(element(x, r * 4 + j));
  expect_close(out[0], want, 0, 0, "ArrayFeatureExtractor");
  const Tensor bad = from_values(DType::Int64, {1}, {4});
  expect_error(ml_node("ArrayFeatureExtractor", {"X", "Y"}, {"Z"}), {&x, &bad}, "index 4 is out of range [0, 4)");
}

TEST(MlFeatureVectorizer, CutsPadsAndJoins) {
  const Tensor a = seeded_tensor(DType::Int64, {2, 3}, 5, -9, 9);
  const Tensor b = seeded_tensor(DType::Float64, {2, 1}, 6, -9, 9);
  Node node = ml_node("FeatureVectorizer", {"A", "B"});
  node.attributes.set_ints("inputdimensions", {2, 3});
  const auto out = evaluate_node(node, 1, {&a, &b});
  ASSERT_EQ(out[0].shape(), (Shape{2, 5}));
  std::vector<double> want;
  for (int64_t r = 0; r < 2; ++r) {
    want.insert(want.end(), {element(a, r * 3), element(a, r * 3 + 1), element(b, r), 0, 0});
  }
  expect_close(out[0], want, kTol, kTol, "FeatureVectorizer");
  node.attributes.set_ints("inputdimensions", {2});
  expect_error(node, {&a, &b}, "inputdimensions has 1 entries for 2 inputs");
}

TEST(MlOneHotEncoder, EncodesCategoriesAndRejectsUnknownWithoutZeros) {
  const Tensor x = from_values(DType::Float32, {2, 2}, {4.7, 2, -1, 9});
  Node node = ml_node("OneHotEncoder");
  node.attributes.set_ints("cats_int64s", {2, 4, -1});
  const auto out = evaluate_node(node, 1, {&x});
  ASSERT_EQ(out[0].shape(), (Shape{2, 2, 3}));
  expect_close(out[0], std::vector<double>{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}, 0, 0, "OneHotEncoder");
  node.attributes.set_int("zeros", 0);
  expect_error(node, {&x}, "is not one of the categories");
  Node strings = ml_node("OneHotEncoder");
  Attribute cats;
  cats.kind = Attribute::Kind::Strings;
  cats.strings = {"a", "b"};
  strings.attributes.set("cats_strings", cats);
  expect_error(strings, {&x}, "cats_int64s must list the categories (X is float32)");  // strings: test_strings.cc
}

// scores[r][t] = x[r] . coefficients[t] + intercepts[t]
std::vector<std::vector<double>> linear_reference(const Tensor& x, const std::vector<float>& w,
                                                  const std::vector<float>& b, int64_t targets) {
  const int64_t rows = x.shape()[0], f = x.shape()[1];
  std::vector<std::vector<double>> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row;
    for (int64_t t = 0; t < targets; ++t) {
      double s = b.empty() ? 0 : b[static_cast<size_t>(t)];
      for (int64_t k = 0; k < f; ++k) s += w[static_cast<size_t>(t * f + k)] * element(x, r * f + k);
      row.push_back(s);
    }
    out.push_back(row);
  }
  return out;
}

TEST(MlLinearRegressor, MatchesReference) {
  const std::vector<float> w = {0.5f, -1, 2, 0.25f, 1.5f, -0.75f}, b = {0.1f, -0.2f};
  for (DType dtype : kMlTypes) {
    const Tensor x = seeded_tensor(dtype, {6, 3}, 7, -4, 4);
    Node node = ml_node("LinearRegressor");
    node.attributes.set_floats("coefficients", w);
    node.attributes.set_floats("intercepts", b);
    node.attributes.set_int("targets", 2);
    std::vector<double> want;
    for (const auto& row : linear_reference(x, w, b, 2)) want.insert(want.end(), row.begin(), row.end());
    expect_close(evaluate_node(node, 1, {&x})[0], want, 1e-5, 1e-5, std::string("LinearRegressor ") + dtype_name(dtype));
  }
  const Tensor x = seeded_tensor(DType::Float32, {2, 4}, 8);
  Node node = ml_node("LinearRegressor");
  node.attributes.set_floats("coefficients", w);
  node.attributes.set_int("targets", 2);
  expect_error(node, {&x}, "expected targets (2) x features (4)");
}

TEST(MlLinearClassifier, MulticlassAndBinary) {
  const Tensor x = seeded_tensor(DType::Float32, {9, 2}, 9, -3, 3);
  const std::vector<float> w = {1, -1, 0.5f, 2, -1.5f, 0.25f}, b = {0, 0.5f, -0.5f};
  Node node = ml_node("LinearClassifier", {"X"}, {"Y", "Z"});
  node.attributes.set_floats("coefficients", w);
  node.attributes.set_floats("intercepts", b);
  node.attributes.set_ints("classlabels_ints", {5, 6, 7});
  node.attributes.set_string("post_transform", "SOFTMAX");
  auto out = evaluate_node(node, 1, {&x});
  std::vector<double> want_scores, want_labels;
  for (auto row : linear_reference(x, w, b, 3)) {
    double sum = 0;
    for (double& v : row) sum += v = std::exp(v);
    for (double& v : row) v /= sum;
    want_scores.insert(want_scores.end(), row.begin(), row.end());
    want_labels.push_back(5 + static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  expect_close(out[1], want_scores, 1e-5, 1e-6, "LinearClassifier softmax");
  expect_close(out[0], want_labels, 0, 0, "LinearClassifier labels");

  // One coefficient row, two labels: scores [-s, s] through the transform.
  Node binary = ml_node("LinearClassifier", {"X"}, {"Y", "Z"});
  binary.attributes.set_floats("coefficients", {1, -1});
  binary.attributes.set_floats("intercepts", {0.25f});
  binary.attributes.set_ints("classlabels_ints", {0, 1});
  binary.attributes.set_string("post_transform", "LOGISTIC");
  out = evaluate_node(binary, 1, {&x});
  ASSERT_EQ(out[1].shape(), (Shape{9, 2}));
  want_scores.clear(), want_labels.clear();
  for (const auto& row : linear_reference(x, {1, -1}, {0.25f}, 1)) {
    const double p = 1 / (1 + std::exp(-row[0]));
    want_scores.insert(want_scores.end(), {1 - p, p});
    want_labels.push_back(p > 0.5 ? 1 : 0);
  }
  expect_close(out[1], want_scores, 1e-5, 1e-6, "binary LinearClassifier");
  expect_close(out[0], want_labels, 0, 0, "binary labels");

  node.attributes.set_ints("classlabels_ints", {5, 6});
  expect_error(node, {&x}, "classlabels_ints has 2 labels for 3 classes");
}

TEST(MlLabelEncoder, MapsNumericKeysWithDefaultsAndNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Opset 2 lists: int64 -> float, default_float.
  Node node = ml_node("LabelEncoder");
  node.attributes.set_ints("keys_int64s", {3, 9, -2});
  node.attributes.set_floats("values_floats", {0.5f, 1.5f, 2.5f});
  node.attributes.set_float("default_float", 7);
  const Tensor x = from_values(DType::Int64, {2, 3}, {9, 3, 4, -2, -2, 0});
  expect_close(evaluate_node(node, 2, {&x})[0], std::vector<double>{1.5, 0.5, 7, 2.5, 2.5, 7}, 0, 0, "int->float");
  // Opset 4 tensors: double -> int32, NaN key, no default (-1).
  Node tensors = ml_node("LabelEncoder");
  tensors.attributes.set_tensor("keys_tensor", from_values(DType::Float64, {3}, {1.25, nan, -4}));
  tensors.attributes.set_tensor("values_tensor", from_values(DType::Int32, {3}, {10, 20, 30}));
  const Tensor xd = from_values(DType::Float64, {5}, {-4, nan, 1.25, 2, 1.25});
  const auto out = evaluate_node(tensors, 4, {&xd});
  EXPECT_EQ(out[0].dtype(), DType::Int32);
  expect_close(out[0], std::vector<double>{30, 20, 10, -1, 10}, 0, 0, "double->int32 opset 4");
  // Mismatched lengths, string keys for int64 X, X of another type.
  tensors.attributes.set_tensor("values_tensor", from_values(DType::Int32, {2}, {10, 20}));
  expect_error(tensors, {&xd}, "keys has 3 entries but values has 2", 4);
  Node strings = ml_node("LabelEncoder");
  Attribute keys;
  keys.kind = Attribute::Kind::Strings;
  keys.strings = {"a"};
  strings.attributes.set("keys_strings", keys);
  strings.attributes.set_ints("values_int64s", {1});
  expect_error(strings, {&x}, "X is int64 but the keys are string", 2);  // string X: test_strings.cc
  const Tensor xf = from_values(DType::Float32, {1}, {3});
  expect_error(node, {&xf}, "X is float32 but the keys are int64", 2);
}

// ---- SVMs -----------------------------------------------------------------------------

double kernel(const std::string& type, const std::vector<double>& x, const std::vector<double>& v, double gamma,
              double coef0, double degree) {
  double dot = 0, dist = 0;
  for (size_t i = 0; i < x.size(); ++i) dot += x[i] * v[i], dist += (x[i] - v[i]) * (x[i] - v[i]);
  if (type == "RBF") return std::exp(-gamma * dist);
  if (type == "POLY") return std::pow(gamma * dot + coef0, degree);
  if (type == "SIGMOID") return std::tanh(gamma * dot + coef0);
  return dot;
}

std::vector<double> row_of(const Tensor& x, int64_t r) {
  const int64_t f = x.shape()[1];
  std::vector<double> row;
  for (int64_t c = 0; c < f; ++c) row.push_back(element(x, r * f + c));
  return row;
}

TEST(MlSvmRegressor, MatchesReferenceForEachKernel) {
  const Tensor x = seeded_tensor(DType::Float32, {6, 3}, 10, -2, 2);
  const std::vector<float> sv = {0.5f, -1, 0.25f, 1, 1, -0.5f}, coef = {0.75f, -1.25f};
  for (const std::string type : {"LINEAR", "POLY", "RBF", "SIGMOID"}) {
    Node node = ml_node("SVMRegressor");
    node.attributes.set_string("kernel_type", type);
    node.attributes.set_floats("kernel_params", {0.3f, 0.5f, 3});
    node.attributes.set_floats("support_vectors", sv);
    node.attributes.set_floats("coefficients", coef);
    node.attributes.set_floats("rho", {0.125f});
    node.attributes.set_int("n_supports", 2);
    std::vector<double> want;
    for (int64_t r = 0; r < 6; ++r) {
      double s = 0.125;
      for (size_t j = 0; j < 2; ++j)
        s += coef[j] * kernel(type, row_of(x, r), {sv[j * 3], sv[j * 3 + 1], sv[j * 3 + 2]}, 0.3f, 0.5f, 3);
      want.push_back(s);
    }
    expect_close(evaluate_node(node, 1, {&x})[0], want, 1e-5, 1e-6, "SVMRegressor " + type);
  }
  Node node = ml_node("SVMRegressor");
  node.attributes.set_floats("coefficients", {1, 2});
  node.attributes.set_floats("rho", {0});
  node.attributes.set_floats("support_vectors", sv);
  node.attributes.set_int("n_supports", 4);
  expect_error(node, {&x}, "not a multiple of 4 support vectors");
  node.attributes.set_int("n_supports", 0);
  expect_error(node, {&x}, "X has 3 features but the model has 2");
}

TEST(MlSvmClassifier, OneVsOneVotesMatchReference) {
  // Three classes with 1, 2 and 1 support vectors (RBF): pairwise scores and votes.
  const Tensor x = seeded_tensor(DType::Float64, {8, 2}, 11, -2, 2);
  const std::vector<float> sv = {0, 1, 1, 0, -1, -1, 0.5f, 0.5f};
  const std::vector<int64_t> per_class = {1, 2, 1}, start = {0, 1, 3};
  const std::vector<float> coef = {1, -0.5f, 0.75f, -1, 0.25f, 1.5f, -0.5f, 0.5f};  // (3 - 1) x 4
  const std::vector<float> rho = {0.1f, -0.2f, 0.3f};
  Node node = ml_node("SVMClassifier", {"X"}, {"Y", "Z"});
  node.attributes.set_string("kernel_type", "RBF");
  node.attributes.set_floats("kernel_params", {0.5f, 0, 3});
  node.attributes.set_floats("support_vectors", sv);
  node.attributes.set_floats("coefficients", coef);
  node.attributes.set_floats("rho", rho);
  node.attributes.set_ints("vectors_per_class", per_class);
  node.attributes.set_ints("classlabels_ints", {4, 5, 6});
  const auto out = evaluate_node(node, 1, {&x});
  ASSERT_EQ(out[1].shape(), (Shape{8, 3}));
  std::vector<double> want_scores, want_labels;
  for (int64_t r = 0; r < 8; ++r) {
    std::vector<double> k;
    for (size_t j = 0; j < 4; ++j) k.push_back(kernel("RBF", row_of(x, r), {sv[j * 2], sv[j * 2 + 1]}, 0.5, 0, 3));
    std::vector<double> votes(3, 0);
    size_t pair = 0;
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = i + 1; j < 3; ++j, ++pair) {
        double s = rho[pair];
        for (int64_t t = start[i]; t < start[i] + per_class[i]; ++t) s += coef[(j - 1) * 4 + static_cast<size_t>(t)] * k[static_cast<size_t>(t)];
        for (int64_t t = start[j]; t < start[j] + per_class[j]; ++t) s += coef[i * 4 + static_cast<size_t>(t)] * k[static_cast<size_t>(t)];
        want_scores.push_back(s);
        votes[s > 0 ? i : j] += 1;
      }
    want_labels.push_back(4 + static_cast<double>(std::max_element(votes.begin(), votes.end()) - votes.begin()));
  }
  expect_close(out[1], want_scores, 1e-5, 1e-6, "SVMClassifier pairwise scores");
  expect_close(out[0], want_labels, 0, 0, "SVMClassifier labels");
  node.attributes.set_ints("vectors_per_class", {1, 3});
  expect_error(node, {&x}, "vectors_per_class has 2 counts for 3 classes");
  node.attributes.set_ints("vectors_per_class", per_class);
  node.attributes.set_floats("rho", {0.1f});
  expect_error(node, {&x}, "rho has 1 values; expected 3");
  node.attributes.set_floats("rho", rho);
  node.attributes.set_floats("prob_a", {1, 2, 3});
  expect_error(node, {&x}, "prob_b has 0 values; expected 3");
}

TEST(MlSvmClassifier, LinearModeScoresEachClass) {
  const Tensor x = seeded_tensor(DType::Int64, {5, 2}, 12, -5, 5);
  Node node = ml_node("SVMClassifier", {"X"}, {"Y", "Z"});
  node.attributes.set_floats("coefficients", {1, -1, 0.5f, 0.5f, -2, 0.25f});
  node.attributes.set_floats("rho", {0.5f, 0.5f, 0.5f});
  node.attributes.set_ints("classlabels_ints", {7, 8, 9});
  node.attributes.set_string("post_transform", "SOFTMAX");
  auto out = evaluate_node(node, 1, {&x});
  std::vector<double> want_scores, want_labels;
  const double w[3][2] = {{1, -1}, {0.5, 0.5}, {-2, 0.25}};
  for (int64_t r = 0; r < 5; ++r) {
    std::vector<double> s;
    double sum = 0;
    for (const auto& c : w) s.push_back(0.5 + c[0] * element(x, r * 2) + c[1] * element(x, r * 2 + 1));
    want_labels.push_back(7 + static_cast<double>(std::max_element(s.begin(), s.end()) - s.begin()));
    const double top = *std::max_element(s.begin(), s.end());
    for (double& v : s) sum += v = std::exp(v - top);
    for (double& v : s) want_scores.push_back(v / sum);
  }
  expect_close(out[1], want_scores, 1e-5, 1e-6, "linear SVMClassifier");
  expect_close(out[0], want_labels, 0, 0, "linear SVMClassifier labels");
  // With a single rho the reference (and ONNX Runtime's set_score_svm) labels by the
  // top score's sign, 1 or 0, whatever the class labels.
  node.attributes.set_floats("rho", {0.5f});
  out = evaluate_node(node, 1, {&x});
  for (double& label : want_labels) label = 1;  // every row's top score is positive here
  expect_close(out[1], want_scores, 1e-5, 1e-6, "linear SVMClassifier, one rho");
  expect_close(out[0], want_labels, 0, 0, "linear SVMClassifier labels, one rho");
}

}  // namespace
}  // namespace ember
