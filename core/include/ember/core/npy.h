// Reading and writing numpy .npy files.
#pragma once

#include <ember/core/tensor.h>

#include <string>
#include <string_view>

namespace ember {

// Reads a .npy file (any numeric or bool dtype, either byte order, C order; Fortran
// order is converted). Raises ember::Error naming the file on anything malformed.
Tensor read_npy(const std::string& path);
// Same, from the bytes of a .npy file already in memory; `source` names them in errors.
Tensor read_npy_from_bytes(std::string_view bytes, const std::string& source);
// Writes a host tensor as a little-endian, C-order .npy file.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember
