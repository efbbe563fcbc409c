#include "loader/convert.h"

#include "loader/tensor_proto.h"

#include <ember/core/error.h>

namespace ember {

namespace {

using AP = onnx::AttributeProto;

// Old exporters leave `type` unset; the populated field tells it.
AP::AttributeType infer_type(const AP& a) {
  if (a.has_g()) return AP::GRAPH;
  if (a.has_tp()) return AP::TYPE_PROTO;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_sparse_tensor()) return AP::SPARSE_TENSOR;
  if (a.has_s()) return AP::STRING;
  if (a.has_i()) return AP::INT;
  if (a.has_f()) return AP::FLOAT;
  if (a.graphs_size()) return AP::GRAPHS;
  if (a.tensors_size()) return AP::TENSORS;
  if (a.sparse_tensors_size()) return AP::SPARSE_TENSORS;
  if (a.strings_size()) return AP::STRINGS;
  if (a.ints_size()) return AP::INTS;
  if (a.floats_size()) return AP::FLOATS;
  return AP::UNDEFINED;
}

std::shared_ptr<Graph> subgraph(onnx::GraphProto& g, GraphLoader& loader, int depth) {
  return std::make_shared<Graph>(loader.convert_graph(g, depth + 1));
}

// The tensor type inside `type`, and the sequences, optionals and maps around it. A
// sparse tensor is left without a dtype (no ember operator takes one; the planner says so).
void read_type(const onnx::TypeProto& type, ValueInfo& info) {
  if (type.has_map_type()) {
    info.containers.push_back(ValueContainer::Map);
    info.map_key = dtype_from_onnx(type.map_type().key_type());
    return read_type(type.map_type().value_type(), info);
  }
  if (type.has_sequence_type()) {
    info.containers.push_back(ValueContainer::Sequence);
    return read_type(type.sequence_type().elem_type(), info);
  }
  if (type.has_optional_type()) {
    info.containers.push_back(ValueContainer::Optional);
    return read_type(type.optional_type().elem_type(), info);
  }
  if (!type.has_tensor_type()) return;
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) info.dtype = dtype_from_onnx(tt.elem_type());
  if (!tt.has_shape()) return;
  info.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    Dim dim;
    // Some exporters write -1 for "unknown"; read any negative size that way.
    if (d.has_dim_value() && d.dim_value() >= 0) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.symbol = d.dim_param();
    info.dims.push_back(std::move(dim));
  }
}

}  // namespace

Attribute convert_attribute(AP& a, GraphLoader& loader, int depth) {
  if (!a.ref_attr_name().empty())
    throw Error("refers to '" + a.ref_attr_name() +
                "', which only makes sense inside a function");
  Attribute out;
  using K = Attribute::Kind;
  const std::string& dir = loader.base_dir();
  const AP::AttributeType type = a.type() == AP::UNDEFINED ? infer_type(a) : a.type();
  switch (type) {
    case AP::FLOAT: out.kind = K::Float; out.f = a.f(); break;
    case AP::INT: out.kind = K::Int; out.i = a.i(); break;
    case AP::STRING: out.kind = K::String; out.s = a.s(); break;
    case AP::TENSOR: out.kind = K::Tensor; out.t = tensor_from_proto(a.t(), dir); break;
    case AP::SPARSE_TENSOR:
      out.kind = K::Tensor;
      out.t = tensor_from_sparse_proto(a.sparse_tensor(), dir);
      break;
    case AP::GRAPH: out.kind = K::Graph; out.g = subgraph(*a.mutable_g(), loader, depth); break;
    case AP::FLOATS: out.kind = K::Floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case AP::INTS: out.kind = K::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AP::STRINGS: out.kind = K::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case AP::TENSORS:
      out.kind = K::Tensors;
      for (const auto& t : a.tensors()) out.tensors.push_back(tensor_from_proto(t, dir));
      break;
    case AP::SPARSE_TENSORS:
      out.kind = K::Tensors;
      for (const auto& t : a.sparse_tensors()) out.tensors.push_back(tensor_from_sparse_proto(t, dir));
      break;
    case AP::GRAPHS:
      out.kind = K::Graphs;
      for (auto& g : *a.mutable_graphs()) out.graphs.push_back(subgraph(g, loader, depth));
      break;
    case AP::TYPE_PROTO: {
      out.kind = K::Type;
      ValueInfo info;
      read_type(a.tp(), info);
      out.type = {info.containers, info.dtype};
      break;
    }
    case AP::TYPE_PROTOS:
      throw Error("holds a list of types (TYPE_PROTOS), which no operator ember knows takes");
    case AP::UNDEFINED:
      throw Error("has no type and no value");
  }
  return out;
}

ValueInfo convert_value_info(const onnx::ValueInfoProto& v) {
  if (v.name().empty()) throw Error("a graph input, output or value_info has no name");
  ValueInfo info;
  info.name = v.name();
  try {
    read_type(v.type(), info);
  } catch (const Error& e) {
    throw Error("value '" + v.name() + "': " + e.what());
  }
  return info;
}

}  // namespace ember
