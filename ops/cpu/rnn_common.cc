#include "ops/cpu/rnn_common.h"

#include <ember/core/error.h>

#include <cctype>
#include <optional>

namespace ember {

namespace {

struct ActivationSpec {
  const char* name;
  RnnActivationKind kind;
  int params;  // how many of (alpha, beta) it consumes
  float alpha, beta;
};

// Defaults are those of the ONNX operator of the same name.
constexpr ActivationSpec kActivations[] = {
    {"relu", RnnActivationKind::Relu, 0, 0, 0},
    {"tanh", RnnActivationKind::Tanh, 0, 0, 0},
    {"sigmoid", RnnActivationKind::Sigmoid, 0, 0, 0},
    {"affine", RnnActivationKind::Affine, 2, 1.0f, 0.0f},
    {"leakyrelu", RnnActivationKind::LeakyRelu, 1, 0.01f, 0},
    {"thresholdedrelu", RnnActivationKind::ThresholdedRelu, 1, 1.0f, 0},
    {"scaledtanh", RnnActivationKind::ScaledTanh, 2, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivationKind::HardSigmoid, 2, 0.2f, 0.5f},
    {"elu", RnnActivationKind::Elu, 1, 1.0f, 0},
    {"softsign", RnnActivationKind::Softsign, 0, 0, 0},
    {"softplus", RnnActivationKind::Softplus, 0, 0, 0},
};

// Names match case-insensitively: exporters write both "Tanh" and "tanh".
std::optional<ActivationSpec> find_activation(const std::string& name) {
  std::string lower;
  for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const ActivationSpec& spec : kActivations)
    if (lower == spec.name) return spec;
  return std::nullopt;
}

const ActivationSpec& spec_of(RnnActivationKind kind) {
  for (const ActivationSpec& spec : kActivations)
    if (spec.kind == kind) return spec;
  return kActivations[1];
}

// The attribute's activation names, or the defaults for every direction.
std::vector<std::string> activation_names(const KernelInit& init,
                                          const std::vector<RnnActivationKind>& defaults,
                                          int64_t dirs) {
  std::vector<std::string> names = init.node.attributes.get_strings_or("activations", {});
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d)
      for (RnnActivationKind kind : defaults) names.push_back(spec_of(kind).name);
  return names;
}

}  // namespace

RecurrentConfig read_recurrent_config(const KernelInit& init,
                                      const std::vector<RnnActivationKind>& defaults) {
  const Attributes& attrs = init.node.attributes;
  RecurrentConfig cfg;
  const std::string direction = attrs.get_string_or("direction", "forward");
  cfg.num_directions = direction == "bidirectional" ? 2 : 1;
  cfg.reverse[0] = direction == "reverse";
  cfg.batch_major = init.opset >= 14 && attrs.get_int_or("layout", 0) == 1;
  const Shape& x = init.inputs[0].shape;
  cfg.seq_length = x[cfg.batch_major ? 1 : 0];
  cfg.batch = x[cfg.batch_major ? 0 : 1];
  cfg.input_size = x[2];
  cfg.hidden = init.inputs[2].shape[2];
  if (attrs.has("clip")) {
    cfg.clip = attrs.get_float("clip");
    if (!(cfg.clip > 0)) init.fail("clip must be positive, got " + std::to_string(cfg.clip));
  }

  cfg.per_direction = static_cast<int>(defaults.size());
  const std::vector<float> alphas = attrs.get_floats_or("activation_alpha", {});
  const std::vector<float> betas = attrs.get_floats_or("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  // alpha/beta values are consumed in order by the functions that take them.
  for (const std::string& name : activation_names(init, defaults, cfg.num_directions)) {
    const std::optional<ActivationSpec> spec = find_activation(name);
    if (!spec) init.fail("unknown activation function '" + name + "'");
    RnnActivation act{spec->kind, spec->alpha, spec->beta};
    if (spec->params >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec->params >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
    cfg.activations.push_back(act);
  }
  // One direction's worth (with its alpha/beta) serves both directions of a
  // bidirectional node; a unidirectional node given two directions' worth (RNN's
  // default list is ["Tanh", "Tanh"]) uses the first.
  const size_t n = defaults.size(), dirs = static_cast<size_t>(cfg.num_directions);
  std::vector<RnnActivation>& acts = cfg.activations;
  if (dirs == 2 && acts.size() == n) {
    const std::vector<RnnActivation> one = acts;  // inserting a vector's own range is UB
    acts.insert(acts.end(), one.begin(), one.end());
  }
  if (dirs == 1 && acts.size() == 2 * n) acts.resize(n);
  if (acts.size() != n * dirs)
    init.fail("activations must list " + std::to_string(n * dirs) + " functions, got " +
              std::to_string(acts.size()));
  return cfg;
}

bool recurrent_dtype_supported(const KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  if (dtype == DType::Float32 || dtype == DType::Float64) return true;
  *why_not = std::string(dtype_name(dtype)) + " is not supported (float32 and float64 are)";
  return false;
}

void check_sequence_lens(const RecurrentConfig& cfg, const int32_t* lens, const std::string& label) {
  if (!lens) return;
  for (int64_t b = 0; b < cfg.batch; ++b)
    if (lens[b] < 0 || lens[b] > cfg.seq_length)
      throw Error(label + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) +
                  " is outside [0, " + std::to_string(cfg.seq_length) + "]");
}

}  // namespace ember
