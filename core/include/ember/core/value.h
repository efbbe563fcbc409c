// ember::Value — what an ONNX graph passes between nodes: a tensor, a sequence of
// values, a map (ai.onnx.ml's ZipMap and DictVectorizer), or an empty optional. Most models pass only tensors; sequences and optionals
// (SequenceInsert, SplitToSequence, Optional, ...) run on the host, and a model whose
// inputs or outputs are of these types is run with Session::run_values.
#pragma once

#include <ember/core/tensor.h>

#include <string>
#include <vector>

namespace ember {

class Value {
 public:
  enum class Kind { None, Tensor, Sequence, Map };

  // An empty optional.
  Value() = default;
  // A tensor (a present optional tensor is the tensor itself).
  Value(Tensor tensor);  // NOLINT(google-explicit-constructor): a tensor is a value
  // A sequence; `element_dtype` is the elements' dtype, which an empty sequence still has.
  static Value sequence(std::vector<Value> elements, DType element_dtype);
  // A map, as two 1-D tensors of one length: `keys` (int64 or string, each once) and
  // `values` (entry i maps keys[i] to values[i]). Raises ember::Error when they do not fit.
  static Value map(Tensor keys, Tensor values);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }
  bool is_map() const { return kind_ == Kind::Map; }

  // Raise ember::Error naming `what` when the value is of another kind.
  const Tensor& tensor(const std::string& what = "value") const;
  const std::vector<Value>& elements(const std::string& what = "value") const;
  const Tensor& map_keys(const std::string& what = "value") const;
  const Tensor& map_values(const std::string& what = "value") const;
  // A sequence's elements' dtype; a map's values' dtype.
  DType element_dtype() const { return element_dtype_; }

  // "tensor float32 [2, 3]", "sequence of 3 float32 values", "map of 2 string -> float32
  // entries", "none".
  std::string describe() const;

 private:
  Kind kind_ = Kind::None;
  Tensor tensor_;                 // a tensor, or a map's keys
  Tensor map_values_;
  std::vector<Value> elements_;
  DType element_dtype_ = DType::Undefined;
};

}  // namespace ember
