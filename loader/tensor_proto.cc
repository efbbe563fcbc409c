#include "loader/tensor_proto.h"

#include <ember/core/error.h>

#include <bit>
#include <cstring>
#include <limits>

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; ember assumes a little-endian host");

namespace ember {

namespace {

// Dense tensors decoded from sparse ones are not bounded by the file's size, so a
// hostile file could ask for any amount of memory: cap what densifying may allocate.
constexpr size_t kMaxDensifiedBytes = size_t{4} << 30;

std::string tensor_label(const onnx::TensorProto& proto) {
  return "tensor '" + proto.name() + "'";
}

// Validates the dims (non-negative, product fits) and returns them as a Shape.
Shape checked_shape(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  Shape shape(dims.begin(), dims.end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + ": dims " + shape_to_string(shape) + " has a negative dimension");
    // 128 bits per element at most: keep numel * bits within int64 too.
    if (d > 0 && numel > std::numeric_limits<int64_t>::max() / 128 / d)
      throw Error(what + ": dims " + shape_to_string(shape) + " hold too many elements");
    numel *= d;
  }
  return shape;
}

// Which typed field carries each dtype when raw_data is not used (onnx.proto).
enum class Field { Float, Double, Int32, Int64, UInt64 };

Field field_for(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Complex64: return Field::Float;
    case DType::Float64:
    case DType::Complex128: return Field::Double;
    case DType::Int64: return Field::Int64;
    case DType::UInt32:
    case DType::UInt64: return Field::UInt64;
    default: return Field::Int32;
  }
}

const char* field_name(Field field) {
  switch (field) {
    case Field::Float: return "float_data";
    case Field::Double: return "double_data";
    case Field::Int32: return "int32_data";
    case Field::Int64: return "int64_data";
    case Field::UInt64: return "uint64_data";
  }
  return "?";
}

int field_size(const onnx::TensorProto& p, Field field) {
  switch (field) {
    case Field::Float: return p.float_data_size();
    case Field::Double: return p.double_data_size();
    case Field::Int32: return p.int32_data_size();
    case Field::Int64: return p.int64_data_size();
    case Field::UInt64: return p.uint64_data_size();
  }
  return 0;
}

bool is_packed(DType dtype) { return dtype_bits(dtype) < 8; }

// How many entries of the typed field `numel` elements take: complex numbers take two,
// 4-bit and 2-bit types are stored one packed byte (two or four elements) per int32.
int64_t field_count(DType dtype, int64_t numel) {
  if (dtype == DType::Complex64 || dtype == DType::Complex128) return 2 * numel;
  if (is_packed(dtype)) return static_cast<int64_t>(dtype_bytes(dtype, numel));
  return numel;
}

template <class Dst, class Src>
void narrow_into(const google::protobuf::RepeatedField<Src>& src, void* dst) {
  Dst* out = static_cast<Dst*>(dst);
  for (int i = 0; i < src.size(); ++i) out[i] = static_cast<Dst>(src[i]);
}

// int32_data holds every type of 16 bits or fewer as (the bit pattern in) an int32.
void copy_int32_field(const onnx::TensorProto& p, DType dtype, void* dst) {
  switch (dtype_bits(dtype)) {
    case 32: narrow_into<int32_t>(p.int32_data(), dst); break;
    case 16: narrow_into<uint16_t>(p.int32_data(), dst); break;
    default: narrow_into<uint8_t>(p.int32_data(), dst); break;  // 8-bit and packed 4/2-bit
  }
}

void copy_typed_field(const onnx::TensorProto& p, DType dtype, Field field, void* dst) {
  switch (field) {
    case Field::Float: narrow_into<float>(p.float_data(), dst); break;
    case Field::Double: narrow_into<double>(p.double_data(), dst); break;
    case Field::Int64: narrow_into<int64_t>(p.int64_data(), dst); break;
    case Field::UInt64:
      if (dtype == DType::UInt32) narrow_into<uint32_t>(p.uint64_data(), dst);
      else narrow_into<uint64_t>(p.uint64_data(), dst);
      break;
    case Field::Int32: copy_int32_field(p, dtype, dst); break;
  }
}

// Kernels may rely on bool bytes being exactly 0 or 1.
void normalize_bools(Tensor& t) {
  auto* b = t.data_as<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
}

// Checks the typed field holds exactly the values `shape` needs (before allocating).
Field check_typed(const onnx::TensorProto& p, DType dtype, const Shape& shape) {
  const std::string what = tensor_label(p);
  const Field field = field_for(dtype);
  const int64_t expected = field_count(dtype, shape_numel(shape));
  const int64_t have = field_size(p, field);
  if (have == 0 && expected > 0) {
    for (Field other : {Field::Float, Field::Double, Field::Int32, Field::Int64, Field::UInt64})
      if (field_size(p, other) > 0)
        throw Error(what + " (" + dtype_name(dtype) + ") stores its values in " +
                    field_name(other) + "; expected raw_data or " + field_name(field));
  }
  if (have != expected)
    throw Error(what + " has " + std::to_string(have) + " values in " + field_name(field) +
                ", expected " + std::to_string(expected) + " for " + dtype_name(dtype) + " " +
                shape_to_string(shape));
  return field;
}

