// If, Loop and SequenceMap over ember::Values: an If whose branches yield sequences or
// optionals, a Loop carrying one, and SequenceMap, which runs its body once per element.
// Tensor-only If/Loop/Scan nodes never come here (ops/cpu/control_flow.cc, or planned).
#include "ops/cpu/control_flow_util.h"
#include "ops/run_stop.h"
#include "ops/value_ops.h"

#include <ember/core/error.h>

#include <algorithm>

namespace ember {

namespace {

bool truth(const ValueOpContext& ctx, const Value& v) {
  return truth(v.tensor(ctx.node.label() + ": the condition"), ctx.node);
}

Value scalar_int64(int64_t v) {
  Tensor t(DType::Int64, {});
  *t.data_as<int64_t>() = v;
  return Value(t);
}

Value scalar_bool(bool v) {
  Tensor t(DType::Bool, {});
  *t.data_as<uint8_t>() = v;
  return Value(t);
}

std::vector<Value> run_if(const ValueOpContext& ctx) {
  const Graph& branch = ctx.node.attributes.get_graph(truth(ctx, ctx.input(0)) ? "then_branch" : "else_branch");
  std::vector<Value> out = run_subgraph_on_values(branch, ctx.opset, {}, ctx.scope, ctx.num_threads, ctx.stop);
  if (out.size() < ctx.node.outputs.size())
    ctx.fail("the branch taken has " + std::to_string(out.size()) + " outputs, the node " +
             std::to_string(ctx.node.outputs.size()));
  return out;
}

std::vector<Value> run_loop(const ValueOpContext& ctx) {
  const Graph& body = ctx.node.attributes.get_graph("body");
  const bool has_trips = ctx.num_inputs() > 0 && ctx.inputs[0];
  const bool has_cond = ctx.num_inputs() > 1 && ctx.inputs[1];
  const int64_t trips = loop_trip_count(has_trips ? &ctx.tensor(0) : nullptr, ctx.node);
  bool cond = has_cond ? truth(ctx, ctx.input(1)) : true;
  std::vector<Value> carried;
  for (size_t i = 2; i < ctx.num_inputs(); ++i) carried.push_back(ctx.inputs[i] ? *ctx.inputs[i] : Value());
  if (body.outputs.size() < 1 + carried.size() || body.inputs.size() != 2 + carried.size())
    ctx.fail("the body's inputs and outputs do not match the loop's " + std::to_string(carried.size()) +
             " carried values");
  std::vector<std::vector<Tensor>> scans(body.outputs.size() - 1 - carried.size());
  for (int64_t i = 0; (trips < 0 || i < trips) && cond; ++i) {
    if (i >= kMaxLoopIterations) ctx.fail("ran past 2^31 iterations");
    if (ctx.stop) ctx.stop->check();
    std::vector<Value> in = {scalar_int64(i), scalar_bool(cond)};
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Value> out = run_subgraph_on_values(body, ctx.opset, in, ctx.scope, ctx.num_threads, ctx.stop);
    if (has_cond) cond = truth(ctx, out[0]);
    std::copy(out.begin() + 1, out.begin() + 1 + static_cast<std::ptrdiff_t>(carried.size()), carried.begin());
    for (size_t k = 0; k < scans.size(); ++k)
      scans[k].push_back(out[1 + carried.size() + k].tensor(ctx.node.label() + ": scan output").clone());
  }
  const size_t n_carried = carried.size();
  std::vector<Value> results = std::move(carried);
  for (size_t k = 0; k < scans.size(); ++k)
    results.emplace_back(stack(scans[k], 0, body.outputs[1 + n_carried + k].dtype, ctx.node));
  return results;
}

// The body runs once per element of the first input; the other inputs are sequences of
// the same length (one element each time) or tensors (the same each time).
std::vector<Value> sequence_map(const ValueOpContext& ctx) {
  const Graph& body = ctx.node.attributes.get_graph("body");
  const size_t length = ctx.sequence(0).size();
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input(i).is_sequence() && ctx.sequence(i).size() != length)
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(ctx.sequence(i).size()) +
               " elements, the first input " + std::to_string(length));
  std::vector<std::vector<Value>> outputs(body.outputs.size());
  for (size_t e = 0; e < length; ++e) {
    std::vector<Value> in;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      in.push_back(ctx.input(i).is_sequence() ? ctx.sequence(i)[e] : ctx.input(i));
    std::vector<Value> out = run_subgraph_on_values(body, ctx.opset, in, ctx.scope, ctx.num_threads, ctx.stop);
    for (size_t k = 0; k < outputs.size(); ++k) outputs[k].push_back(std::move(out[k]));
  }
  std::vector<Value> results;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const DType dtype = outputs[k].empty() ? body.outputs[k].dtype : outputs[k][0].element_dtype();
    results.push_back(Value::sequence(std::move(outputs[k]), dtype));
  }
  return results;
}

}  // namespace

EMBER_VALUE_OP("If", "", run_if, /*only_for_values=*/true);
EMBER_VALUE_OP("Loop", "", run_loop, /*only_for_values=*/true);
EMBER_VALUE_OP("SequenceMap", "", sequence_map);

}  // namespace ember
