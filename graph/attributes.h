// Node attributes: a small typed map with defaults, as ONNX defines them.
#pragma once

#include <ember/core/tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ember {

struct Graph;

// What wraps a tensor type in ONNX's type system: seq(tensor(float)),
// optional(seq(tensor(int64))), ... Listed outermost first; none: a plain tensor.
enum class ValueContainer : int8_t { Sequence, Optional, Map };

// A type as a TYPE_PROTO attribute holds it (Optional's `type`).
struct ValueType {
  std::vector<ValueContainer> containers;
  DType dtype = DType::Undefined;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, Type };
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  ember::Tensor t;
  std::shared_ptr<ember::Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<ember::Tensor> tensors;
  std::vector<std::shared_ptr<ember::Graph>> graphs;
  ValueType type;
};

// An op's attributes as typed values, parsed and validated once from its Node by the
// op's schema (Schema::parse_attributes in graph/schema.h) and read by every device's
// kernel. Each op family derives its own struct (graph/schemas/norm.h, ...).
struct OpAttributes {
  virtual ~OpAttributes() = default;
};

// Lookups raise ember::Error naming the attribute when it has the wrong kind; the
// *_or variants return the default when it is absent.
class Attributes {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  void set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  void erase(const std::string& name) { map_.erase(name); }
  const std::map<std::string, Attribute>& all() const { return map_; }

  int64_t get_int(const std::string& name) const;
  int64_t get_int_or(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name) const;
  float get_float_or(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name) const;
  std::string get_string_or(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints_or(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<float> get_floats(const std::string& name) const;
  std::vector<float> get_floats_or(const std::string& name, std::vector<float> fallback) const;
  std::vector<std::string> get_strings_or(const std::string& name,
                                          std::vector<std::string> fallback) const;
  const Tensor& get_tensor(const std::string& name) const;
  const Graph& get_graph(const std::string& name) const;

  // Convenience setters used by passes and tests.
  void set_int(const std::string& name, int64_t v);
  void set_float(const std::string& name, float v);
  void set_string(const std::string& name, std::string v);
  void set_ints(const std::string& name, std::vector<int64_t> v);
  void set_floats(const std::string& name, std::vector<float> v);
  void set_tensor(const std::string& name, Tensor v);

 private:
  const Attribute& get(const std::string& name, Attribute::Kind kind) const;
  std::map<std::string, Attribute> map_;
};

}  // namespace ember
