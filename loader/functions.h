// Model-local functions (ModelProto.functions, IR 8+): a node that calls one is
// replaced by the function's body, inlined with fresh names. Internal to loader/.
#pragma once

#include "onnx/onnx.pb.h"

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace ember {

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

class FunctionLibrary {
 public:
  explicit FunctionLibrary(const onnx::ModelProto& model);
  bool empty() const { return functions_.empty(); }
  // The function a node calls: same domain, op type (= function name) and overload.
  const onnx::FunctionProto* find(const onnx::NodeProto& node) const;
  // The body of `function` as `call` instantiates it: formal inputs/outputs bound to
  // the call's values, intermediates renamed uniquely, attribute references resolved
  // (from the call's attributes, else the function's defaults, else dropped).
  std::vector<onnx::NodeProto> inline_call(const onnx::NodeProto& call,
                                           const onnx::FunctionProto& function,
                                           UniqueNames& names) const;

 private:
  struct Entry {
    const onnx::FunctionProto* proto;
    std::map<std::string, onnx::AttributeProto> defaults;  // attribute_proto (IR 9+)
  };
  std::map<std::string, Entry> functions_;  // by domain/name/overload key
};

// "ai.onnx" and "" both name the standard domain; ember uses "".
std::string normalize_domain(const std::string& domain);

}  // namespace ember
