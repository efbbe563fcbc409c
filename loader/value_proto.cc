// SequenceProto and OptionalProto files (the ONNX backend test data of models that take
// or give sequences and optionals). Their schema lives in onnx-data.proto, which Debian's
// libonnx-dev does not ship, so they are read field by field from the wire format with
// protobuf's UnknownFieldSet; the tensors inside are real TensorProtos.
#include "loader/onnx_loader.h"

#include "core/src/read_file.h"
#include "loader/tensor_proto.h"

#include <ember/core/error.h>

#include <google/protobuf/unknown_field_set.h>

#include <climits>
#include <filesystem>

namespace ember {

namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Both messages number their fields alike: 2 elem_type, then 3 tensor(s), 5 sequence(s)
// and 7 optional(s); elem_type says which of them holds the value.
enum ElemType : int64_t { kUndefined = 0, kTensor = 1, kSequence = 3, kOptional = 5 };
constexpr int kElemTypeField = 2;
int field_holding(int64_t elem_type) { return elem_type == kTensor ? 3 : elem_type == kSequence ? 5 : 7; }

constexpr int kMaxDepth = 16;

void parse_fields(const std::string& bytes, const char* what, UnknownFieldSet& fields) {
  if (bytes.size() > static_cast<size_t>(INT_MAX) || !fields.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(std::string("not a serialized ") + what + " (protobuf parse failed)");
}

Value read_message(const std::string& bytes, bool sequence, const std::string& dir, int depth);

Value read_element(const std::string& bytes, int64_t elem_type, const std::string& dir, int depth) {
  if (elem_type == kTensor) {
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes)) throw Error("a tensor inside is not a serialized TensorProto");
    return Value(tensor_from_proto(proto, dir));
  }
  return read_message(bytes, elem_type == kSequence, dir, depth + 1);
}

Value read_message(const std::string& bytes, bool sequence, const std::string& dir, int depth) {
  if (depth > kMaxDepth) throw Error("sequences and optionals nest deeper than " + std::to_string(kMaxDepth));
  UnknownFieldSet fields;
  parse_fields(bytes, sequence ? "SequenceProto" : "OptionalProto", fields);
  int64_t elem_type = kUndefined;
  for (int i = 0; i < fields.field_count(); ++i)
    if (fields.field(i).number() == kElemTypeField && fields.field(i).type() == UnknownField::TYPE_VARINT)
      elem_type = static_cast<int64_t>(fields.field(i).varint());
  if (elem_type != kUndefined && elem_type != kTensor && elem_type != kSequence && elem_type != kOptional)
    throw Error("elem_type " + std::to_string(elem_type) + " (a map or sparse tensor) is not supported");
  if (!sequence && elem_type == kUndefined) return Value();  // an empty optional
  std::vector<Value> elements;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == field_holding(elem_type) && f.type() == UnknownField::TYPE_LENGTH_DELIMITED)
      elements.push_back(read_element(f.length_delimited(), elem_type, dir, depth));
  }
  if (sequence) {
    const DType dtype = elements.empty() ? DType::Undefined : elements[0].element_dtype();
    return Value::sequence(std::move(elements), dtype);
  }
  if (elements.size() != 1) throw Error("an OptionalProto holding " + std::to_string(elements.size()) + " values");
  return elements[0];
}

}  // namespace

Value load_value_proto(const std::string& path, bool sequence) {
  const char* what = sequence ? "a serialized SequenceProto" : "a serialized OptionalProto";
  const std::string bytes = read_whole_file(path, what);
  try {
    return read_message(bytes, sequence, std::filesystem::path(path).parent_path().string(), 0);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace ember
