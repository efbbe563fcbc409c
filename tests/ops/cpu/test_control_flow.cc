// If, Loop and Scan against hand-computed references, with bodies that read the
// enclosing scope.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

namespace ember {
namespace {

using test::from_values;
using test::make_node;
using test::set_graph;

template <class T>
Tensor scalar(DType dtype, T v) {
  Tensor t(dtype, {});
  *t.data_as<T>() = v;
  return t;
}

TEST(ControlFlow, IfRunsTheBranchTheConditionPicksAndReadsTheOuterScope) {
  auto then_g = std::make_shared<Graph>(), else_g = std::make_shared<Graph>();
  then_g->nodes = {make_node("Add", {"x", "x"}, {"t"})};
  then_g->outputs = {{"t", DType::Float32, {}, false}};
  else_g->nodes = {make_node("Neg", {"x"}, {"e"})};
  else_g->outputs = {{"e", DType::Float32, {}, false}};
  Node n = make_node("If", {"c"}, {"y"});
  set_graph(n, "then_branch", then_g);
  set_graph(n, "else_branch", else_g);
  std::unordered_map<std::string, Tensor> scope = {{"x", from_values(DType::Float32, {3}, {1.5f, -2, 4})}};
  for (bool c : {true, false}) {
    Tensor cond = scalar<uint8_t>(DType::Bool, c);
    auto out = evaluate_node(n, 17, {&cond}, 1, &scope);
    ASSERT_EQ(out[0].shape(), (Shape{3}));
    const float* x = scope["x"].data_as<float>();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out[0].data_as<float>()[i], c ? 2 * x[i] : -x[i]);
  }
}

// Loop: carried s += x * i for i < trips, scan output of every s.
TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  auto body = std::make_shared<Graph>();
  body->inputs = {{"i", DType::Int64, {}, true}, {"cond", DType::Bool, {}, true}, {"s", DType::Float32, {}, false}};
  body->nodes = {make_node("Cast", {"i"}, {"fi"}), make_node("Mul", {"x", "fi"}, {"xi"}),
                 make_node("Add", {"s", "xi"}, {"s_next"}), make_node("Identity", {"cond"}, {"cond_out"}),
                 make_node("Identity", {"s_next"}, {"scan"})};
  body->nodes[0].attributes.set_int("to", static_cast<int64_t>(DType::Float32));
  body->outputs = {{"cond_out", DType::Bool, {}, false},
                   {"s_next", DType::Float32, {}, false},
                   {"scan", DType::Float32, {}, false}};
  Node n = make_node("Loop", {"trips", "", "s0"}, {"s_final", "all"});
  set_graph(n, "body", body);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  std::unordered_map<std::string, Tensor> scope = {{"x", from_values(DType::Float32, {2}, {d(rng), d(rng)})}};
  Tensor trips = scalar<int64_t>(DType::Int64, 4), s0 = from_values(DType::Float32, {2}, {d(rng), d(rng)});
  auto out = evaluate_node(n, 17, {&trips, nullptr, &s0}, 1, &scope);
  ASSERT_EQ(out[1].shape(), (Shape{4, 2}));
  std::vector<float> s = {s0.data_as<float>()[0], s0.data_as<float>()[1]};
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 2; ++k) {
      s[k] += scope["x"].data_as<float>()[k] * static_cast<float>(i);
      EXPECT_FLOAT_EQ(out[1].data_as<float>()[i * 2 + k], s[k]);
    }
  EXPECT_FLOAT_EQ(out[0].data_as<float>()[0], s[0]);
}

// Scan: running sum over axis 1, output reversed.
TEST(ControlFlow, ScanSlicesAlongItsAxisAndHonoursDirections) {
  auto body = std::make_shared<Graph>();
  body->inputs = {{"acc", DType::Float32, {}, false}, {"row", DType::Float32, {}, false}};
  body->nodes = {make_node("Add", {"acc", "row"}, {"acc_next"}), make_node("Identity", {"acc_next"}, {"out"})};
  body->outputs = {{"acc_next", DType::Float32, {}, false}, {"out", DType::Float32, {}, false}};
  Node n = make_node("Scan", {"init", "seq"}, {"final", "partial"});
  set_graph(n, "body", body);
  n.attributes.set_int("num_scan_inputs", 1);
  n.attributes.set_ints("scan_input_axes", {1});
  n.attributes.set_ints("scan_output_directions", {1});
  Tensor init = from_values(DType::Float32, {2}, {0.5f, -1});
  Tensor seq = from_values(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = evaluate_node(n, 17, {&init, &seq}, 1);
  ASSERT_EQ(out[1].shape(), (Shape{3, 2}));
  // Running sums per row: row 0: 1.5, 3.5, 6.5; row 1: 3, 8, 14; stacked in reverse.
  const std::vector<float> expected = {6.5f, 14, 3.5f, 8, 1.5f, 3};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[1].data_as<float>()[i], expected[i]);
  EXPECT_FLOAT_EQ(out[0].data_as<float>()[1], 14);
}

// Scan-8: a batch axis 0 on every input and output, sequence_lens per batch item, a
// reversed scan input. Random values; the reference is the running sums written out.
TEST(ControlFlow, Scan8RunsEachBatchItemOverItsOwnLengthAndPadsItsOutputs) {
  auto body = std::make_shared<Graph>();
  body->inputs = {{"acc", DType::Float32, {}, false}, {"row", DType::Float32, {}, false}};
  body->nodes = {make_node("Add", {"acc", "row"}, {"acc_next"}), make_node("Identity", {"acc_next"}, {"out"})};
  body->outputs = {{"acc_next", DType::Float32, {}, false}, {"out", DType::Float32, {}, false}};
  Node n = make_node("Scan", {"lens", "init", "seq"}, {"final", "partial"});
  set_graph(n, "body", body);
  n.attributes.set_int("num_scan_inputs", 1);
  n.attributes.set_ints("directions", {1});
  const int64_t batch = 2, len = 4, width = 3;
  Tensor init = test::random_floats({batch, width}, 1), seq = test::random_floats({batch, len, width}, 2);
  Tensor lens = from_values(DType::Int64, {batch}, {4, 2});
  auto out = evaluate_node(n, 8, {&lens, &init, &seq}, 1);
  ASSERT_EQ(out[0].shape(), (Shape{batch, width}));
  ASSERT_EQ(out[1].shape(), (Shape{batch, len, width}));
  const float* x = seq.data_as<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n_b = b == 0 ? 4 : 2;
    for (int64_t c = 0; c < width; ++c) {
      float acc = init.data_as<float>()[b * width + c];
      for (int64_t t = 0; t < len; ++t) {
        if (t < n_b) acc += x[(b * len + (n_b - 1 - t)) * width + c];  // reversed within the item's length
        // Float additions in the same order as the kernel: exact equality.
        EXPECT_EQ(out[1].data_as<float>()[(b * len + t) * width + c], t < n_b ? acc : 0.f) << b << " " << t;
      }
      EXPECT_EQ(out[0].data_as<float>()[b * width + c], acc);
    }
  }
  Tensor too_long = from_values(DType::Int64, {batch}, {4, 5});
  EXPECT_THROW(evaluate_node(n, 8, {&too_long, &init, &seq}, 1), Error);
}

}  // namespace
}  // namespace ember
