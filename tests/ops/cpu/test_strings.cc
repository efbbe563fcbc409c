// String tensors through evaluate_node: the movement ops (ops/string_movement.h) and
// the string kernels (ops/cpu/strings.cc, tfidf.cc, the ml encoders) against plain
// references written here, on random strings that include empty ones and multi-byte
// UTF-8, and empty tensors. Strings are compared exactly; TfIdf counts are integers
// in float32, compared exactly too.
#include <ember/core/error.h>
#include <ember/core/value.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ops/evaluate.h"
#include "test_util.h"

namespace ember {
namespace {

using test::from_values;
using test::make_node;

const std::vector<std::string> kAlphabet = {"", "a", "b", "é", "的", "😀", " ", "x y", "-", "A"};

Tensor strings(const Shape& shape, const std::vector<std::string>& values) {
  Tensor t(DType::String, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t i = 0; i < values.size(); ++i) t.data_as<std::string>()[i] = values[i];
  return t;
}

// Random strings of 0-3 pieces of kAlphabet (so empty and multi-byte ones appear).
Tensor random_strings(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(DType::String, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) t.data_as<std::string>()[i] += kAlphabet[rng() % kAlphabet.size()];
  return t;
}

std::vector<std::string> values_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::String);
  return {t.data_as<std::string>(), t.data_as<std::string>() + t.numel()};
}

