#include "tools/infer_io.h"

#include "tools/infer_maps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace infer {

namespace fs = std::filesystem;

namespace {

bool is_tensor(const ember::ValueDesc& d) { return d.type.starts_with("tensor("); }

double element_as_double(const ember::Tensor& t, int64_t i) {
  using ember::DType;
  switch (t.dtype()) {
    case DType::Float32: return t.data_as<float>()[i];
    case DType::Float64: return t.data_as<double>()[i];
    case DType::Int64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case DType::Int32: return t.data_as<int32_t>()[i];
    case DType::Int16: return t.data_as<int16_t>()[i];
    case DType::Int8: return t.data_as<int8_t>()[i];
    case DType::UInt8:
    case DType::Bool: return t.data_as<uint8_t>()[i];
    case DType::UInt16: return t.data_as<uint16_t>()[i];
    case DType::UInt32: return t.data_as<uint32_t>()[i];
    case DType::UInt64: return static_cast<double>(t.data_as<uint64_t>()[i]);
    default: return NAN;
  }
}

// A sequence from a folder of 0.npy, 1.npy, ...: every file in it must be one of them,
// numbered without gaps.
ember::Value read_sequence(const ember::ValueDesc& d, const std::string& folder) {
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    (void)entry;
    ++files;
  }
  std::vector<ember::Value> elements;
  for (size_t i = 0; i < files; ++i) {
    const fs::path file = fs::path(folder) / (std::to_string(i) + ".npy");
    if (!fs::exists(file))
      throw ember::Error("input '" + d.name + "': the folder " + folder + " holds " + std::to_string(files) +
                         " entries, but no " + file.filename().string() +
                         " (a sequence is 0.npy, 1.npy, ... and nothing else)");
    elements.emplace_back(ember::read_npy(file.string(), d.dtype));
  }
  return ember::Value::sequence(std::move(elements), d.dtype);
}

void save_value(const ember::Value& v, const fs::path& path_without_suffix) {
  if (holds_maps(v)) {
    std::ofstream out(path_without_suffix.string() + ".json");
    out << maps_to_json(v) << "\n";
    if (!out) throw ember::Error(path_without_suffix.string() + ".json: writing the file failed");
  } else if (v.is_tensor()) {
    ember::write_npy(path_without_suffix.string() + ".npy", v.tensor());
  } else if (v.is_sequence()) {
    fs::create_directories(path_without_suffix);
    for (size_t i = 0; i < v.elements().size(); ++i)
      save_value(v.elements()[i], path_without_suffix / std::to_string(i));
  }
}

}  // namespace

std::string format_dims(const std::vector<std::string>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + "]";
}

std::vector<std::string> input_paths(const ember::Session& session, const std::vector<std::string>& args) {
  const auto& descs = session.inputs();
  std::vector<std::string> paths(descs.size());
  std::vector<bool> given(descs.size(), false);
  size_t next = 0;
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    size_t index = 0;
    std::string path = arg;
    if (eq != std::string::npos && !fs::exists(arg)) {
      const std::string name = arg.substr(0, eq);
      path = arg.substr(eq + 1);
      while (index < descs.size() && descs[index].name != name) ++index;
      if (index == descs.size()) {
        std::string names;
        for (const auto& d : descs) names += (names.empty() ? "" : ", ") + d.name;
        throw ember::Error("the model has no input named '" + name + "' (its inputs: " + names + ")");
      }
    } else {
      while (next < descs.size() && given[next]) ++next;
      if (next == descs.size()) throw ember::Error("too many inputs: the model takes " + std::to_string(descs.size()));
      index = next;
    }
    if (given[index]) throw ember::Error("input '" + descs[index].name + "' is given twice");
    paths[index] = path;
    given[index] = true;
  }
  return paths;
}

std::vector<ember::Tensor> read_tensors(const ember::Session& session, const std::vector<std::string>& paths) {
  const auto& descs = session.inputs();
  std::vector<ember::Tensor> tensors;
  for (size_t i = 0; i < descs.size(); ++i) {
    if (paths[i].empty())
      throw ember::Error("input '" + descs[i].name + "' (" + ember::dtype_name(descs[i].dtype) + " " +
                         format_dims(descs[i].dims) + ") is missing: pass " + descs[i].name + "=file.npy");
    tensors.push_back(ember::read_npy(paths[i], descs[i].dtype));
  }
  return tensors;
}

