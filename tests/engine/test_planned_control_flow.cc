// If nodes in the static plan: a condition known while planning inlines its branch; a
// condition known only at run time plans both branches as sub-plans of one step; an If
// whose branches disagree on output shapes still runs, eagerly.
#include "engine/src/executor.h"
#include "engine/src/planner.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>

#include "allocation_counter.h"

namespace ember {
namespace {

using test::make_node;
using test::set_graph;

// then: t = (x + w) * x with w a branch initializer; else: e = Neg(x) + y.
// Both give x's shape unless `else_shrinks`, where else gives x[:1] instead.
Node make_if(const std::string& condition, bool else_shrinks = false) {
  auto then_g = std::make_shared<Graph>(), else_g = std::make_shared<Graph>();
  then_g->name = "then";
  else_g->name = "else";
  then_g->opset_imports = else_g->opset_imports = {{"", 17}};
  then_g->initializers["w"] = test::from_values(DType::Float32, {1}, {0.25f});
  then_g->nodes = {make_node("Add", {"x", "w"}, {"xw"}), make_node("Mul", {"xw", "x"}, {"t"})};
  then_g->outputs = {{"t", DType::Float32, {}, false}};
  else_g->nodes = {make_node("Neg", {"x"}, {"nx"}), make_node("Add", {"nx", "y"}, {"e"})};
  if (else_shrinks) {
    else_g->initializers["starts"] = test::from_values(DType::Int64, {1}, {0});
    else_g->initializers["ends"] = test::from_values(DType::Int64, {1}, {1});
    else_g->nodes.push_back(make_node("Slice", {"e", "starts", "ends"}, {"e1"}));
  }
  else_g->outputs = {{else_shrinks ? "e1" : "e", DType::Float32, {}, false}};
  Node n = make_node("If", {condition}, {"z"});
  n.name = "the_if";
  set_graph(n, "then_branch", then_g);
  set_graph(n, "else_branch", else_g);
  return n;
}

// inputs x, y: float [n]; c: bool [] decides; out = If(...) * 2.
Graph graph_with_if(Node the_if, std::vector<Node> before = {}) {
  Graph g;
  g.opset_imports = {{"", 17}};
  g.inputs = {{"x", DType::Float32, {{-1, "n"}}, true},
              {"y", DType::Float32, {{-1, "n"}}, true},
              {"c", DType::Bool, {}, true}};
  g.initializers["two"] = test::from_values(DType::Float32, {1}, {2.f});
  g.nodes = std::move(before);
  g.nodes.push_back(std::move(the_if));
  g.nodes.push_back(make_node("Mul", {"z", "two"}, {"out"}));
  g.outputs = {{"out", DType::Float32, {}, false}};
  return g;
}

struct Host {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<Backend*> backends{cpu.get()};
  WeightCache weights;
  RunContext context{backends};

  std::unique_ptr<Plan> plan(const Graph& g, int64_t n) {
    const std::vector<Shape> shapes = {{n}, {n}, {}};
    return build_plan(g, shapes, backends, weights, {});
  }
};

struct Inputs {
  std::vector<Tensor> tensors;
  explicit Inputs(int64_t n, bool c) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> d(-3, 3);
    tensors = {Tensor(DType::Float32, {n}), Tensor(DType::Float32, {n}), Tensor(DType::Bool, {})};
    for (int k = 0; k < 2; ++k)
      for (int64_t i = 0; i < n; ++i) tensors[k].data_as<float>()[i] = d(rng);
    *tensors[2].data_as<uint8_t>() = c;
  }
  float expected(int64_t i, bool c) const {
    const float x = tensors[0].data_as<float>()[i], y = tensors[1].data_as<float>()[i];
    return 2 * (c ? (x + 0.25f) * x : -x + y);
  }
};

size_t count_steps(const Plan& plan, const std::string& op) {
  size_t n = 0;
  for (const PlannedStep& s : plan.steps) n += s.op_type == op;
  return n;
}

TEST(PlannedIf, AConditionKnownWhilePlanningInlinesTheBranchItTakes) {
  // c2 = (Size(x) == 5): known from the shapes alone.
  std::vector<Node> before = {make_node("Size", {"x"}, {"size"}), make_node("Equal", {"size", "five"}, {"c2"})};
  Graph g = graph_with_if(make_if("c2"), std::move(before));
  g.initializers["five"] = test::from_values(DType::Int64, {}, {5});
  Host r;
  std::vector<std::unique_ptr<Plan>> plans;
  for (int64_t n : {5, 7}) {
    auto plan = r.plan(g, n);
    EXPECT_TRUE(plan->eager.empty()) << explain_plan(*plan);
    EXPECT_EQ(count_steps(*plan, "If"), 0u) << explain_plan(*plan);
    EXPECT_EQ(count_steps(*plan, n == 5 ? "Mul" : "Neg"), n == 5 ? 2u : 1u) << explain_plan(*plan);
    Inputs in(n, false);  // c is not read: the shapes decide
    std::vector<Tensor> out = {Tensor(DType::Float32, {n})};
    r.context.run(*plan, in.tensors, out, RunSettings{});
    for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], in.expected(i, n == 5)) << i;
    plans.push_back(std::move(plan));  // alive while the context may hold its binding
  }
}