Attribute strings_attribute(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

void expect_error(const Node& node, const std::vector<const Tensor*>& inputs, const std::string& fragment, int64_t opset) {
  try {
    evaluate_node(node, opset, inputs);
    ADD_FAILURE() << node.op_type << ": no error; expected one with '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(StringTensor, OwnsEmptyStringsAndClonesDeeply) {
  Tensor t(DType::String, {2, 3});
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_TRUE(t.data_as<std::string>()[i].empty());
  EXPECT_EQ(t.nbytes(), 0u);  // raw-byte paths move none of it
  t.data_as<std::string>()[4] = std::string(100, 'z');  // past the small-string buffer
  Tensor shared = t;
  Tensor copy = t.clone();
  t.data_as<std::string>()[4] = "changed";
  EXPECT_EQ(shared.data_as<std::string>()[4], "changed");
  EXPECT_EQ(copy.data_as<std::string>()[4], std::string(100, 'z'));
  EXPECT_EQ(Tensor(DType::String, {0}).numel(), 0);
}

TEST(StringMovement, TransposeGatherConcatSliceMatchIndexReferences) {
  const Tensor x = random_strings({3, 4}, 1);
  const auto v = values_of(x);
  Node transpose = make_node("Transpose", 1);
  const auto t = values_of(evaluate_node(transpose, 13, {&x})[0]);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(t[c * 3 + r], v[r * 4 + c]);

  const Tensor idx = from_values(DType::Int64, {3}, {2, 0, -1});
  Attributes axis1;
  axis1.set_int("axis", 1);
  const Tensor g = evaluate_node(make_node("Gather", 2, axis1), 13, {&x, &idx})[0];
  ASSERT_EQ(g.shape(), (Shape{3, 3}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(values_of(g)[r * 3 + 0], v[r * 4 + 2]);
    EXPECT_EQ(values_of(g)[r * 3 + 1], v[r * 4 + 0]);
    EXPECT_EQ(values_of(g)[r * 3 + 2], v[r * 4 + 3]);
  }

  const Tensor y = random_strings({3, 2}, 2);
  const Tensor cat = evaluate_node(make_node("Concat", 2, axis1), 13, {&x, &y})[0];
  ASSERT_EQ(cat.shape(), (Shape{3, 6}));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 6; ++c)
      EXPECT_EQ(values_of(cat)[r * 6 + c], c < 4 ? v[r * 4 + c] : values_of(y)[r * 2 + c - 4]);

  const Tensor starts = from_values(DType::Int64, {1}, {3}), ends = from_values(DType::Int64, {1}, {0});
  const Tensor axes = from_values(DType::Int64, {1}, {1}), steps = from_values(DType::Int64, {1}, {-2});
  const Tensor s = evaluate_node(make_node("Slice", 5), 13, {&x, &starts, &ends, &axes, &steps})[0];
  ASSERT_EQ(s.shape(), (Shape{3, 2}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(values_of(s)[r * 2], v[r * 4 + 3]);
    EXPECT_EQ(values_of(s)[r * 2 + 1], v[r * 4 + 1]);
  }
}

TEST(StringMovement, ReshapeExpandWhereAndEmptyTensors) {
  const Tensor x = random_strings({2, 3}, 3);
  const Tensor shape = from_values(DType::Int64, {2}, {3, 2});
  const Tensor r = evaluate_node(make_node("Reshape", 2), 14, {&x, &shape})[0];
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of(r), values_of(x));

  const Tensor row = random_strings({1, 3}, 4);
  const Tensor to = from_values(DType::Int64, {2}, {4, 3});
  const Tensor e = evaluate_node(make_node("Expand", 2), 13, {&row, &to})[0];
  for (int i = 0; i < 12; ++i) EXPECT_EQ(values_of(e)[i], values_of(row)[i % 3]);

  const Tensor cond = from_values(DType::Bool, {2, 1}, {1, 0});
  const Tensor other = random_strings({3}, 5);
  const Tensor w = evaluate_node(make_node("Where", 3), 16, {&cond, &x, &other})[0];
  for (int i = 0; i < 6; ++i) EXPECT_EQ(values_of(w)[i], i < 3 ? values_of(x)[i] : values_of(other)[i % 3]);

  const Tensor empty(DType::String, {0, 3});
  const Tensor t = evaluate_node(make_node("Transpose", 1), 13, {&empty})[0];
  EXPECT_EQ(t.shape(), (Shape{3, 0}));
  EXPECT_EQ(t.dtype(), DType::String);
  // A string beside a number is refused by the op's own type rule.
  const Tensor numbers = from_values(DType::Int64, {3}, {1, 2, 3});
  expect_error(make_node("Where", 3), {&cond, &x, &numbers}, "Where", 16);
}

TEST(StringOps, ConcatAndEqualBroadcastLikeReferences) {
  const Tensor a = random_strings({2, 3}, 6), b = random_strings({3}, 7);
  const Tensor c = evaluate_node(make_node("StringConcat", 2), 20, {&a, &b})[0];
  const Tensor eq_self = evaluate_node(make_node("Equal", 2), 19, {&a, &a})[0];
  const Tensor same = strings({3}, {values_of(a)[3], "zz", values_of(a)[5]});
  const Tensor eq = evaluate_node(make_node("Equal", 2), 19, {&a, &same})[0];
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(values_of(c)[i], values_of(a)[i] + values_of(b)[i % 3]);
    EXPECT_TRUE(eq_self.data_as<bool>()[i]);
    EXPECT_EQ(eq.data_as<bool>()[i], values_of(a)[i] == values_of(same)[i % 3]) << i;
  }
}

TEST(StringOps, SplitFollowsPythonStrSplit) {
  const Tensor x = strings({4}, {"a,b,,c", "", "  one  two ", "x"});
  Attributes comma;
  comma.set_string("delimiter", ",");
  auto out = evaluate_node(make_node("StringSplit", 1, 2, comma), 20, {&x});
  ASSERT_EQ(out[0].shape(), (Shape{4, 4}));
  EXPECT_EQ(values_of(out[0]), (std::vector<std::string>{"a", "b", "", "c", "", "", "", "", "  one  two ", "", "", "", "x", "", "", ""}));
  EXPECT_EQ(out[1].data_as<int64_t>()[0], 4);
  EXPECT_EQ(out[1].data_as<int64_t>()[1], 1);  // "".split(",") == [""]
  Attributes spaces;
  spaces.set_int("maxsplit", 1);
  out = evaluate_node(make_node("StringSplit", 1, 2, spaces), 20, {&x});
  ASSERT_EQ(out[0].shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of(out[0]), (std::vector<std::string>{"a,b,,c", "", "", "", "one", "two ", "x", ""}));
  EXPECT_EQ(out[1].data_as<int64_t>()[1], 0);  // "".split() == []
}

TEST(StringOps, NormalizerRemovesStopwordsAndChangesCase) {
  const Tensor x = strings({1, 5}, {"Monday", "été", "monday", "Straße", "ÉCOLE"});
  Attributes a;
  a.set_string("case_change_action", "UPPER");
  a.set("stopwords", strings_attribute({"MONDAY"}));
  const Tensor y = evaluate_node(make_node("StringNormalizer", 1, a), 10, {&x})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(values_of(y), (std::vector<std::string>{"ÉTÉ", "STRAßE", "ÉCOLE"}));  // per code point: ß stays
  a.set_string("case_change_action", "LOWER");
  a.set_int("is_case_sensitive", 1);
  const Tensor all = strings({2}, {"MONDAY", "MONDAY"});
  const Tensor none_left = evaluate_node(make_node("StringNormalizer", 1, a), 10, {&all})[0];
  EXPECT_EQ(values_of(none_left), (std::vector<std::string>{""}));
  const Tensor bad = strings({1}, {"\xff"});
  expect_error(make_node("StringNormalizer", 1, a), {&bad}, "not UTF-8", 10);
}

TEST(StringOps, RegexFullMatchUsesRe2AndRejectsBadPatterns) {
  const Tensor x = strings({4}, {"abc@gmail.com", "abc@gmail.com.x", "", "的@gmail.com"});
  Attributes a;
  a.set_string("pattern", R"([\w.]*@gmail\.com)");
  const Tensor y = evaluate_node(make_node("RegexFullMatch", 1, a), 20, {&x})[0];
  EXPECT_EQ(y.dtype(), DType::Bool);
  const bool want[] = {true, false, false, false};  // \w is ASCII in RE2
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data_as<bool>()[i], want[i]) << i;
  a.set_string("pattern", "(unclosed");
  expect_error(make_node("RegexFullMatch", 1, a), {&x}, "not a valid RE2", 20);
}

