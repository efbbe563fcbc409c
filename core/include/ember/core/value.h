// ember::Value — what an ONNX graph passes between nodes: a tensor, a sequence of
// values, or an empty optional. Most models pass only tensors; sequences and optionals
// (SequenceInsert, SplitToSequence, Optional, ...) run on the host, and a model whose
// inputs or outputs are of these types is run with Session::run_values.
#pragma once

#include <ember/core/tensor.h>

#include <string>
#include <vector>

namespace ember {

class Value {
 public:
  enum class Kind { None, Tensor, Sequence };

  // An empty optional.
  Value() = default;
  // A tensor (a present optional tensor is the tensor itself).
  Value(Tensor tensor);  // NOLINT(google-explicit-constructor): a tensor is a value
  // A sequence; `element_dtype` is the elements' dtype, which an empty sequence still has.
  static Value sequence(std::vector<Value> elements, DType element_dtype);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }

  // Raise ember::Error naming `what` when the value is of another kind.
  const Tensor& tensor(const std::string& what = "value") const;
  const std::vector<Value>& elements(const std::string& what = "value") const;
  DType element_dtype() const { return element_dtype_; }

  // "tensor float32 [2, 3]", "sequence of 3 float32 tensors", "none".
  std::string describe() const;

 private:
  Kind kind_ = Kind::None;
  Tensor tensor_;
  std::vector<Value> elements_;
  DType element_dtype_ = DType::Undefined;
};

}  // namespace ember
