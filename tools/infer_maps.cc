#include "tools/infer_maps.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace infer {

namespace {

using nlohmann::json;

json element_json(const ember::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case ember::DType::Float32: return t.data_as<float>()[i];
    case ember::DType::Float64: return t.data_as<double>()[i];
    case ember::DType::Int64: return t.data_as<int64_t>()[i];
    case ember::DType::String: return t.data_as<std::string>()[i];
    default: throw ember::Error(std::string("maps of ") + ember::dtype_name(t.dtype()) + " values have no JSON form here");
  }
}

json to_json(const ember::Value& v) {
  if (v.is_sequence()) {
    json items = json::array();
    for (const ember::Value& e : v.elements()) items.push_back(to_json(e));
    return items;
  }
  if (v.is_map()) {
    json object = json::object();
    const ember::Tensor& keys = v.map_keys();
    for (int64_t i = 0; i < keys.numel(); ++i) {
      const std::string key = keys.dtype() == ember::DType::String ? keys.data_as<std::string>()[i]
                                                                   : std::to_string(keys.data_as<int64_t>()[i]);
      object[key] = element_json(v.map_values(), i);
    }
    return object;
  }
  if (v.is_tensor() && v.tensor().numel() == 1) return element_json(v.tensor(), 0);
  throw ember::Error("a " + v.describe() + " inside a map output has no JSON form here");
}

// "seq(map(string,tensor(float32)))" -> the map's key dtype.
ember::DType key_dtype(const std::string& type) {
  const size_t at = type.find("map(");
  return type.compare(at + 4, 5, "int64") == 0 ? ember::DType::Int64 : ember::DType::String;
}

ember::Value map_from_json(const json& j, const ember::ValueDesc& d, const std::string& where) {
  if (!j.is_object()) throw ember::Error(where + ": expected a JSON object (a map), got " + std::string(j.type_name()));
  const ember::DType key = key_dtype(d.type);
  const auto n = static_cast<int64_t>(j.size());
  ember::Tensor keys(key, {n}), values(d.dtype, {n});
  int64_t i = 0;
  for (const auto& [k, value] : j.items()) {
    const std::string what = where + ": entry '" + k + "'";
    if (key == ember::DType::Int64) {
      size_t used = 0;
      try {
        keys.data_as<int64_t>()[i] = std::stoll(k, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != k.size() || k.empty()) throw ember::Error(what + ": the map's keys are int64, this key is not one");
    } else {
      keys.data_as<std::string>()[i] = k;
    }
    const bool string_value = d.dtype == ember::DType::String;
    if (string_value ? !value.is_string() : !value.is_number())
      throw ember::Error(what + ": expected a " + ember::dtype_name(d.dtype) + " value, got " + value.type_name());
    switch (d.dtype) {
      case ember::DType::Float32: values.data_as<float>()[i] = value.get<float>(); break;
      case ember::DType::Float64: values.data_as<double>()[i] = value.get<double>(); break;
      case ember::DType::Int64:
        if (!value.is_number_integer()) throw ember::Error(what + ": expected an int64 value");
        values.data_as<int64_t>()[i] = value.get<int64_t>();
        break;
      case ember::DType::String: values.data_as<std::string>()[i] = value.get<std::string>(); break;
      default: throw ember::Error(where + ": maps of " + ember::dtype_name(d.dtype) + " values cannot be read from JSON");
    }
    ++i;
  }
  return ember::Value::map(std::move(keys), std::move(values));
}

}  // namespace

bool holds_maps(const ember::Value& v) {
  if (v.is_map()) return true;
  if (!v.is_sequence()) return false;
  for (const ember::Value& e : v.elements())
    if (holds_maps(e)) return true;
  return false;
}

std::string maps_to_json(const ember::Value& v) {
  return to_json(v).dump(-1, ' ', false, json::error_handler_t::replace);
}

ember::Value read_map_input(const ember::ValueDesc& d, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ember::Error("input '" + d.name + "': cannot open " + path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ember::Error(path + ": not JSON (" + e.what() + ")");
  }
  const std::string where = path + " (input '" + d.name + "', " + d.type + ")";
  if (!d.type.starts_with("seq(")) return map_from_json(j, d, where);
  if (!j.is_array()) throw ember::Error(where + ": expected a JSON array of objects (a sequence of maps)");
  std::vector<ember::Value> maps;
  for (size_t i = 0; i < j.size(); ++i) maps.push_back(map_from_json(j[i], d, where + " [" + std::to_string(i) + "]"));
  return ember::Value::sequence(std::move(maps), d.dtype);
}

}  // namespace infer
