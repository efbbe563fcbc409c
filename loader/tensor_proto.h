// Decoding ONNX TensorProto / SparseTensorProto messages into ember::Tensor.
// Internal to loader/: the only headers outside it never see protobuf.
#pragma once

#include "onnx/onnx.pb.h"

#include <ember/core/tensor.h>

#include <string>

namespace ember {

// Maps an ONNX TensorProto.DataType number to DType; raises ember::Error for numbers
// ember does not know (newer types such as int2) and for 0 (undefined).
DType dtype_from_onnx(int32_t data_type);

// Decodes a dense tensor from raw_data, the typed fields or external data (read from
// a file inside `base_dir`; "" when the model has no folder). Errors name the tensor,
// not the file: the caller adds that.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);

// Densifies a sparse tensor (values + linear or per-dimension int64 indices).
Tensor tensor_from_sparse_proto(const onnx::SparseTensorProto& proto,
                                const std::string& base_dir);

// Reads a tensor's bytes from the file its external_data names relative to
// `base_dir`, refusing names that leave the folder (absolute, "..", symlinks) and
// ranges that do not match the dtype and dims (checked before allocating).
Tensor read_external_tensor(const onnx::TensorProto& proto, const std::string& base_dir,
                            DType dtype, Shape shape);

}  // namespace ember
