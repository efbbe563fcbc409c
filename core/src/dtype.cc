#include <ember/core/dtype.h>

namespace ember {

int dtype_bits(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0: return 8;
    case DType::UInt16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 16;
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32: return 32;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
    case DType::Complex64: return 64;
    case DType::Complex128: return 128;
    case DType::UInt4:
    case DType::Int4:
    case DType::Float4E2M1: return 4;
    case DType::UInt2:
    case DType::Int2: return 2;
    case DType::String:
    case DType::Undefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Undefined: return "undefined";
    case DType::Float32: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
    case DType::Float8E4M3FN: return "float8e4m3fn";
    case DType::Float8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::Float8E5M2: return "float8e5m2";
    case DType::Float8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::UInt4: return "uint4";
    case DType::Int4: return "int4";
    case DType::Float4E2M1: return "float4e2m1";
    case DType::Float8E8M0: return "float8e8m0";
    case DType::UInt2: return "uint2";
    case DType::Int2: return "int2";
  }
  return "unknown";
}

size_t dtype_bytes(DType dtype, int64_t count) {
  return static_cast<size_t>((count * dtype_bits(dtype) + 7) / 8);
}

}  // namespace ember
