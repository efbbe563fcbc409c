#include <ember/core/error.h>
#include <ember/core/value.h>

#include <set>
#include <string>

namespace ember {

Value::Value(Tensor tensor) : kind_(Kind::Tensor), tensor_(std::move(tensor)), element_dtype_(tensor_.dtype()) {}

Value Value::sequence(std::vector<Value> elements, DType element_dtype) {
  Value v;
  v.kind_ = Kind::Sequence;
  v.elements_ = std::move(elements);
  v.element_dtype_ = element_dtype;
  return v;
}

Value Value::map(Tensor keys, Tensor values) {
  if (keys.dtype() != DType::Int64 && keys.dtype() != DType::String)
    throw Error(std::string("map keys must be int64 or string, got ") + dtype_name(keys.dtype()));
  if (keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
    throw Error("a map needs 1-D keys and values of one length, got " + shape_to_string(keys.shape()) + " and " +
                shape_to_string(values.shape()));
  if (values.device().kind != DeviceKind::Cpu || keys.device().kind != DeviceKind::Cpu)
    throw Error("map keys and values live on the host");
  const size_t distinct = keys.dtype() == DType::String
                          ? std::set<std::string>(keys.data_as<std::string>(), keys.data_as<std::string>() + keys.numel()).size()
                          : std::set<int64_t>(keys.data_as<int64_t>(), keys.data_as<int64_t>() + keys.numel()).size();
  if (distinct != static_cast<size_t>(keys.numel())) throw Error("a map's keys must be distinct");
  Value v;
  v.kind_ = Kind::Map;
  v.element_dtype_ = values.dtype();
  v.tensor_ = std::move(keys);
  v.map_values_ = std::move(values);
  return v;
}

const Tensor& Value::map_keys(const std::string& what) const {
  if (kind_ != Kind::Map) throw Error(what + " must be a map, got " + describe());
  return tensor_;
}

const Tensor& Value::map_values(const std::string& what) const {
  if (kind_ != Kind::Map) throw Error(what + " must be a map, got " + describe());
  return map_values_;
}

const Tensor& Value::tensor(const std::string& what) const {
  if (kind_ != Kind::Tensor) throw Error(what + " must be a tensor, got " + describe());
  return tensor_;
}

const std::vector<Value>& Value::elements(const std::string& what) const {
  if (kind_ != Kind::Sequence) throw Error(what + " must be a sequence, got " + describe());
  return elements_;
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::None: return "none (an empty optional)";
    case Kind::Tensor: return std::string("tensor ") + dtype_name(tensor_.dtype()) + " " + shape_to_string(tensor_.shape());
    case Kind::Sequence:
      return "sequence of " + std::to_string(elements_.size()) + " " + dtype_name(element_dtype_) +
             (elements_.size() == 1 ? " value" : " values");
    case Kind::Map:
      return "map of " + std::to_string(tensor_.numel()) + " " + dtype_name(tensor_.dtype()) + " -> " +
             dtype_name(element_dtype_) + (tensor_.numel() == 1 ? " entry" : " entries");
  }
  return "?";
}

}  // namespace ember
