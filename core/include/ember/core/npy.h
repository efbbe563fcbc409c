// Reading and writing numpy .npy files.
#pragma once

#include <ember/core/tensor.h>

#include <string>
#include <string_view>

namespace ember {

// Reads a .npy file (any numeric or bool dtype, either byte order, C order; Fortran
// order is converted; numpy str arrays '<U<n>' (UTF-32) in C order as DType::String,
// UTF-8; object arrays 'O' are refused, naming the fix). Raises ember::Error naming the file on anything malformed.
// numpy saves ml_dtypes' bfloat16, float8 and 4-bit arrays as raw bytes ('<V2', or
// '<V1' with one element per byte; float8_e5m2 as '<f1'): such a file is read as
// `expected` (the model input's dtype), which must be one of those types and sizes.
Tensor read_npy(const std::string& path, DType expected = DType::Undefined);
// Same, from the bytes of a .npy file already in memory; `source` names them in errors.
Tensor read_npy_from_bytes(std::string_view bytes, const std::string& source, DType expected = DType::Undefined);
// Writes a host tensor as a little-endian, C-order .npy file; bfloat16, float8 and
// 4-bit tensors as numpy saves ml_dtypes' arrays (raw bytes, one element per byte for
// 4-bit ones): np.load(f).view(ml_dtypes.bfloat16) gives them back. String tensors as
// '<U<n>' (n the longest string's code points); text that is not UTF-8 raises.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember
