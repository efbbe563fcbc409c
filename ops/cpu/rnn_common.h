// What the CPU kernels of RNN, GRU and LSTM share: the activation functions named by
// the `activations` attribute, the attributes and sizes read at plan time, and the
// driver that walks each (direction, batch) sequence through a per-op cell.
//
// Sequences of different batch entries and directions never interact, so each
// (direction, batch) pair runs its whole recurrence on one thread, with its state in
// its own slice of the workspace: no allocation, no sharing between runs.
#pragma once

#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/kernel.h"
#include "ops/run_stop.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember {

enum class RnnActivationKind {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
  Softsign, Softplus,
};

// One activation with its alpha/beta (defaults as the ONNX operator of that name has).
struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::Tanh;
  float alpha = 0, beta = 0;

  template <class T>
  T operator()(T x) const {
    const T a = T(alpha), b = T(beta);
    switch (kind) {
      case RnnActivationKind::Relu: return std::max(x, T(0));
      case RnnActivationKind::Tanh: return std::tanh(x);
      case RnnActivationKind::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      case RnnActivationKind::Affine: return a * x + b;
      case RnnActivationKind::LeakyRelu: return x >= 0 ? x : a * x;
      case RnnActivationKind::ThresholdedRelu: return x > a ? x : T(0);
      case RnnActivationKind::ScaledTanh: return a * std::tanh(b * x);
      case RnnActivationKind::HardSigmoid: return std::clamp(a * x + b, T(0), T(1));
      case RnnActivationKind::Elu: return x >= 0 ? x : a * std::expm1(x);
      case RnnActivationKind::Softsign: return x / (T(1) + std::abs(x));
      case RnnActivationKind::Softplus:  // log(1 + e^x) without overflow for large x
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

// Attributes and sizes of one recurrent node, validated at plan time.
struct RecurrentConfig {
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0, num_directions = 1;
  bool batch_major = false;    // layout 1: X [batch, seq, input], states [batch, dirs, hidden]
  bool reverse[2] = {false, true};  // per direction: walk the sequence backwards
  float clip = INFINITY;       // pre-activation bound; infinity when there is none
  int per_direction = 1;       // activations per direction (f, g, h)
  std::vector<RnnActivation> activations;  // per_direction for each direction, in order

  const RnnActivation& activation(int64_t direction, int k) const {
    return activations[direction * per_direction + k];
  }
  template <class T>
  T clipped(T x) const { return std::clamp(x, T(-clip), T(clip)); }

  // Element offsets of the rows the recurrence reads and writes.
  int64_t x_offset(int64_t t, int64_t b) const {
    return (batch_major ? b * seq_length + t : t * batch + b) * input_size;
  }
  int64_t y_offset(int64_t t, int64_t d, int64_t b) const {
    return (batch_major ? (b * seq_length + t) * num_directions + d
                        : (t * num_directions + d) * batch + b) * hidden;
  }
  int64_t state_offset(int64_t d, int64_t b) const {
    return (batch_major ? b * num_directions + d : d * batch + b) * hidden;
  }
};

// Reads direction, layout, clip and the activation lists (`defaults` has one entry per
// activation of one direction). Fails naming the node on values the spec forbids.
RecurrentConfig read_recurrent_config(const KernelInit& init,
                                      const std::vector<RnnActivationKind>& defaults);

// True when every input and output is float32 or float64 (else sets *why_not).
bool recurrent_dtype_supported(const KernelInit& init, std::string* why_not);

// Raises ember::Error naming `label` when a sequence length is outside [0, seq_length].
void check_sequence_lens(const RecurrentConfig& cfg, const int32_t* lens, const std::string& label);

// The recurrence's multiply-adds as floating-point operations (KernelInit::flops): each
// step's `gate_rows` (gates x hidden) from the input and the hidden state.
inline double recurrent_flops(const RecurrentConfig& cfg, int64_t gate_rows) {
  return 2.0 * static_cast<double>(cfg.seq_length * cfg.batch * cfg.num_directions * gate_rows *
                                   (cfg.input_size + cfg.hidden));
}

// Builds K<float> or K<double> by X's dtype, asking for `workspace` elements of it.
template <template <class> class K, class... Args>
std::unique_ptr<Kernel> make_recurrent_kernel(KernelInit& init, int64_t workspace, Args&&... args) {
  if (init.inputs[0].dtype == DType::Float64) {
    init.workspace_bytes = workspace * sizeof(double);
    return std::make_unique<K<double>>(std::forward<Args>(args)...);
  }
  init.workspace_bytes = workspace * sizeof(float);
  return std::make_unique<K<float>>(std::forward<Args>(args)...);
}

// x[i] = a(clip(x[i])) for i < n (`clip`: whether the gate's inputs are bounded). On
// float32, Sigmoid and Tanh run as the vector math's arrays; everything else per element.
template <class T>
void activate(const RnnActivation& a, const RecurrentConfig& cfg, bool clip, T* x, int64_t n) {
  if (clip && std::isfinite(cfg.clip))
    for (int64_t i = 0; i < n; ++i) x[i] = cfg.clipped(x[i]);
  if constexpr (std::is_same_v<T, float>) {
    if (a.kind == RnnActivationKind::Sigmoid) return vector_unary(ew::UnaryFunction::Sigmoid, {}, x, x, n);
    if (a.kind == RnnActivationKind::Tanh) return vector_unary(ew::UnaryFunction::Tanh, {}, x, x, n);
  }
  for (int64_t i = 0; i < n; ++i) x[i] = a(x[i]);
}

// Vectorized: without the simd reduction GCC keeps the sum's order and runs one
// dependent add per element (an LSTM step of Silero VAD took 71 us, 74% of its run).
template <class T>
T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Pointers of one run into the inputs and outputs a driver touches (nullptr: absent).
template <class T>
struct SequenceIo {
  const T* x = nullptr;
  const int32_t* lens = nullptr;
  const T* initial_h = nullptr;
  const T* initial_c = nullptr;
  T* y = nullptr;
  T* y_h = nullptr;
  T* y_c = nullptr;
};

// Data of input/output i, or nullptr when it is absent (or past the node's list).
template <class T>
const T* optional_input(const RunArgs& args, size_t i) {
  return i < args.inputs.size() && args.inputs[i] ? args.inputs[i]->data_as<T>() : nullptr;
}
template <class T>
T* optional_output(const RunArgs& args, size_t i) {
  return i < args.outputs.size() && args.outputs[i] ? args.outputs[i]->data_as<T>() : nullptr;
}

template <class T>
SequenceIo<T> sequence_io(const RunArgs& args, bool has_c) {
  SequenceIo<T> io;
  io.x = optional_input<T>(args, 0);
  io.lens = optional_input<int32_t>(args, 4);
  io.initial_h = optional_input<T>(args, 5);
  io.y = optional_output<T>(args, 0);
  io.y_h = optional_output<T>(args, 1);
  if (has_c) {
    io.initial_c = optional_input<T>(args, 6);
    io.y_c = optional_output<T>(args, 2);
  }
  return io;
}

// Elements of workspace the driver needs for a cell that wants `scratch` per sequence.
inline int64_t sequence_workspace(const RecurrentConfig& cfg, int64_t scratch) {
  return cfg.num_directions * cfg.batch * (2 * cfg.hidden + scratch);
}

// Runs every (direction, batch) sequence: `cell.step(d, x_row, h, c, scratch)` turns
// the state (h, c) of one step into the next in place. Steps past a sequence's length
// leave zeros in Y; Y_h/Y_c get the state after its last valid step. A `stop` requested
// mid-way ends every sequence at its next step (an exception cannot leave the worker
// threads), then raises here; the outputs are then incomplete.
template <class T, class Cell>
void run_sequences(const RecurrentConfig& cfg, const SequenceIo<T>& io, T* workspace,
                   int64_t scratch, int64_t cost_per_step, const Cell& cell, const RunStop* stop) {
  const int64_t hidden = cfg.hidden, per_item = 2 * hidden + scratch;
  parallel_for(cfg.num_directions * cfg.batch, cost_per_step * cfg.seq_length,
               [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t d = item / cfg.batch, b = item % cfg.batch;
      T* h = workspace + item * per_item;
      T* c = h + hidden;
      const int64_t state = cfg.state_offset(d, b);
      if (io.initial_h) std::copy_n(io.initial_h + state, hidden, h);
      else std::fill_n(h, hidden, T(0));
      if (io.initial_c) std::copy_n(io.initial_c + state, hidden, c);
      else std::fill_n(c, hidden, T(0));
      const int64_t len = io.lens ? io.lens[b] : cfg.seq_length;
      for (int64_t s = 0; s < len; ++s) {
        if (stop && stop->requested()) return;
        const int64_t t = cfg.reverse[d] ? len - 1 - s : s;
        cell.step(d, io.x + cfg.x_offset(t, b), h, c, c + hidden);
        if (io.y) std::copy_n(h, hidden, io.y + cfg.y_offset(t, d, b));
      }
      if (io.y)
        for (int64_t t = len; t < cfg.seq_length; ++t)
          std::fill_n(io.y + cfg.y_offset(t, d, b), hidden, T(0));
      if (io.y_h) std::copy_n(h, hidden, io.y_h + state);
      if (io.y_c) std::copy_n(c, hidden, io.y_c + state);
    }
  });
  check_stop(stop);
}

}  // namespace ember
