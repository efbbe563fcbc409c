#include "loader/functions.h"

#include <ember/core/error.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <unordered_map>

namespace ember {

namespace {

using google::protobuf::internal::WireFormatLite;

// Fields newer than the 1.12 schema we compile (NodeProto.overload = 8,
// FunctionProto.attribute_proto = 11 and overload = 13) arrive as unknown bytes.
std::vector<std::string> unknown_bytes_fields(const std::string& unknown, int field) {
  std::vector<std::string> found;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(unknown.data()),
                                            static_cast<int>(unknown.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == field &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::string value;
      if (!WireFormatLite::ReadBytes(&in, &value)) break;
      found.push_back(std::move(value));
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  return found;
}

std::string unknown_string_field(const std::string& unknown, int field) {
  auto all = unknown_bytes_fields(unknown, field);
  return all.empty() ? std::string() : all.back();
}

std::string key(const std::string& domain, const std::string& name, const std::string& overload) {
  return normalize_domain(domain) + '\n' + name + '\n' + overload;
}

// Value names as the call binds them: formal name -> actual name ("" = absent).
using Renames = std::unordered_map<std::string, std::string>;

std::string renamed(const Renames& renames, const std::string& name) {
  auto it = renames.find(name);
  return it == renames.end() ? name : it->second;
}

void rename_subgraph(onnx::GraphProto& graph, const Renames& renames);

// Replaces references to the function's attributes; returns false when the
// attribute is to be dropped (the call sets none and the function has no default).
bool resolve_attribute(onnx::AttributeProto& attr, const onnx::NodeProto& call,
                       const std::map<std::string, onnx::AttributeProto>& defaults) {
  if (!attr.ref_attr_name().empty()) {
    const std::string& ref = attr.ref_attr_name();
    const onnx::AttributeProto* source = nullptr;
    for (const auto& a : call.attribute())
      if (a.name() == ref) source = &a;
    if (!source) {
      auto it = defaults.find(ref);
      if (it == defaults.end()) return false;
      source = &it->second;
    }
    std::string name = attr.name();
    attr = *source;
    attr.set_name(name);
    attr.clear_ref_attr_name();
  }
  return true;
}

void resolve_attributes(onnx::NodeProto& node, const onnx::NodeProto& call,
                        const std::map<std::string, onnx::AttributeProto>& defaults,
                        const Renames& renames) {
  auto* attrs = node.mutable_attribute();
  for (int i = attrs->size(); i-- > 0;) {
    onnx::AttributeProto& a = attrs->at(i);
    if (!resolve_attribute(a, call, defaults)) {
      attrs->DeleteSubrange(i, 1);
      continue;
    }
    if (a.has_g()) rename_subgraph(*a.mutable_g(), renames);
    for (auto& g : *a.mutable_graphs()) rename_subgraph(g, renames);
  }
}

// A subgraph of a body node may read the function's values from the outer scope;
// names the subgraph defines itself shadow nothing (ONNX forbids shadowing).
void rename_subgraph(onnx::GraphProto& graph, const Renames& renames) {
  Renames visible = renames;
  for (const auto& v : graph.input()) visible.erase(v.name());
  for (const auto& t : graph.initializer()) visible.erase(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) visible.erase(o);
  for (auto& n : *graph.mutable_node()) {
    for (auto& in : *n.mutable_input()) in = renamed(visible, in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_subgraph(*a.mutable_g(), visible);
      for (auto& g : *a.mutable_graphs()) rename_subgraph(g, visible);
    }
  }
  for (auto& o : *graph.mutable_output()) o.set_name(renamed(visible, o.name()));
}

}  // namespace

std::string normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

void UniqueNames::add_graph(const onnx::GraphProto& graph) {
  for (const auto& v : graph.input()) used_.insert(v.name());
  for (const auto& v : graph.output()) used_.insert(v.name());
  for (const auto& t : graph.initializer()) used_.insert(t.name());
  for (const auto& n : graph.node()) {
    used_.insert(n.name());
    used_.insert(n.input().begin(), n.input().end());
    used_.insert(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) add_graph(a.g());
      for (const auto& g : a.graphs()) add_graph(g);
    }
  }
}

std::string UniqueNames::make(const std::string& base) {
  std::string name = base;
  for (int i = 2; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

FunctionLibrary::FunctionLibrary(const onnx::ModelProto& model) {
  for (const auto& f : model.functions()) {
    const std::string overload = unknown_string_field(f.unknown_fields(), 13);
    LocalFunction entry{&f, {}};
    for (const auto& bytes : unknown_bytes_fields(f.unknown_fields(), 11)) {
      onnx::AttributeProto a;
      if (!a.ParseFromString(bytes))
        throw Error("function '" + f.name() + "' has an unreadable attribute default");
      entry.defaults[a.name()] = std::move(a);
    }
    if (!functions_.emplace(key(f.domain(), f.name(), overload), std::move(entry)).second)
      throw Error("function '" + f.name() + "' of domain '" + f.domain() + "' is defined twice");
  }
  for (auto& [_, function] : functions_) measure(function, 0);
}

const LocalFunction* FunctionLibrary::find(const onnx::NodeProto& node) const {
  return const_cast<FunctionLibrary*>(this)->find_mutable(node);
}

LocalFunction* FunctionLibrary::find_mutable(const onnx::NodeProto& node) {
  if (functions_.empty()) return nullptr;
  const std::string overload = unknown_string_field(node.unknown_fields(), 8);
  auto it = functions_.find(key(node.domain(), node.op_type(), overload));
  return it == functions_.end() ? nullptr : &it->second;
}

// Depth-first over the call graph. A function being measured has expanded_nodes -1
// until it is done, so a call back into it (recursion) reads as -1 too.
void FunctionLibrary::measure(LocalFunction& function, int depth) {
  if (function.expanded_nodes != 0) return;
  function.expanded_nodes = -1;
  if (depth > kMaxCallDepth) return;
  int64_t total = 0;
  for (const auto& node : function.proto->node()) {
    LocalFunction* callee = find_mutable(node);
    if (callee) measure(*callee, depth + 1);
    if (callee && callee->expanded_nodes < 0) return;
    // Saturate: only "more than the cap" matters.
    total = std::min(total + (callee ? callee->expanded_nodes : 1), kMaxInlinedNodes + 1);
  }
  function.expanded_nodes = total;
}

std::vector<onnx::NodeProto> inline_call(const onnx::NodeProto& call, const LocalFunction& function,
                                         UniqueNames& names) {
  const onnx::FunctionProto& f = *function.proto;
  // Errors name the function; the caller prefixes the call node.
  if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
    throw Error("passes " + std::to_string(call.input_size()) + " inputs and " +
                std::to_string(call.output_size()) + " outputs to function '" + f.name() +
                "', which takes " + std::to_string(f.input_size()) + " and " +
                std::to_string(f.output_size()));
  const std::string prefix = (call.name().empty() ? f.name() : call.name()) + "/";
  Renames renames;
  for (int i = 0; i < f.input_size(); ++i)
    renames[f.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < f.output_size(); ++i) {
    const bool bound = i < call.output_size() && !call.output(i).empty();
    renames[f.output(i)] = bound ? call.output(i) : names.make(prefix + f.output(i));
  }
  for (const auto& n : f.node())
    for (const auto& o : n.output())
      if (!o.empty() && !renames.count(o)) renames[o] = names.make(prefix + o);

  std::vector<onnx::NodeProto> body;
  body.reserve(f.node_size());
  for (const auto& original : f.node()) {
    onnx::NodeProto& n = body.emplace_back(original);
    n.set_name(names.make(prefix + (n.name().empty() ? n.op_type() : n.name())));
    for (auto& in : *n.mutable_input()) {
      // A function has no outer scope: every value it reads must be its own.
      if (!in.empty() && !renames.count(in))
        throw Error("function '" + f.name() + "' reads '" + in +
                    "', which is neither its input nor any of its nodes' outputs");
      in = renamed(renames, in);
    }
    for (auto& out : *n.mutable_output()) out = renamed(renames, out);
    resolve_attributes(n, call, function.defaults, renames);
  }
  return body;
}

}  // namespace ember
