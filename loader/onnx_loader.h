// Reading ONNX files into ember's Graph. Every error is an ember::Error whose message
// starts with the file and names the node or tensor at fault.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>
#include <ember/core/value.h>

#include <string>
#include <string_view>

namespace ember {

// Parses and validates an ONNX model file into a topologically sorted Graph.
// Constant nodes become initializers, model-local functions are inlined, and inputs
// that have an initializer (IR < 4 lists those as inputs) are not graph inputs.
Graph load_model(const std::string& path);

// Same, from bytes already in memory; `source` names it in errors, `base_dir`
// resolves external data ("" refuses external data).
Graph load_model_from_bytes(std::string_view bytes, const std::string& source,
                            const std::string& base_dir);

// A serialized TensorProto file (the ONNX backend test data's input_0.pb / output_0.pb).
Tensor load_tensor_proto(const std::string& path);

// A serialized SequenceProto (`sequence`) or OptionalProto file, as the backend test data
// holds the values of sequence and optional inputs and outputs.
Value load_value_proto(const std::string& path, bool sequence);

}  // namespace ember