TEST(StringOps, CastRoundTripsNumbersAndNamesBadText) {
  const Tensor f = from_values(DType::Float32, {4}, {1.5, -0.1, 1e20, 3});
  Attributes to_string;
  to_string.set_int("to", static_cast<int64_t>(DType::String));
  const Tensor s = evaluate_node(make_node("Cast", 1, to_string), 13, {&f})[0];
  EXPECT_EQ(values_of(s), (std::vector<std::string>{"1.5", "-0.100000001", "1.00000002e+20", "3"}));
  Attributes to_float;
  to_float.set_int("to", static_cast<int64_t>(DType::Float32));
  const Tensor back = evaluate_node(make_node("Cast", 1, to_float), 13, {&s})[0];
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data_as<float>()[i], f.data_as<float>()[i]);
  const Tensor text = strings({3}, {"NaN", "-INF", " 2e3"});
  const Tensor parsed = evaluate_node(make_node("Cast", 1, to_float), 13, {&text})[0];
  EXPECT_TRUE(std::isnan(parsed.data_as<float>()[0]));
  EXPECT_EQ(parsed.data_as<float>()[1], -INFINITY);
  EXPECT_EQ(parsed.data_as<float>()[2], 2000.0f);
  Attributes to_int;
  to_int.set_int("to", static_cast<int64_t>(DType::Int8));
  const Tensor big = strings({1}, {"300"});
  expect_error(make_node("Cast", 1, to_int), {&big}, "'300' is not a int8", 13);
  const Tensor word = strings({1}, {"12abc"});
  expect_error(make_node("Cast", 1, to_float), {&word}, "'12abc' is not a float32", 13);
}

TEST(StringOps, LabelEncoderCategoryMapperOneHotOnStrings) {
  const Tensor x = strings({5}, {"a", "b", "d", "c", ""});
  Attributes le;
  le.set("keys_strings", strings_attribute({"a", "b", "c"}));
  le.set_ints("values_int64s", {0, 1, 2});
  const Tensor y = evaluate_node(make_node("LabelEncoder", std::vector<std::string>{"X"}, {"Y"}, le, "ai.onnx.ml"), 2, {&x})[0];
  test::expect_close(y, std::vector<double>{0, 1, -1, 2, -1}, 0, 0, "string->int64");
  Attributes back;
  back.set_ints("keys_int64s", {0, 1});
  back.set("values_strings", strings_attribute({"zero", "один"}));
  const Tensor n = from_values(DType::Int64, {3}, {1, 7, 0});
  const Tensor z = evaluate_node(make_node("LabelEncoder", std::vector<std::string>{"X"}, {"Y"}, back, "ai.onnx.ml"), 2, {&n})[0];
  EXPECT_EQ(values_of(z), (std::vector<std::string>{"один", "_Unused", "zero"}));

  Attributes cm;
  cm.set_ints("cats_int64s", {5, 6});
  cm.set("cats_strings", strings_attribute({"five", "six"}));
  cm.set_string("default_string", "?");
  const Node mapper = make_node("CategoryMapper", std::vector<std::string>{"X"}, {"Y"}, cm, "ai.onnx.ml");
  const Tensor ints = from_values(DType::Int64, {2, 2}, {6, 5, 0, 6});
  EXPECT_EQ(values_of(evaluate_node(mapper, 1, {&ints})[0]), (std::vector<std::string>{"six", "five", "?", "six"}));
  const Tensor words = strings({3}, {"five", "x", "six"});
  test::expect_close(evaluate_node(mapper, 1, {&words})[0], std::vector<double>{5, -1, 6}, 0, 0, "CategoryMapper");

  Attributes oh;
  oh.set("cats_strings", strings_attribute({"b", "a"}));
  const Node encoder = make_node("OneHotEncoder", std::vector<std::string>{"X"}, {"Y"}, oh, "ai.onnx.ml");
  const Tensor cats = strings({3}, {"a", "z", "b"});
  const Tensor onehot = evaluate_node(encoder, 1, {&cats})[0];
  ASSERT_EQ(onehot.shape(), (Shape{3, 2}));
  test::expect_close(onehot, std::vector<double>{0, 1, 0, 0, 1, 0}, 0, 0, "OneHotEncoder strings");
  Node strict = encoder;
  strict.attributes.set_int("zeros", 0);
  expect_error(strict, {&cats}, "'z' is not one of the categories", 1);
}

