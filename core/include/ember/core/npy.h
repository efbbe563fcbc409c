// Reading and writing numpy .npy files.
#pragma once

#include <ember/core/tensor.h>

#include <string>

namespace ember {

// Reads a .npy file (any numeric or bool dtype, either byte order, C order; Fortran
// order is converted). Raises ember::Error naming the file on anything malformed.
Tensor read_npy(const std::string& path);
// Writes a host tensor as a little-endian, C-order .npy file.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace ember
