// Model-local functions (ModelProto.functions, IR 8+): a node that calls one is
// replaced by the function's body, inlined with fresh names. Internal to loader/.
#pragma once

#include "onnx/onnx.pb.h"

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace ember {

// Hostile files could make functions call themselves, or each other several times
// per level so that inlining multiplies: both are refused.
constexpr int kMaxCallDepth = 32;
constexpr int64_t kMaxInlinedNodes = 1'000'000;

// Hands out value and node names no one in the model uses yet.
class UniqueNames {
 public:
  // Records every name the graph (and its subgraphs) uses.
  void add_graph(const onnx::GraphProto& graph);
  // `base`, or `base_2`, `base_3`, ... whichever is free; the result is then taken.
  std::string make(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
};

struct LocalFunction {
  const onnx::FunctionProto* proto;
  std::map<std::string, onnx::AttributeProto> defaults;  // attribute_proto (IR 9+)
  // Nodes one call becomes once nested calls are inlined too (calls inside subgraph
  // attributes not counted); -1 when the calls recurse or nest too deep.
  int64_t expanded_nodes = 0;
};

class FunctionLibrary {
 public:
  explicit FunctionLibrary(const onnx::ModelProto& model);
  bool empty() const { return functions_.empty(); }
  // The function a node calls: same domain, op type (= function name) and overload.
  const LocalFunction* find(const onnx::NodeProto& node) const;

 private:
  LocalFunction* find_mutable(const onnx::NodeProto& node);
  void measure(LocalFunction& function, int depth);

  std::map<std::string, LocalFunction> functions_;  // by domain/name/overload key
};

// The body of `function` as `call` instantiates it: formal inputs/outputs bound to
// the call's values, intermediates renamed uniquely, attribute references resolved
// (from the call's attributes, else the function's defaults, else dropped).
std::vector<onnx::NodeProto> inline_call(const onnx::NodeProto& call,
                                         const LocalFunction& function, UniqueNames& names);

// "ai.onnx" and "" both name the standard domain; ember uses "".
std::string normalize_domain(const std::string& domain);

}  // namespace ember
