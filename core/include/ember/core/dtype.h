// ember::DType — the element types a tensor can hold, as ONNX numbers them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

// Element types, numbered as ONNX's TensorProto.DataType so files map one to one.
enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

// Size of one element in bits (4 or 2 for the packed types, 0 for String/Undefined).
int dtype_bits(DType dtype);
// "float32", "int64", ... as numpy names them.
const char* dtype_name(DType dtype);
// Bytes that `count` elements take, rounding packed types up to whole bytes.
size_t dtype_bytes(DType dtype, int64_t count);

}  // namespace ember