bool passes_values(const ember::Session& session) {
  for (const auto* list : {&session.inputs(), &session.outputs()})
    for (const ember::ValueDesc& d : *list)
      if (!is_tensor(d)) return true;
  return false;
}

std::vector<ember::Value> read_values(const ember::Session& session, const std::vector<std::string>& paths) {
  const auto& descs = session.inputs();
  std::vector<ember::Value> values;
  for (size_t i = 0; i < descs.size(); ++i) {
    const ember::ValueDesc& d = descs[i];
    const bool optional = d.type.starts_with("optional(");
    const bool sequence = d.type.starts_with("seq(") || d.type.starts_with("optional(seq(");
    if (paths[i].empty()) {
      if (optional) {
        values.emplace_back();  // left out: empty
        continue;
      }
      throw ember::Error("input '" + d.name + "' (" + d.type + ") is missing: pass " + d.name +
                         (sequence ? "=FOLDER (0.npy, 1.npy, ...)" : "=file.npy"));
    }
    if (d.type.find("map(") != std::string::npos) {
      values.push_back(read_map_input(d, paths[i]));
      continue;
    }
    if (sequence != fs::is_directory(paths[i]))
      throw ember::Error("input '" + d.name + "' is a " + d.type + ": pass " +
                         (sequence ? "a folder of 0.npy, 1.npy, ..." : "a .npy file") + ", not " + paths[i]);
    values.push_back(sequence ? read_sequence(d, paths[i]) : ember::Value(ember::read_npy(paths[i], d.dtype)));
  }
  return values;
}

void show_values(const ember::Session& session, const std::vector<ember::Value>& outputs,
                 const std::string& output_dir) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    const ember::Value& v = outputs[i];
    std::cout << name << ": ";
    if (v.is_tensor())
      std::cout << ember::dtype_name(v.tensor().dtype()) << " " << ember::shape_to_string(v.tensor().shape()) << "  "
                << summarize(v.tensor()) << "\n";
    else if (holds_maps(v)) {  // the JSON infer writes, cut to a line
      const std::string text = maps_to_json(v);
      std::cout << v.describe() << "  " << (text.size() > 200 ? text.substr(0, 200) + " ..." : text) << "\n";
    } else
      std::cout << v.describe() << "\n";
    if (!output_dir.empty()) {
      fs::create_directories(output_dir);
      save_value(v, fs::path(output_dir) / escape_file_name(name));
    }
  }
}

std::string summarize(const ember::Tensor& t) {
  const int64_t n = t.numel();
  if (n == 0) return "empty";
  if (t.dtype() == ember::DType::String) {  // the first strings, quoted and escaped as JSON
    std::string first = "first [";
    for (int64_t i = 0; i < std::min<int64_t>(n, 5); ++i)
      first += (i ? ", " : "") + nlohmann::json(t.data_as<std::string>()[i]).dump(-1, ' ', false,
                                                                                   nlohmann::json::error_handler_t::replace);
    return first + (n > 5 ? ", ...]" : "]");
  }
  if (std::isnan(element_as_double(t, 0)) && t.dtype() != ember::DType::Float32 &&
      t.dtype() != ember::DType::Float64)
    return "(no summary for " + std::string(ember::dtype_name(t.dtype())) + ")";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t argmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = element_as_double(t, i);
    lo = std::min(lo, v);
    if (v > hi) hi = v, argmax = i;
    sum += v;
  }
  std::ostringstream os;
  os.precision(6);
  os << "min " << lo << "  max " << hi << " (at " << argmax << ")  mean " << sum / n << "  first [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 5); ++i) os << (i ? ", " : "") << element_as_double(t, i);
  os << (n > 5 ? ", ...]" : "]");
  return os.str();
}

std::string escape_file_name(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = name[i];
    const bool safe = std::isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (safe) {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out.empty() ? "%00" : out;
}

}  // namespace infer
