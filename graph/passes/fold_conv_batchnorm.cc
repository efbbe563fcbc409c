#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <cmath>

namespace ember {

namespace {

const Tensor* float_initializer(const Graph& graph, const std::string& name) {
  auto it = graph.initializers.find(name);
  return it != graph.initializers.end() && it->second.dtype() == DType::Float32 ? &it->second
                                                                                : nullptr;
}

}  // namespace

// y = gamma * (conv(x) + b - mean) / sqrt(var + eps) + beta
//   = conv'(x) + b'  with  W' = W * s,  b' = (b - mean) * s + beta,  s = gamma / sqrt(var + eps)
int fold_conv_batchnorm(Graph& graph) {
  Consumers consumers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& conv = graph.nodes[i];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2) continue;
    if (!consumers.single_reader(conv.outputs[0])) continue;
    const int bn_index = consumers.of(conv.outputs[0])[0];
    const Node& bn = graph.nodes[bn_index];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.inputs[0] != conv.outputs[0])
      continue;
    if (bn.outputs.size() > 1 || bn.attributes.get_int_or("training_mode", 0) != 0) continue;
    const Tensor* w = float_initializer(graph, conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 && !conv.inputs[2].empty()
                          ? float_initializer(graph, conv.inputs[2]) : nullptr;
    const Tensor* gamma = float_initializer(graph, bn.inputs[1]);
    const Tensor* beta = float_initializer(graph, bn.inputs[2]);
    const Tensor* mean = float_initializer(graph, bn.inputs[3]);
    const Tensor* var = float_initializer(graph, bn.inputs[4]);
    if (!w || !gamma || !beta || !mean || !var || w->rank() < 3) continue;
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !b) continue;
    const int64_t out_channels = w->shape()[0];
    if (gamma->numel() != out_channels || beta->numel() != out_channels ||
        mean->numel() != out_channels || var->numel() != out_channels)
      continue;

    const float eps = bn.attributes.get_float_or("epsilon", 1e-5f);
    Tensor new_w = w->clone();
    Tensor new_b(DType::Float32, {out_channels});
    const int64_t per_channel = w->numel() / out_channels;
    for (int64_t c = 0; c < out_channels; ++c) {
      const float s = gamma->data_as<float>()[c] / std::sqrt(var->data_as<float>()[c] + eps);
      float* wc = new_w.data_as<float>() + c * per_channel;
      for (int64_t k = 0; k < per_channel; ++k) wc[k] *= s;
      const float bias = b ? b->data_as<float>()[c] : 0.0f;
      new_b.data_as<float>()[c] = (bias - mean->data_as<float>()[c]) * s + beta->data_as<float>()[c];
    }
    const std::string w_name = conv.inputs[1] + "/bn_folded_" + bn.outputs[0];
    const std::string b_name = bn.outputs[0] + "/bn_folded_bias";
    graph.initializers[w_name] = std::move(new_w);
    graph.initializers[b_name] = std::move(new_b);
    conv.inputs.resize(3);
    conv.inputs[1] = w_name;
    conv.inputs[2] = b_name;
    conv.outputs[0] = bn.outputs[0];
    dead[bn_index] = true;
    ++folded;
  }
  erase_nodes(graph, dead);
  return folded;
}

}  // namespace ember