// Sizes are checked against what the file holds before anything is allocated.
Tensor decode_data(const onnx::TensorProto& p, DType dtype, Shape shape, const std::string& base_dir) {
  if (p.has_data_location() && p.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external_tensor(p, base_dir, dtype, std::move(shape));
  if (p.has_raw_data()) {
    const size_t bytes = dtype_bytes(dtype, shape_numel(shape));
    if (p.raw_data().size() != bytes)
      throw Error(tensor_label(p) + " has " + std::to_string(p.raw_data().size()) +
                  " bytes of raw_data, expected " + std::to_string(bytes) + " for " +
                  dtype_name(dtype) + " " + shape_to_string(shape));
    Tensor t(dtype, std::move(shape));
    if (bytes) std::memcpy(t.data(), p.raw_data().data(), bytes);
    return t;
  }
  const Field field = check_typed(p, dtype, shape);
  Tensor t(dtype, std::move(shape));
  copy_typed_field(p, dtype, field, t.data());
  return t;
}

// string_data holds one bytes entry per element (UTF-8 by the spec; kept as given).
Tensor decode_strings(const onnx::TensorProto& p, Shape shape) {
  const std::string what = tensor_label(p);
  if (p.has_raw_data() || (p.has_data_location() && p.data_location() == onnx::TensorProto::EXTERNAL))
    throw Error(what + " (string) stores its values in raw_data or external data; expected string_data");
  const int64_t expected = shape_numel(shape);
  if (p.string_data_size() != expected)
    throw Error(what + " has " + std::to_string(p.string_data_size()) + " values in string_data, expected " +
                std::to_string(expected) + " for string " + shape_to_string(shape));
  Tensor t(DType::String, std::move(shape));
  for (int64_t i = 0; i < expected; ++i) t.data_as<std::string>()[i] = p.string_data(static_cast<int>(i));
  return t;
}

}  // namespace

DType dtype_from_onnx(int32_t data_type) {
  if (data_type <= 0 || data_type > static_cast<int32_t>(DType::Int2))
    throw Error("data type " + std::to_string(data_type) + " is not supported" +
                (data_type == 0 ? " (undefined)" : ""));
  return static_cast<DType>(data_type);
}

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  const std::string what = tensor_label(p);
  if (!p.has_data_type()) throw Error(what + " has no data type");
  DType dtype;
  try {
    dtype = dtype_from_onnx(p.data_type());
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  if (p.has_segment()) throw Error(what + ": segmented tensors are not supported");
  if (dtype == DType::String) return decode_strings(p, checked_shape(p.dims(), what));
  Tensor t = decode_data(p, dtype, checked_shape(p.dims(), what), base_dir);
  if (dtype == DType::Bool) normalize_bools(t);
  return t;
}

Tensor tensor_from_sparse_proto(const onnx::SparseTensorProto& sp, const std::string& base_dir) {
  const std::string what = "sparse tensor '" + sp.values().name() + "'";
  Shape shape = checked_shape(sp.dims(), what);
  Tensor values = tensor_from_proto(sp.values(), base_dir);
  Tensor indices = tensor_from_proto(sp.indices(), base_dir);
  const DType dtype = values.dtype();
  if (is_packed(dtype) || dtype == DType::String) throw Error(what + ": sparse " + dtype_name(dtype) + " tensors are not supported");
  if (values.rank() != 1) throw Error(what + ": values must be 1-D, got " + shape_to_string(values.shape()));
  const int64_t nnz = values.numel();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const bool linear = indices.shape() == Shape{nnz};
  if (indices.dtype() != DType::Int64 || (!linear && indices.shape() != Shape{nnz, rank}))
    throw Error(what + ": indices must be int64 [" + std::to_string(nnz) + "] or [" +
                std::to_string(nnz) + ", " + std::to_string(rank) + "]");
  const int64_t numel = shape_numel(shape);
  if (dtype_bytes(dtype, numel) > kMaxDensifiedBytes)
    throw Error(what + ": densifying " + shape_to_string(shape) + " would take more than 4 GiB");

  Tensor dense(dtype, shape);
  const size_t elem = dtype_bits(dtype) / 8;
  const auto* idx = indices.data_as<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t offset = 0;
    if (linear) {
      offset = idx[k];
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t i = idx[k * rank + d];
        if (i < 0 || i >= shape[d]) { offset = -1; break; }
        offset = offset * shape[d] + i;
      }
    }
    if (offset < 0 || offset >= numel)
      throw Error(what + ": index " + std::to_string(k) + " is outside " + shape_to_string(shape));
    std::memcpy(dense.data_as<char>() + offset * elem, values.data_as<char>() + k * elem, elem);
  }
  return dense;
}

}  // namespace ember
