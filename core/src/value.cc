#include <ember/core/error.h>
#include <ember/core/value.h>

namespace ember {

Value::Value(Tensor tensor) : kind_(Kind::Tensor), tensor_(std::move(tensor)), element_dtype_(tensor_.dtype()) {}

Value Value::sequence(std::vector<Value> elements, DType element_dtype) {
  Value v;
  v.kind_ = Kind::Sequence;
  v.elements_ = std::move(elements);
  v.element_dtype_ = element_dtype;
  return v;
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
  }
  return "?";
}

}  // namespace ember
