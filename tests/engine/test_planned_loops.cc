// Loop and Scan in the static plan: an iteration count known while planning makes
// them one step running a body planned once; a Loop whose trip count is data, or that
// may stop early, still runs eagerly and the plan says why.
#include "engine/src/executor.h"
#include "engine/src/planner.h"
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "allocation_counter.h"

namespace ember {
namespace {

using test::make_node;
using test::set_graph;

Tensor random_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

size_t count_steps(const Plan& plan, const std::string& op) {
  size_t n = 0;
  for (const PlannedStep& s : plan.steps) n += s.op_type == op;
  return n;
}

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_FLOAT_EQ(got.data_as<float>()[i], want.data_as<float>()[i]) << what << " at " << i;
}

struct Host {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<Backend*> backends{cpu.get()};
  WeightCache weights;
  RunContext context{backends};

  std::unique_ptr<Plan> plan(const Graph& g, const std::vector<Shape>& shapes) {
    return build_plan(g, shapes, backends, weights, {});
  }
};

// ---- Scan: a running sum. State s [d]; scan input xs, sliced along `in_axis`;
// body: s' = s + x, y = s' + bias (bias: a graph input the body reads from outside).
struct ScanCase {
  int64_t in_axis = 0, in_dir = 0, out_axis = 0, out_dir = 0;
};

Node make_scan(const ScanCase& c) {
  auto body = std::make_shared<Graph>();
  body->name = "running_sum";
  body->opset_imports = {{"", 17}};
  body->inputs = {{"s_in", DType::Float32, {}, false}, {"x", DType::Float32, {}, false}};
  body->nodes = {make_node("Add", {"s_in", "x"}, {"s_out"}), make_node("Add", {"s_out", "bias"}, {"y"})};
  body->outputs = {{"s_out", DType::Float32, {}, false}, {"y", DType::Float32, {}, false}};
  Node n = make_node("Scan", {"s0", "xs"}, {"s_final", "ys"});
  n.attributes.set_int("num_scan_inputs", 1);
  n.attributes.set_ints("scan_input_axes", {c.in_axis});
  n.attributes.set_ints("scan_input_directions", {c.in_dir});
  n.attributes.set_ints("scan_output_axes", {c.out_axis});
  n.attributes.set_ints("scan_output_directions", {c.out_dir});
  set_graph(n, "body", body);
  return n;
}

Graph graph_with(Node node, std::vector<ValueInfo> inputs, std::vector<std::string> outputs) {
  Graph g;
  g.opset_imports = {{"", 17}};
  g.inputs = std::move(inputs);
  g.nodes = {std::move(node)};
  for (auto& o : outputs) g.outputs.push_back({o, DType::Float32, {}, false});
  return g;
}

Graph scan_graph(const ScanCase& c) {
  return graph_with(make_scan(c),
                    {{"s0", DType::Float32, {}, false}, {"xs", DType::Float32, {}, false}, {"bias", DType::Float32, {}, false}},
                    {"s_final", "ys"});
}

// xs is [T, d] for in_axis 0, [d, T] for 1; ys [T, d] for out_axis 0, [d, T] otherwise.
std::vector<Tensor> scan_reference(const ScanCase& c, const Tensor& s0, const Tensor& xs, const Tensor& bias) {
  const int64_t d = s0.numel(), steps = xs.numel() / d;
  Tensor s = s0.clone();
  Tensor ys(DType::Float32, c.out_axis == 0 ? Shape{steps, d} : Shape{d, steps});
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t at = c.in_dir ? steps - 1 - t : t, pos = c.out_dir ? steps - 1 - t : t;
    for (int64_t i = 0; i < d; ++i) {
      float& si = s.data_as<float>()[i];
      si += xs.data_as<float>()[c.in_axis == 0 ? at * d + i : i * steps + at];
      ys.data_as<float>()[c.out_axis == 0 ? pos * d + i : i * steps + pos] = si + bias.data_as<float>()[i];
    }
  }
  return {s, ys};
}

