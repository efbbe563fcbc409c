#include "graph/attributes.h"

#include <ember/core/error.h>

namespace ember {

namespace {

const char* kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Tensors: return "tensors";
    case Attribute::Kind::Graphs: return "graphs";
    case Attribute::Kind::Type: return "type";
  }
  return "?";
}

}  // namespace

const Attribute* Attributes::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

const Attribute& Attributes::get(const std::string& name, Attribute::Kind kind) const {
  const Attribute* a = find(name);
  if (!a) throw Error("attribute '" + name + "' is required but missing");
  if (a->kind != kind)
    throw Error("attribute '" + name + "' is a " + kind_name(a->kind) + ", expected " +
                kind_name(kind));
  return *a;
}

int64_t Attributes::get_int(const std::string& name) const { return get(name, Attribute::Kind::Int).i; }
int64_t Attributes::get_int_or(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}
float Attributes::get_float(const std::string& name) const {
  return get(name, Attribute::Kind::Float).f;
}
float Attributes::get_float_or(const std::string& name, float fallback) const {
  return has(name) ? get_float(name) : fallback;
}
std::string Attributes::get_string(const std::string& name) const {
  return get(name, Attribute::Kind::String).s;
}
std::string Attributes::get_string_or(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_string(name) : fallback;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name) const {
  return get(name, Attribute::Kind::Ints).ints;
}
std::vector<int64_t> Attributes::get_ints_or(const std::string& name,
                                             std::vector<int64_t> fallback) const {
  return has(name) ? get_ints(name) : fallback;
}
std::vector<float> Attributes::get_floats(const std::string& name) const {
  return get(name, Attribute::Kind::Floats).floats;
}
std::vector<float> Attributes::get_floats_or(const std::string& name,
                                             std::vector<float> fallback) const {
  return has(name) ? get_floats(name) : fallback;
}
std::vector<std::string> Attributes::get_strings_or(const std::string& name,
                                                    std::vector<std::string> fallback) const {
  return has(name) ? get(name, Attribute::Kind::Strings).strings : fallback;
}
const Tensor& Attributes::get_tensor(const std::string& name) const {
  return get(name, Attribute::Kind::Tensor).t;
}
const Graph& Attributes::get_graph(const std::string& name) const {
  return *get(name, Attribute::Kind::Graph).g;
}

void Attributes::set_int(const std::string& name, int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  set(name, std::move(a));
}
void Attributes::set_float(const std::string& name, float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  set(name, std::move(a));
}
void Attributes::set_string(const std::string& name, std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  set(name, std::move(a));
}
void Attributes::set_ints(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  set(name, std::move(a));
}
void Attributes::set_floats(const std::string& name, std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::Floats;
  a.floats = std::move(v);
  set(name, std::move(a));
}
void Attributes::set_tensor(const std::string& name, Tensor v) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = std::move(v);
  set(name, std::move(a));
}

}  // namespace ember
