#include "loader/onnx_loader.h"

#include "loader/convert.h"
#include "core/src/read_file.h"
#include "loader/tensor_proto.h"

#include <ember/core/error.h>

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <filesystem>
#include <functional>

namespace ember {

namespace {

// Protobuf cannot address messages past 2 GiB; bigger models keep their weights in
// external data files.
template <class Message>
bool parse_message(std::string_view bytes, Message& message) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return false;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);  // older protobufs stop at 64 MB by default
  return message.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

onnx::ModelProto parse_model(std::string_view bytes, const std::string& source) {
  if (bytes.empty()) throw Error(source + ": empty (0 bytes), not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw Error(source + ": the model is larger than 2 GiB, which protobuf cannot read; "
                "store its weights as external data");
  onnx::ModelProto model;
  if (!parse_message(bytes, model))
    throw Error(source + ": not an ONNX model (protobuf parse failed; is the file truncated?)");
  if (!model.has_graph())
    throw Error(source + ": not an ONNX model, or a truncated one: it has no graph");
  return model;
}

std::map<std::string, int64_t> opset_imports(const onnx::ModelProto& model) {
  std::map<std::string, int64_t> opsets;
  for (const auto& o : model.opset_import()) {
    const std::string domain = normalize_domain(o.domain());
    if (o.version() <= 0)
      throw Error("opset_import of domain '" + domain + "' has version " + std::to_string(o.version()));
    auto [it, added] = opsets.emplace(domain, o.version());
    if (!added && it->second != o.version())
      throw Error("opset_import lists domain '" + domain + "' twice, with versions " +
                  std::to_string(it->second) + " and " + std::to_string(o.version()));
  }
  // IR < 3 had no opset_import: those models use opset 1.
  if (!opsets.count("") && model.ir_version() < 3) opsets[""] = 1;
  return opsets;
}

void for_each_graph(Graph& g, const std::function<void(Graph&)>& f) {
  f(g);
  for (Node& n : g.nodes)
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g) for_each_graph(*a.g, f);
      for (const auto& sub : a.graphs) for_each_graph(*sub, f);
    }
}

// Sorts each graph level; a subgraph sees the names of every enclosing graph.
void sort_recursive(Graph& g, const std::unordered_set<std::string>& outer) {
  topological_sort(g, outer);
  std::unordered_set<std::string> scope = outer;
  for (const auto& v : g.inputs) scope.insert(v.name);
  for (const auto& [name, _] : g.initializers) scope.insert(name);
  for (const Node& n : g.nodes) scope.insert(n.outputs.begin(), n.outputs.end());
  for (const Node& n : g.nodes)
    for (const auto& [name, a] : n.attributes.all()) {
      try {
        if (a.g) sort_recursive(*a.g, scope);
        for (const auto& sub : a.graphs) sort_recursive(*sub, scope);
      } catch (const Error& e) {
        throw Error(n.label() + ": subgraph '" + name + "': " + e.what());
      }
    }
}

// The ModelProto's own fields, beside the graph.
ModelInfo model_info(const onnx::ModelProto& model) {
  ModelInfo info;
  info.ir_version = model.ir_version();
  info.producer_name = model.producer_name();
  info.producer_version = model.producer_version();
  info.domain = model.domain();
  info.model_version = model.model_version();
  info.doc_string = model.doc_string();
  for (const auto& kv : model.metadata_props()) info.metadata_props[kv.key()] = kv.value();
  return info;
}

Graph convert_model(onnx::ModelProto& model, const std::string& base_dir) {
  const auto opsets = opset_imports(model);
  GraphLoader loader(model, base_dir);
  Graph graph = loader.convert_graph(*model.mutable_graph(), 0);
  graph.model = model_info(model);
  bool uses_standard_ops = false;
  for_each_graph(graph, [&](Graph& g) {
    g.opset_imports = opsets;
    for (const Node& n : g.nodes) uses_standard_ops |= n.domain.empty();
  });
  if (uses_standard_ops && !opsets.count(""))
    throw Error("the model uses standard ONNX operators but imports no opset for them");
  sort_recursive(graph, {});
  return graph;
}

// Errors from here on name the file first.
Graph load_parsed(onnx::ModelProto& model, const std::string& source, const std::string& base_dir) {
  Graph graph;
  try {
    graph = convert_model(model, base_dir);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  for_each_graph(graph, [&](Graph& g) { g.source = source; });
  return graph;
}

std::string folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

Graph load_model_from_bytes(std::string_view bytes, const std::string& source,
                            const std::string& base_dir) {
  onnx::ModelProto model = parse_model(bytes, source);
  return load_parsed(model, source, base_dir);
}

Graph load_model(const std::string& path) {
  // Parse, then drop the file's bytes before converting: weights are held once.
  onnx::ModelProto model = parse_model(read_whole_file(path, "an ONNX model"), path);
  return load_parsed(model, path, folder_of(path));
}

Tensor load_tensor_proto(const std::string& path) {
  onnx::TensorProto proto;
  const std::string bytes = read_whole_file(path, "a serialized TensorProto");
  if (bytes.empty()) throw Error(path + ": the file is empty, not a serialized ONNX TensorProto");
  if (!parse_message(bytes, proto))
    throw Error(path + ": not a serialized ONNX TensorProto (protobuf parse failed)");
  try {
    return tensor_from_proto(proto, folder_of(path));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace ember
