#include "loader/convert.h"
#include "loader/tensor_proto.h"

#include <ember/core/error.h>

#include <algorithm>
#include <unordered_set>

namespace ember {

namespace {

// Hostile files could nest subgraphs without end; real models stay far below this.
constexpr int kMaxGraphDepth = 32;

std::string proto_label(const onnx::NodeProto& p) {
  Node n;
  n.name = p.name();
  n.op_type = p.op_type();
  if (p.output_size()) n.outputs.push_back(p.output(0));
  return n.label();
}

bool defined_outside_nodes(const Graph& g, const std::string& name) {
  if (g.is_initializer(name)) return true;
  for (const auto& v : g.inputs)
    if (v.name == name) return true;
  return false;
}

void add_initializer(Graph& g, const std::string& name, Tensor t) {
  if (defined_outside_nodes(g, name))
    throw Error("'" + name + "' is defined twice (as an initializer or graph input)");
  g.initializers.emplace(name, std::move(t));
}

template <class T>
Tensor vector_tensor(DType dtype, const std::vector<T>& values) {
  Tensor t(dtype, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data_as<T>());
  return t;
}

// The data of a Constant node, whichever of its attributes holds it.
Tensor constant_value(const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !n.inputs.empty())
    throw Error("a Constant takes no inputs and has one output");
  const auto& attrs = n.attributes.all();
  if (attrs.size() != 1)
    throw Error("a Constant needs exactly one attribute (value, value_float(s), value_int(s)), got " +
                std::to_string(attrs.size()));
  const std::string& key = attrs.begin()->first;
  const Attributes& a = n.attributes;
  if (key == "value" || key == "sparse_value") return a.get_tensor(key);
  if (key == "value_float") {
    Tensor t(DType::Float32, {});
    *t.data_as<float>() = a.get_float(key);
    return t;
  }
  if (key == "value_int") {
    Tensor t(DType::Int64, {});
    *t.data_as<int64_t>() = a.get_int(key);
    return t;
  }
  if (key == "value_floats") return vector_tensor(DType::Float32, a.get_floats(key));
  if (key == "value_ints") return vector_tensor(DType::Int64, a.get_ints(key));
  if (key == "value_string") {
    Tensor t(DType::String, {});
    *t.data_as<std::string>() = a.get_string(key);
    return t;
  }
  if (key == "value_strings") {
    const std::vector<std::string> strings = a.get_strings_or(key, {});
    Tensor t(DType::String, {static_cast<int64_t>(strings.size())});
    std::copy(strings.begin(), strings.end(), t.data_as<std::string>());
    return t;
  }
  throw Error("unknown Constant attribute '" + key + "'");
}

}  // namespace

GraphLoader::GraphLoader(const onnx::ModelProto& model, std::string base_dir)
    : base_dir_(std::move(base_dir)), functions_(model) {
  if (!functions_.empty()) names_.add_graph(model.graph());
}

Graph GraphLoader::convert_graph(onnx::GraphProto& proto, int depth) {
  if (depth > kMaxGraphDepth)
    throw Error("subgraphs are nested more than " + std::to_string(kMaxGraphDepth) + " levels deep");
  Graph g;
  g.name = proto.name();
  g.doc_string = proto.doc_string();
  add_initializers(proto, g);
  std::unordered_set<std::string> seen;
  for (const auto& v : proto.input()) {
    if (!seen.insert(v.name()).second) throw Error("graph input '" + v.name() + "' is listed twice");
    // IR < 4 lists initializers as inputs too: those are weights, not inputs to feed.
    // A subgraph's inputs are positional (Loop, Scan), so they all stay.
    if (depth == 0 && g.is_initializer(v.name())) g.value_info[v.name()] = convert_value_info(v);
    else g.inputs.push_back(convert_value_info(v));
  }
  seen.clear();
  for (const auto& v : proto.output()) {
    if (!seen.insert(v.name()).second) throw Error("graph output '" + v.name() + "' is listed twice");
    g.outputs.push_back(convert_value_info(v));
  }
  for (const auto& v : proto.value_info()) g.value_info[v.name()] = convert_value_info(v);
  for (auto& n : *proto.mutable_node()) add_node(n, g, depth, false);
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty() && defined_outside_nodes(g, o))
        throw Error(n.label() + " writes '" + o + "', which is already a graph input or initializer");
  return g;
}

void GraphLoader::add_initializers(onnx::GraphProto& proto, Graph& g) {
  for (auto& t : *proto.mutable_initializer()) {
    if (t.name().empty()) throw Error("an initializer has no name");
    if (g.is_initializer(t.name())) throw Error("initializer '" + t.name() + "' is defined twice");
    g.initializers.emplace(t.name(), tensor_from_proto(t, base_dir_));
    t.clear_raw_data();  // the Tensor has the bytes now; don't hold the model twice
  }
  for (const auto& s : proto.sparse_initializer()) {
    const std::string& name = s.values().name();
    if (name.empty()) throw Error("a sparse initializer has no name");
    if (g.is_initializer(name)) throw Error("initializer '" + name + "' is defined twice");
    g.initializers.emplace(name, tensor_from_sparse_proto(s, base_dir_));
  }
}

void GraphLoader::add_node(onnx::NodeProto& proto, Graph& g, int depth, bool inside_call) {
  try {
    if (const auto* f = functions_.find(proto)) {
      // The whole expansion is checked at the outermost call, before any inlining.
      if (!inside_call) {
        if (f->expanded_nodes < 0)
          throw Error("function '" + f->proto->name() + "' calls itself, or nests calls more than " +
                      std::to_string(kMaxCallDepth) + " levels deep");
        inlined_nodes_ += f->expanded_nodes;
        if (inlined_nodes_ > kMaxInlinedNodes)
          throw Error("inlining model-local functions makes more than " +
                      std::to_string(kMaxInlinedNodes) + " nodes");
      }
      for (auto& n : inline_call(proto, *f, names_)) add_node(n, g, depth, true);
      return;
    }
    Node node = convert_node(proto, depth);
    // Constants become initializers, so the rest of ember sees them as weights.
    if (node.op_type == "Constant" && node.domain.empty()) {
      add_initializer(g, node.outputs.empty() ? "" : node.outputs[0], constant_value(node));
      return;
    }
    g.nodes.push_back(std::move(node));
  } catch (const Error& e) {
    throw Error(proto_label(proto) + ": " + e.what());
  }
}

Node GraphLoader::convert_node(onnx::NodeProto& p, int depth) {
  if (p.op_type().empty()) throw Error("the node has no op_type");
  Node n;
  n.name = p.name();
  n.op_type = p.op_type();
  n.domain = normalize_domain(p.domain());
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  for (auto& a : *p.mutable_attribute()) {
    if (a.name().empty()) throw Error("an attribute has no name");
    if (n.attributes.has(a.name())) throw Error("attribute '" + a.name() + "' is given twice");
    try {
      n.attributes.set(a.name(), convert_attribute(a, *this, depth));
    } catch (const Error& e) {
      throw Error("attribute '" + a.name() + "': " + e.what());
    }
  }
  return n;
}

}  // namespace ember
