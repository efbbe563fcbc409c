// The .npy format: "\x93NUMPY", version, header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, then the raw elements.
#include <ember/core/error.h>
#include <ember/core/npy.h>
#include <ember/core/utf8.h>

#include "core/src/read_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

namespace ember {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyDtype {
  DType dtype;
  const char* descr;  // as write_npy writes it
};

// numpy's names for the dtypes ember can exchange ('|' where byte order is moot).
constexpr NpyDtype kDtypes[] = {
    {DType::Float32, "<f4"},  {DType::Float64, "<f8"},  {DType::Float16, "<f2"},
    {DType::Int8, "|i1"},     {DType::UInt8, "|u1"},    {DType::Int16, "<i2"},
    {DType::UInt16, "<u2"},   {DType::Int32, "<i4"},    {DType::UInt32, "<u4"},
    {DType::Int64, "<i8"},    {DType::UInt64, "<u8"},   {DType::Bool, "|b1"},
    {DType::Complex64, "<c8"}, {DType::Complex128, "<c16"},
};

struct Header {
  DType dtype = DType::Undefined;  // Undefined: raw bytes (raw_bytes per element)
  int raw_bytes = 0;               // or, for DType::String ('<U<n>'), code points per element
  bool big_endian = false;
  bool fortran_order = false;
  Shape shape;
};

// The text after `'key':` in the header dict, leading spaces skipped.
std::string_view value_of(std::string_view dict, std::string_view key, const std::string& path) {
  std::string quoted(1, '\'');
  quoted.append(key).push_back('\'');
  size_t at = dict.find(quoted);
  if (at == std::string_view::npos) throw Error(path + ": npy header has no '" + std::string(key) + "'");
  at = dict.find(':', at + quoted.size());
  if (at == std::string_view::npos) throw Error(path + ": npy header is malformed near '" + std::string(key) + "'");
  std::string_view rest = dict.substr(at + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

// numpy has no bfloat16, float8 or 4-bit types: ml_dtypes' arrays of them save as raw
// bytes, '<V2' (bfloat16) or '<V1' (one byte per element, a 4-bit value in the low bits;
// float8_e5m2 alone says '<f1'), which only the reader's expected dtype can name.
bool is_raw_dtype(DType d) {
  switch (d) {
    case DType::BFloat16: case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ: case DType::Float8E8M0: case DType::Float4E2M1: case DType::Int4:
    case DType::UInt4: case DType::Int2: case DType::UInt2: return true;
    default: return false;
  }
}

// Bytes per element of a raw dtype in a .npy file (sub-byte ones take a byte each).
int raw_bytes_of(DType d) { return d == DType::BFloat16 ? 2 : 1; }

DType parse_descr(std::string_view v, bool& big_endian, int& raw_bytes, const std::string& path) {
  if (v.empty() || v.front() != '\'')
    throw Error(path + ": npy dtype is not a simple type (structured arrays are not supported)");
  const size_t end = v.find('\'', 1);
  if (end == std::string_view::npos) throw Error(path + ": npy header has an unterminated 'descr'");
  std::string descr(v.substr(1, end - 1));
  if (descr.empty()) throw Error(path + ": npy header has an empty 'descr'");
  const char order = descr[0];
  big_endian = order == '>';
  std::string body = (order == '<' || order == '>' || order == '|' || order == '=') ? descr.substr(1) : descr;
  for (const auto& d : kDtypes)
    if (body == d.descr + 1) return d.dtype;
  if (body == "?") return DType::Bool;
  // numpy's str arrays: fixed-width UTF-32, n code points per element.
  if (body.size() > 1 && body[0] == 'U' && body.find_first_not_of("0123456789", 1) == std::string::npos &&
      body.size() < 10 && std::stoi(body.substr(1)) > 0) {  // '<U0' holds nothing to bound a huge shape
    raw_bytes = std::stoi(body.substr(1));
    return DType::String;
  }
  if (body == "O")
    throw Error(path + ": npy dtype 'O' (Python objects, pickled) cannot be read: save strings as a numpy str "
                "array ('<U<n>'), e.g. np.save(f, a.astype(str))");
  if (body == "V1" || body == "V2" || body == "f1") {
    raw_bytes = body == "V2" ? 2 : 1;
    return DType::Undefined;
  }
  throw Error(path + ": npy dtype '" + descr + "' is not supported (numeric, bool and str '<U<n>' dtypes only)");
}

Shape parse_shape(std::string_view v, const std::string& path) {
  if (v.empty() || v.front() != '(') throw Error(path + ": npy 'shape' is not a tuple");
  const size_t end = v.find(')');
  if (end == std::string_view::npos) throw Error(path + ": npy 'shape' is not closed");
  Shape shape;
  std::string_view items = v.substr(1, end - 1);
  while (!items.empty()) {
    while (!items.empty() && (items.front() == ' ' || items.front() == ',')) items.remove_prefix(1);
    if (items.empty()) break;
    int64_t d = 0;
    size_t digits = 0;
    for (; digits < items.size() && items[digits] >= '0' && items[digits] <= '9'; ++digits) {
      if (d > (std::numeric_limits<int64_t>::max() - 9) / 10)
        throw Error(path + ": npy 'shape' has a dimension that is too large");
      d = d * 10 + (items[digits] - '0');
    }
    if (digits == 0) throw Error(path + ": npy 'shape' has a non-integer dimension");
    items.remove_prefix(digits);
    if (!items.empty() && items.front() == 'L') items.remove_prefix(1);  // Python 2 longs
    shape.push_back(d);
  }
  return shape;
}

Header parse_header(std::string_view dict, const std::string& path) {
  Header h;
  h.dtype = parse_descr(value_of(dict, "descr", path), h.big_endian, h.raw_bytes, path);
  const std::string_view fortran = value_of(dict, "fortran_order", path);
  if (fortran.starts_with("True")) h.fortran_order = true;
  else if (!fortran.starts_with("False")) throw Error(path + ": npy 'fortran_order' is neither True nor False");
  h.shape = parse_shape(value_of(dict, "shape", path), path);
  return h;
}

void swap_bytes(Tensor& t) {
  // Complex numbers are two floats, each swapped on its own.
  const bool complex = t.dtype() == DType::Complex64 || t.dtype() == DType::Complex128;
  const size_t width = dtype_bits(t.dtype()) / 8 / (complex ? 2 : 1);
  if (width == 1) return;
  auto* p = t.data_as<uint8_t>();
  for (size_t i = 0; i < t.nbytes(); i += width) std::reverse(p + i, p + i + width);
}

// Column-major bytes to a row-major tensor of the same shape.
void fortran_to_c(const uint8_t* src, Tensor& dst) {
  const Shape& shape = dst.shape();
  const size_t elem = dtype_bits(dst.dtype()) / 8;
  const size_t rank = shape.size();
  std::vector<int64_t> f_stride(rank, 1), index(rank, 0);
  for (size_t d = 1; d < rank; ++d) f_stride[d] = f_stride[d - 1] * shape[d - 1];
  auto* out = dst.data_as<uint8_t>();
  for (int64_t i = 0, n = dst.numel(); i < n; ++i) {
    int64_t f = 0;
    for (size_t d = 0; d < rank; ++d) f += index[d] * f_stride[d];
    std::memcpy(out + i * elem, src + f * elem, elem);
    for (size_t d = rank; d-- > 0;) {  // next C-order index
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// dtype_bytes counts in bits (up to 128 per element): numel * 128 must fit an int64.
int64_t checked_numel(const Shape& shape, const std::string& path) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / 128 / d)
      throw Error(path + ": npy shape " + shape_to_string(shape) + " holds too many elements");
    n *= d;
  }
  return n;
}

// A raw-bytes .npy (is_raw_dtype) as the dtype the reader expects, 4-bit and 2-bit
// values packed as ember keeps them (the first in the low bits).
Tensor read_raw(const Header& h, std::string_view data, DType expected, const std::string& path) {
  if (!is_raw_dtype(expected) || raw_bytes_of(expected) != h.raw_bytes)
    throw Error(path + ": npy dtype of raw " + std::to_string(h.raw_bytes) + "-byte elements (what numpy saves for "
                "ml_dtypes' bfloat16, float8 and int4 arrays) needs an expected dtype of that size, and " +
                (expected == DType::Undefined ? std::string("none was given") : std::string("the input is ") + dtype_name(expected)));
  if (h.fortran_order) throw Error(path + ": a raw-bytes npy file must be in C order");
  const int64_t n = checked_numel(h.shape, path);
  if (data.size() < static_cast<size_t>(n) * h.raw_bytes)
    throw Error(path + ": truncated .npy data: " + std::to_string(data.size()) + " bytes for " +
                std::to_string(n) + " elements of " + std::to_string(h.raw_bytes));
  Tensor t(expected, h.shape);
  const int bits = dtype_bits(expected);
  if (bits >= 8) {
    std::memcpy(t.data(), data.data(), static_cast<size_t>(n) * h.raw_bytes);
    if (h.big_endian) swap_bytes(t);
    return t;
  }
  const int per_byte = 8 / bits;
  const auto mask = static_cast<uint8_t>((1u << bits) - 1);
  auto* out = t.data_as<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    out[i / per_byte] |= static_cast<uint8_t>((static_cast<uint8_t>(data[i]) & mask) << (bits * (i % per_byte)));
  return t;
}

// A tensor of a raw dtype as numpy saves ml_dtypes' arrays: one element per byte for
// 4-bit and 2-bit types (unpacked), the bytes as they are otherwise.
std::string raw_bytes_for_npy(const Tensor& t) {
  const int bits = dtype_bits(t.dtype());
  const auto* in = static_cast<const uint8_t*>(t.data());
  if (bits >= 8) return std::string(reinterpret_cast<const char*>(in), t.nbytes());
  const int per_byte = 8 / bits;
  const auto mask = static_cast<uint8_t>((1u << bits) - 1);
  std::string out(static_cast<size_t>(t.numel()), '\0');
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<char>((in[i / per_byte] >> (bits * (i % per_byte))) & mask);
  return out;
}

// A '<U<n>' .npy: n UTF-32 code points per element, NUL-padded (numpy drops trailing
// NULs too), each element kept as UTF-8.
Tensor read_strings(const Header& h, std::string_view data, const std::string& path) {
  if (h.fortran_order) throw Error(path + ": a str npy file must be in C order");
  const int64_t n = checked_numel(h.shape, path);
  const size_t width = static_cast<size_t>(h.raw_bytes);
  if (width && static_cast<size_t>(n) > data.size() / (4 * width))
    throw Error(path + ": truncated .npy data: " + std::to_string(data.size()) + " bytes for " + std::to_string(n) +
                " strings of " + std::to_string(width) + " UTF-32 code points");
  Tensor t(DType::String, h.shape);
  const auto* u = reinterpret_cast<const uint8_t*>(data.data());
  for (int64_t i = 0; i < n; ++i) {
    std::string& s = t.data_as<std::string>()[i];
    for (size_t k = 0; k < width; ++k) {
      const uint8_t* b = u + (static_cast<size_t>(i) * width + k) * 4;
      const char32_t c = h.big_endian ? (char32_t{b[0]} << 24 | char32_t{b[1]} << 16 | char32_t{b[2]} << 8 | b[3])
                                      : (char32_t{b[3]} << 24 | char32_t{b[2]} << 16 | char32_t{b[1]} << 8 | b[0]);
      if (c == 0) break;
      utf8_append(s, c, path + ": string " + std::to_string(i));
    }
  }
  return t;
}

// A string tensor as numpy's '<U<n>' bytes, n the most code points of any element.
std::string strings_for_npy(const Tensor& t, size_t& width, const std::string& path) {
  std::vector<std::u32string> code_points;
  width = 1;  // numpy's width for an array of empty strings
  for (int64_t i = 0; i < t.numel(); ++i) {
    code_points.push_back(utf8_decode(t.data_as<std::string>()[i], path + ": string " + std::to_string(i)));
    width = std::max(width, code_points.back().size());
  }
  std::string out(code_points.size() * width * 4, '\0');
  for (size_t i = 0; i < code_points.size(); ++i)
    for (size_t k = 0; k < code_points[i].size(); ++k)
      for (int b = 0; b < 4; ++b) out[(i * width + k) * 4 + b] = static_cast<char>((code_points[i][k] >> (8 * b)) & 0xFF);
  return out;
}

}  // namespace

Tensor read_npy(const std::string& path, DType expected) {
  return read_npy_from_bytes(read_whole_file(path, "a .npy file"), path, expected);
}

Tensor read_npy_from_bytes(std::string_view bytes, const std::string& path, DType expected) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    throw Error(path + ": not a .npy file (no \\x93NUMPY magic)");
  const auto* u = reinterpret_cast<const uint8_t*>(bytes.data());
  const int major = u[6];
  if (major < 1 || major > 3) throw Error(path + ": .npy version " + std::to_string(major) + " is not supported");
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) throw Error(path + ": truncated .npy header");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= size_t{u[8 + i]} << (8 * i);
  const size_t data_start = 8 + len_bytes + header_len;
  if (data_start > bytes.size()) throw Error(path + ": truncated .npy header");
  Header h = parse_header(bytes.substr(8 + len_bytes, header_len), path);
  if (h.dtype == DType::Undefined) return read_raw(h, bytes.substr(data_start), expected, path);
  if (h.dtype == DType::String) return read_strings(h, bytes.substr(data_start), path);

