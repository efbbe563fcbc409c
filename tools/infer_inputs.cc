#include "tools/infer_inputs.h"

#include <ember/core/float16.h>

#include <cctype>
#include <type_traits>
#include <sstream>

namespace infer {

namespace {

int64_t parse_size(const std::string& text, const std::string& item) {
  size_t used = 0;
  int64_t v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 0 || text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw ember::Error("--shape " + item + ": '" + text + "' is not a size (a whole number, 0 or more)");
  return v;
}

// "1x3x224x224" -> [1, 3, 224, 224]; "scalar" -> [].
ember::Shape parse_dims(const std::string& text, const std::string& item) {
  ember::Shape shape;
  if (text == "scalar") return shape;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, 'x')) shape.push_back(parse_size(part, item));
  if (shape.empty() || text.back() == 'x') throw ember::Error("--shape " + item + ": write the dims as 1x3x224x224");
  return shape;
}

bool is_symbolic(const std::string& dim) { return !dim.empty() && !std::isdigit(static_cast<unsigned char>(dim[0])); }

}  // namespace

ShapeChoices parse_shape_choices(const std::vector<std::string>& args, const ember::Session& session) {
  ShapeChoices choices;
  for (const std::string& arg : args) {
    std::stringstream items(arg);
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw ember::Error("--shape " + item + ": write NAME=VALUE (batch=8, or input=1x3x224x224)");
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      bool is_input = false, is_dim = false;
      for (const ember::ValueDesc& d : session.inputs()) {
        is_input = is_input || d.name == key;
        for (const std::string& dim : d.dims) is_dim = is_dim || (is_symbolic(dim) && dim == key && dim != "?");
      }
      if (is_input) {
        choices.inputs[key] = parse_dims(value, item);
      } else if (is_dim) {
        choices.dims[key] = parse_size(value, item);
      } else {
        std::string known;
        for (const ember::ValueDesc& d : session.inputs()) {
          known += (known.empty() ? "" : ", ") + d.name;
          for (const std::string& dim : d.dims)
            if (is_symbolic(dim) && dim != "?") known += " (" + dim + ")";
        }
        throw ember::Error("--shape " + item + ": '" + key + "' is neither an input nor a symbolic dim (inputs, " +
                           "with their symbolic dims: " + known + ")");
      }
    }
  }
  return choices;
}

ember::Shape shape_for(const ember::ValueDesc& input, const ShapeChoices& choices, int batch,
                       std::vector<std::string>* defaulted) {
  if (auto it = choices.inputs.find(input.name); it != choices.inputs.end()) {
    if (it->second.size() != input.dims.size())
      throw ember::Error("--shape " + input.name + ": the input has rank " + std::to_string(input.dims.size()) +
                         ", got " + std::to_string(it->second.size()) + " dims");
    return it->second;
  }
  ember::Shape shape;
  for (size_t k = 0; k < input.dims.size(); ++k) {
    const std::string& dim = input.dims[k];
    if (!is_symbolic(dim)) {
      shape.push_back(std::stoll(dim));
    } else if (auto it = choices.dims.find(dim); it != choices.dims.end()) {
      shape.push_back(it->second);
    } else if (k == 0 && batch > 0) {
      shape.push_back(batch);
    } else {
      shape.push_back(1);
      defaulted->push_back(dim == "?" ? input.name + "[" + std::to_string(k) + "]" : dim);
    }
  }
  return shape;
}

ember::Tensor random_input(const ember::ValueDesc& input, const ember::Shape& shape, std::mt19937& rng) {
  using ember::DType;
  ember::Tensor t(input.dtype, shape);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::uniform_int_distribution<int64_t> index(0, input.index_bound > 0 ? input.index_bound - 1 : 1);
  std::uniform_int_distribution<int> byte(0, 255);
  auto fill = [&](auto* data, auto next) {
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<std::remove_reference_t<decltype(*data)>>(next());
  };
  auto unit_value = [&] { return unit(rng); };
  auto index_value = [&] { return index(rng); };
  auto byte_value = [&] { return byte(rng); };
  switch (input.dtype) {
    case DType::Float32: fill(t.data_as<float>(), unit_value); break;
    case DType::Float64: fill(t.data_as<double>(), unit_value); break;
    case DType::Float16:
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<ember::Float16>()[i] = ember::Float16(unit(rng));
      break;
    case DType::BFloat16:
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<ember::BFloat16>()[i] = ember::BFloat16(unit(rng));
      break;
    case DType::Int64: fill(t.data_as<int64_t>(), index_value); break;
    case DType::Int32: fill(t.data_as<int32_t>(), index_value); break;
    case DType::Int16: fill(t.data_as<int16_t>(), index_value); break;
    case DType::UInt16: fill(t.data_as<uint16_t>(), index_value); break;
    case DType::UInt32: fill(t.data_as<uint32_t>(), index_value); break;
    case DType::UInt64: fill(t.data_as<uint64_t>(), index_value); break;
    case DType::Int8: fill(t.data_as<int8_t>(), [&] { return byte(rng) - 128; }); break;
    case DType::UInt8: fill(t.data_as<uint8_t>(), byte_value); break;
    case DType::Bool: fill(t.data_as<uint8_t>(), [&] { return byte(rng) & 1; }); break;
    default:
      throw ember::Error("input '" + input.name + "' is " + ember::dtype_name(input.dtype) +
                         ": infer cannot make random values of that type; pass a .npy file");
  }
  return t;
}

}  // namespace infer
