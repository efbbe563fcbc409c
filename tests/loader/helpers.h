// Building ONNX messages and temporary files for the loader tests.
#pragma once

#include "graph/graph.h"
#include "loader/onnx_loader.h"
#include "onnx/onnx.pb.h"

#include <ember/core/error.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ember::test {

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ember_loader_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

inline std::string bytes_of(const Tensor& t) {
  return std::string(static_cast<const char*>(t.data()), t.nbytes());
}

// dims: "3" is a size, "batch" a symbol, "?" neither.
inline void set_type(onnx::ValueInfoProto* v, int elem_type, const std::vector<std::string>& dims) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (d == "?") continue;
    if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

inline onnx::ValueInfoProto* add_input(onnx::GraphProto& g, const std::string& name,
                                       const std::vector<std::string>& dims = {"2"}) {
  auto* v = g.add_input();
  v->set_name(name);
  set_type(v, onnx::TensorProto::FLOAT, dims);
  return v;
}

inline onnx::ValueInfoProto* add_output(onnx::GraphProto& g, const std::string& name,
                                        const std::vector<std::string>& dims = {"2"}) {
  auto* v = g.add_output();
  v->set_name(name);
  set_type(v, onnx::TensorProto::FLOAT, dims);
  return v;
}

inline onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(bytes_of(values));
  return t;
}

// A model with the standard opset imported and an empty graph named "main".
inline onnx::ModelProto new_model(int64_t ir_version = 8, int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("main");
  return m;
}

inline Graph load(const onnx::ModelProto& m, const std::string& base_dir = "") {
  return load_model_from_bytes(m.SerializeAsString(), "test.onnx", base_dir);
}

// The message of the ember::Error that `f` raises ("" and a test failure if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an ember::Error";
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline const Node* find_node(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

// Protobuf wire bytes of a length-delimited field: how newer schema fields look to us.
inline std::string wire_bytes_field(int field, const std::string& payload) {
  std::string out;
  auto varint = [&](uint64_t v) {
    while (v >= 0x80) { out.push_back(static_cast<char>((v & 0x7F) | 0x80)); v >>= 7; }
    out.push_back(static_cast<char>(v));
  };
  varint(static_cast<uint64_t>(field) << 3 | 2);
  varint(payload.size());
  return out + payload;
}

}  // namespace ember::test