// The eager kernel on the same node, the body reading `bias` from the scope.
std::vector<Tensor> run_eagerly(const Node& node, const std::vector<const Tensor*>& inputs, const Tensor& bias) {
  std::unordered_map<std::string, Tensor> scope = {{"bias", bias}};
  return evaluate_node(node, 17, inputs, 1, &scope);
}

TEST(PlannedScan, EveryDirectionAndAxisMatchesAHandComputedRunningSumAndTheEagerKernel) {
  const int64_t d = 3, steps = 5;
  for (ScanCase c : {ScanCase{0, 0, 0, 0}, ScanCase{0, 1, 0, 0}, ScanCase{1, 0, 0, 1}, ScanCase{1, 1, 1, 0},
                     ScanCase{0, 0, -1, 1}, ScanCase{-1, 1, -1, 1}}) {
    const std::string what = "in_axis " + std::to_string(c.in_axis) + " in_dir " + std::to_string(c.in_dir) +
                             " out_axis " + std::to_string(c.out_axis) + " out_dir " + std::to_string(c.out_dir);
    Graph g = scan_graph(c);
    const Shape xs_shape = c.in_axis == 0 ? Shape{steps, d} : Shape{d, steps};
    Host r;
    auto plan = r.plan(g, {{d}, xs_shape, {d}});
    ASSERT_TRUE(plan->eager.empty()) << what << "\n" << explain_plan(*plan);
    ASSERT_EQ(count_steps(*plan, "Scan"), 1u) << explain_plan(*plan);
    std::vector<Tensor> in = {random_tensor({d}, 1), random_tensor(xs_shape, 2), random_tensor({d}, 3)};
    const std::vector<Tensor> want = scan_reference(c, in[0], in[1], in[2]);
    std::vector<Tensor> out = {Tensor(DType::Float32, {d}), Tensor(DType::Float32, want[1].shape())};
    r.context.run(*plan, in, out, RunSettings{});
    expect_equal(out[0], want[0], what + " s_final");
    expect_equal(out[1], want[1], what + " ys");
    const std::vector<Tensor> eager = run_eagerly(g.nodes[0], {&in[0], &in[1]}, in[2]);
    expect_equal(out[0], eager[0], what + " s_final vs eager");
    expect_equal(out[1], eager[1], what + " ys vs eager");
  }
}

TEST(PlannedScan, ExplainShowsTheBodyUnderTheStep) {
  Graph g = scan_graph({});
  Host r;
  auto plan = r.plan(g, {{4}, {64, 4}, {4}});
  const std::string text = explain_plan(*plan);
  EXPECT_NE(text.find("Scan (body planned, 64 iterations)"), std::string::npos) << text;
  EXPECT_NE(text.find("body: 2 steps"), std::string::npos) << text;
}

TEST(PlannedScan, ASteadyStateRunAllocatesNothing) {
  for (ScanCase c : {ScanCase{}, ScanCase{1, 1, 1, 1}}) {  // in place, and through workspace slices
    Graph g = scan_graph(c);
    const Shape xs_shape = c.in_axis == 0 ? Shape{16, 8} : Shape{8, 16};
    Host r;
    auto plan = r.plan(g, {{8}, xs_shape, {8}});
    std::vector<Tensor> in = {random_tensor({8}, 4), random_tensor(xs_shape, 5), random_tensor({8}, 6)};
    std::vector<Tensor> out = {Tensor(DType::Float32, {8}), Tensor(DType::Float32, c.out_axis == 0 ? Shape{16, 8} : Shape{8, 16})};
    r.context.run(*plan, in, out, RunSettings{});  // binds the body once
    EXPECT_EQ(testing::count_allocations([&] { r.context.run(*plan, in, out, RunSettings{}); }), 0);
    expect_equal(out[1], scan_reference(c, in[0], in[1], in[2])[1], "ys");
  }
}