TEST(PlannedIf, AConditionFromInputDataPlansBothBranchesAsOneStep) {
  Graph g = graph_with_if(make_if("c"));
  Host r;
  auto plan = r.plan(g, 9);
  EXPECT_TRUE(plan->eager.empty()) << explain_plan(*plan);
  ASSERT_EQ(count_steps(*plan, "If"), 1u) << explain_plan(*plan);
  const PlannedStep* step = nullptr;
  for (const PlannedStep& s : plan->steps)
    if (s.op_type == "If") step = &s;
  EXPECT_EQ(step->subplans.size(), 2u);
  EXPECT_GT(step->workspace_bytes, 0u);
  EXPECT_NE(explain_plan(*plan).find("then_branch: 2 steps"), std::string::npos) << explain_plan(*plan);
  for (bool c : {true, false, true}) {
    Inputs in(9, c);
    std::vector<Tensor> out = {Tensor(DType::Float32, {9})};
    r.context.run(*plan, in.tensors, out, RunSettings{});
    for (int64_t i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], in.expected(i, c)) << c << " " << i;
  }
}

TEST(PlannedIf, ASteadyStateRunOfAPlannedIfAllocatesNothing) {
  Graph g = graph_with_if(make_if("c"));
  Host r;
  auto plan = r.plan(g, 16);
  Inputs yes(16, true), no(16, false);
  std::vector<Tensor> out = {Tensor(DType::Float32, {16})};
  r.context.run(*plan, yes.tensors, out, RunSettings{});  // binds each branch once
  r.context.run(*plan, no.tensors, out, RunSettings{});
  const int allocations = testing::count_allocations([&] {
    r.context.run(*plan, yes.tensors, out, RunSettings{});
    r.context.run(*plan, no.tensors, out, RunSettings{});
  });
  EXPECT_EQ(allocations, 0);
  for (int64_t i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], no.expected(i, false));
}

TEST(PlannedIf, AProfileNamesTheNodesOfTheBranchTakenNotTheIf) {
  Graph g = graph_with_if(make_if("c"));
  Host r;
  auto plan = r.plan(g, 8);
  for (bool c : {true, false}) {
    Profile profile;
    RunSettings settings;
    settings.profile = &profile;
    Inputs in(8, c);
    std::vector<Tensor> out = {Tensor(DType::Float32, {8})};
    r.context.run(*plan, in.tensors, out, settings);
    std::set<std::string> nodes;
    for (const NodeTiming& t : profile.timings) nodes.insert(t.node);
    const std::set<std::string> expected = c ? std::set<std::string>{"xw_node", "t_node", "out_node"}
                                             : std::set<std::string>{"nx_node", "e_node", "out_node"};
    EXPECT_EQ(nodes, expected);
  }
}

TEST(PlannedIf, BranchesThatDisagreeOnShapesRunEagerlyAndSaySo) {
  Graph g = graph_with_if(make_if("c", /*else_shrinks=*/true));
  Host r;
  auto plan = r.plan(g, 4);
  ASSERT_FALSE(plan->eager.empty());
  EXPECT_NE(explain_plan(*plan).find("output 0 differ"), std::string::npos) << explain_plan(*plan);
  for (bool c : {true, false}) {
    Inputs in(4, c);
    std::vector<Tensor> out = {Tensor()};
    r.context.run(*plan, in.tensors, out, RunSettings{});
    ASSERT_EQ(out[0].shape(), (Shape{c ? 4 : 1}));
    for (int64_t i = 0; i < out[0].numel(); ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], in.expected(i, c));
  }
}

}  // namespace
}  // namespace ember