  const size_t need = dtype_bytes(h.dtype, checked_numel(h.shape, path));
  if (bytes.size() - data_start < need)
    throw Error(path + ": truncated .npy data: " + std::to_string(bytes.size() - data_start) +
                " bytes for " + dtype_name(h.dtype) + " " + shape_to_string(h.shape) + ", expected " +
                std::to_string(need));
  Tensor t(h.dtype, h.shape);
  const auto* data = u + data_start;
  if (h.fortran_order) fortran_to_c(data, t);
  else if (need) std::memcpy(t.data(), data, need);
  if (h.big_endian) swap_bytes(t);
  if (h.dtype == DType::Bool)
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<uint8_t>()[i] = t.data_as<uint8_t>()[i] != 0;
  return t;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  if (tensor.device().kind != DeviceKind::Cpu)
    throw Error(path + ": write_npy needs a host tensor, this one is on " + tensor.device().to_string());
  const char* descr = nullptr;
  for (const auto& d : kDtypes)
    if (d.dtype == tensor.dtype()) descr = d.descr;
  const bool raw = is_raw_dtype(tensor.dtype());
  if (raw) descr = raw_bytes_of(tensor.dtype()) == 2 ? "<V2" : "|V1";
  size_t string_width = 0;
  const std::string strings = tensor.dtype() == DType::String ? strings_for_npy(tensor, string_width, path) : "";
  const std::string string_descr = "<U" + std::to_string(string_width);
  if (tensor.dtype() == DType::String) descr = string_descr.c_str();
  if (!descr)
    throw Error(path + ": " + dtype_name(tensor.dtype()) + " has no numpy dtype; convert the tensor first");

  std::string shape = "(";
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  else if (tensor.rank() == 1) shape.pop_back();  // "(3,)" like Python
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads with spaces and a newline so the data starts on a 64-byte boundary.
  const bool v1 = header.size() + 11 + 64 <= 0xFFFF;
  const size_t prefix = v1 ? 10 : 12;
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot open the file for writing");
  out.write(kMagic, kMagicSize);
  out.put(static_cast<char>(v1 ? 1 : 2));
  out.put(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.put(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  out << header;
  if (tensor.dtype() == DType::String) {
    out.write(strings.data(), static_cast<std::streamsize>(strings.size()));
  } else if (raw) {
    const std::string bytes = raw_bytes_for_npy(tensor);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } else {
    out.write(static_cast<const char*>(tensor.data()), static_cast<std::streamsize>(tensor.nbytes()));
  }
  if (!out) throw Error(path + ": writing the file failed");
}

}  // namespace ember