// ---- Loop: acc' = (acc + float(i)) * 0.5, scan y = acc' + bias, for M iterations.
// `trip_count` is the name of M; `cond` the condition input ("" for none); the body's
// condition is Identity(cond_in), or `cond_in < 3` (data) when `stops_early`.
Node make_loop(const std::string& trip_count, const std::string& cond, bool stops_early = false) {
  auto body = std::make_shared<Graph>();
  body->name = "halving";
  body->opset_imports = {{"", 17}};
  body->initializers["half"] = test::from_values(DType::Float32, {1}, {0.5});
  body->initializers["three"] = test::from_values(DType::Int64, {}, {3});
  body->inputs = {{"i", DType::Int64, {}, false}, {"c_in", DType::Bool, {}, false}, {"acc", DType::Float32, {}, false}};
  Attributes to_float;
  to_float.set_int("to", static_cast<int64_t>(DType::Float32));
  body->nodes = {make_node("Cast", {"i"}, {"fi"}, to_float), make_node("Add", {"acc", "fi"}, {"acc1"}),
                 make_node("Mul", {"acc1", "half"}, {"acc2"}), make_node("Add", {"acc2", "bias"}, {"y"})};
  body->nodes.push_back(stops_early ? make_node("Less", {"i", "three"}, {"c_out"}) : make_node("Identity", {"c_in"}, {"c_out"}));
  body->outputs = {{"c_out", DType::Bool, {}, false}, {"acc2", DType::Float32, {}, false}, {"y", DType::Float32, {}, false}};
  Node n = make_node("Loop", {trip_count, cond, "a0"}, {"a_final", "ys"});
  set_graph(n, "body", body);
  return n;
}

std::vector<Tensor> loop_reference(int64_t trips, const Tensor& a0, const Tensor& bias) {
  const int64_t d = a0.numel();
  Tensor acc = a0.clone(), ys(DType::Float32, {trips, d});
  for (int64_t i = 0; i < trips; ++i)
    for (int64_t k = 0; k < d; ++k) {
      float& a = acc.data_as<float>()[k];
      a = (a + static_cast<float>(i)) * 0.5f;
      ys.data_as<float>()[i * d + k] = a + bias.data_as<float>()[k];
    }
  return {acc, ys};
}

// M = 6 as an initializer; the condition absent or a true initializer.
Graph loop_graph(const std::string& cond, bool stops_early = false) {
  Graph g = graph_with(make_loop("m", cond, stops_early),
                       {{"a0", DType::Float32, {}, false}, {"bias", DType::Float32, {}, false}}, {"a_final", "ys"});
  g.initializers["m"] = test::from_values(DType::Int64, {}, {6});
  g.initializers["yes"] = test::from_values(DType::Bool, {}, {1});
  return g;
}

TEST(PlannedLoop, AKnownTripCountRunsAsOneStepWithCarriedAndScanOutputs) {
  for (const std::string cond : {"", "yes"}) {
    Graph g = loop_graph(cond);
    Host r;
    auto plan = r.plan(g, {{4}, {4}});
    ASSERT_TRUE(plan->eager.empty()) << explain_plan(*plan);
    ASSERT_EQ(count_steps(*plan, "Loop"), 1u) << explain_plan(*plan);
    EXPECT_NE(explain_plan(*plan).find("Loop (body planned, 6 iterations)"), std::string::npos) << explain_plan(*plan);
    std::vector<Tensor> in = {random_tensor({4}, 7), random_tensor({4}, 8)};
    std::vector<Tensor> out = {Tensor(DType::Float32, {4}), Tensor(DType::Float32, {6, 4})};
    r.context.run(*plan, in, out, RunSettings{});
    const std::vector<Tensor> want = loop_reference(6, in[0], in[1]);
    expect_equal(out[0], want[0], "a_final, cond '" + cond + "'");
    expect_equal(out[1], want[1], "ys, cond '" + cond + "'");
    const std::vector<Tensor> eager = run_eagerly(g.nodes[0], {&g.initializers["m"], cond.empty() ? nullptr : &g.initializers["yes"], &in[0]}, in[1]);
    expect_equal(out[0], eager[0], "a_final vs eager");
    expect_equal(out[1], eager[1], "ys vs eager");
  }
}