// Counts n-grams the slow way: every start, every skip distance, every length.
std::vector<float> tfidf_reference(const std::vector<int64_t>& row, const std::vector<std::vector<int64_t>>& grams,
                                   const std::vector<int64_t>& columns, int64_t min_gram, int64_t max_gram,
                                   int64_t max_skip, int64_t width) {
  std::vector<float> out(static_cast<size_t>(width), 0);
  const int64_t n = static_cast<int64_t>(row.size());
  for (size_t g = 0; g < grams.size(); ++g) {
    const int64_t len = static_cast<int64_t>(grams[g].size());
    if (len < min_gram || len > max_gram) continue;
    for (int64_t skip = 1; skip <= (len == 1 ? 1 : max_skip + 1); ++skip)
      for (int64_t start = 0; start + (len - 1) * skip < n; ++start) {
        bool match = true;
        for (int64_t k = 0; k < len && match; ++k) match = row[start + k * skip] == grams[g][k];
        out[columns[g]] += match;
      }
  }
  return out;
}

TEST(StringOps, TfIdfCountsMatchABruteForceReference) {
  // Pool: unigrams 2, 3, 5; bigrams (2,3), (3,3), (5,2).
  const std::vector<std::vector<int64_t>> grams = {{2}, {3}, {5}, {2, 3}, {3, 3}, {5, 2}};
  const std::vector<int64_t> columns = {0, 1, 2, 3, 4, 5};
  std::mt19937 rng(9);
  for (int64_t min_gram : {1, 2})
    for (int64_t max_skip : {0, 2}) {
      Attributes a;
      a.set_int("min_gram_length", min_gram);
      a.set_int("max_gram_length", 2);
      a.set_int("max_skip_count", max_skip);
      a.set_string("mode", "TF");
      a.set_ints("pool_int64s", {2, 3, 5, 2, 3, 3, 3, 5, 2});
      a.set_ints("ngram_counts", {0, 3});
      a.set_ints("ngram_indexes", columns);
      Tensor x(DType::Int64, {3, 9});
      for (int64_t i = 0; i < x.numel(); ++i) x.data_as<int64_t>()[i] = 2 + static_cast<int64_t>(rng() % 4);
      const Tensor y = evaluate_node(make_node("TfIdfVectorizer", 1, a), 9, {&x})[0];
      ASSERT_EQ(y.shape(), (Shape{3, 6}));
      for (int64_t r = 0; r < 3; ++r) {
        const std::vector<int64_t> row(x.data_as<int64_t>() + r * 9, x.data_as<int64_t>() + r * 9 + 9);
        const auto want = tfidf_reference(row, grams, columns, min_gram, 2, max_skip, 6);
        for (int c = 0; c < 6; ++c) EXPECT_EQ(y.data_as<float>()[r * 6 + c], want[c]) << min_gram << " " << max_skip;
      }
    }
  // Strings, TFIDF with weights.
  Attributes s;
  s.set_int("min_gram_length", 1);
  s.set_int("max_gram_length", 1);
  s.set_int("max_skip_count", 0);
  s.set_string("mode", "TFIDF");
  s.set("pool_strings", strings_attribute({"le", "chat", "的"}));
  s.set_ints("ngram_counts", {0});
  s.set_ints("ngram_indexes", {2, 0, 1});
  s.set_floats("weights", {0.5f, 2.0f, 1.0f});
  const Tensor words = strings({5}, {"le", "的", "chat", "le", "chien"});
  const Tensor y = evaluate_node(make_node("TfIdfVectorizer", 1, s), 9, {&words})[0];
  test::expect_close(y, std::vector<double>{0.5, 2, 2}, 0, 0, "TFIDF strings");
}

// ---- Maps ---------------------------------------------------------------------------

TEST(Maps, ValueMapChecksKeysAndLengths) {
  const Tensor keys = from_values(DType::Int64, {3}, {1, 4, 7});
  const Tensor values = from_values(DType::Float32, {3}, {0.5, 0.25, 0.25});
  const Value m = Value::map(keys, values);
  EXPECT_TRUE(m.is_map());
  EXPECT_EQ(m.describe(), "map of 3 int64 -> float32 entries");
  const Tensor twice = from_values(DType::Int64, {3}, {1, 4, 1});
  EXPECT_THROW(Value::map(twice, values), Error);
  EXPECT_THROW(Value::map(keys, from_values(DType::Float32, {2}, {1, 2})), Error);
  EXPECT_THROW(Value::map(values, values), Error);  // float keys
  EXPECT_THROW(m.tensor("x"), Error);
}

}  // namespace
}  // namespace ember