TEST(PlannedLoop, ATripCountFoldedFromShapesIsKnownWhilePlanning) {
  Graph g = graph_with(make_loop("m", ""), {{"a0", DType::Float32, {}, false}, {"bias", DType::Float32, {}, false}},
                       {"a_final", "ys"});
  g.initializers["zero"] = test::from_values(DType::Int64, {1}, {0});
  g.nodes.insert(g.nodes.begin(), {make_node("Shape", {"a0"}, {"a_shape"}), make_node("Gather", {"a_shape", "zero"}, {"m1"}),
                                   make_node("Squeeze", {"m1"}, {"m"})});
  Host r;
  auto plan = r.plan(g, {{5}, {5}});
  ASSERT_TRUE(plan->eager.empty()) << explain_plan(*plan);
  std::vector<Tensor> in = {random_tensor({5}, 9), random_tensor({5}, 10)};
  std::vector<Tensor> out = {Tensor(DType::Float32, {5}), Tensor(DType::Float32, {5, 5})};
  r.context.run(*plan, in, out, RunSettings{});
  expect_equal(out[1], loop_reference(5, in[0], in[1])[1], "ys");
}

TEST(PlannedLoop, ATripCountFromDataRunsEagerlyAndSaysWhy) {
  Graph g = graph_with(make_loop("m", ""),
                       {{"a0", DType::Float32, {}, false}, {"bias", DType::Float32, {}, false}, {"m", DType::Int64, {}, false}},
                       {"a_final", "ys"});
  Host r;
  auto plan = r.plan(g, {{3}, {3}, {}});
  ASSERT_FALSE(plan->eager.empty());
  EXPECT_NE(explain_plan(*plan).find("its trip count is known only at run time"), std::string::npos) << explain_plan(*plan);
  std::vector<Tensor> in = {random_tensor({3}, 11), random_tensor({3}, 12), test::from_values(DType::Int64, {}, {4})};
  std::vector<Tensor> out = {Tensor(), Tensor()};
  r.context.run(*plan, in, out, RunSettings{});
  const std::vector<Tensor> want = loop_reference(4, in[0], in[1]);
  expect_equal(out[0], want[0], "a_final");
  expect_equal(out[1], want[1], "ys");
}

TEST(PlannedLoop, ABodyThatMayStopEarlyRunsEagerlyAndSaysWhy) {
  Graph g = loop_graph("yes", /*stops_early=*/true);
  Host r;
  auto plan = r.plan(g, {{3}, {3}});
  ASSERT_FALSE(plan->eager.empty());
  EXPECT_NE(explain_plan(*plan).find("may stop early"), std::string::npos) << explain_plan(*plan);
  std::vector<Tensor> in = {random_tensor({3}, 13), random_tensor({3}, 14)};
  std::vector<Tensor> out = {Tensor(), Tensor()};
  r.context.run(*plan, in, out, RunSettings{});
  expect_equal(out[1], loop_reference(4, in[0], in[1])[1], "ys");  // i = 0..3: stops after i = 3
}

TEST(PlannedLoop, ASteadyStateRunAllocatesNothing) {
  Graph g = loop_graph("yes");
  Host r;
  auto plan = r.plan(g, {{8}, {8}});
  std::vector<Tensor> in = {random_tensor({8}, 15), random_tensor({8}, 16)};
  std::vector<Tensor> out = {Tensor(DType::Float32, {8}), Tensor(DType::Float32, {6, 8})};
  r.context.run(*plan, in, out, RunSettings{});  // binds the body once
  EXPECT_EQ(testing::count_allocations([&] { r.context.run(*plan, in, out, RunSettings{}); }), 0);
  expect_equal(out[0], loop_reference(6, in[0], in[1])[0], "a_final");
}

}  // namespace
}  // namespace ember
