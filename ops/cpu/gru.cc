// CPU kernel for GRU (opsets 1-22), gates in ONNX order z (update), r (reset), h:
//   zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)
//   rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)
//   ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)          linear_before_reset = 0
//   ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)        linear_before_reset != 0
//   Ht = (1 - zt) (.) ht + zt (.) Ht-1
#include "ops/cpu/rnn_common.h"
#include "ops/registry.h"

namespace ember {

namespace {

template <class T>
struct GruCell {
  const RecurrentConfig& cfg;
  bool linear_before_reset;
  const T* w;  // [dirs, 3 * hidden, input]
  const T* r;  // [dirs, 3 * hidden, hidden]
  const T* b;  // [dirs, 6 * hidden] or nullptr

  // scratch: z, then r (turned into r (.) Ht-1 when the reset comes first), then ht.
  void step(int64_t d, const T* x, T* h, T*, T* scratch) const {
    const int64_t hid = cfg.hidden, in = cfg.input_size;
    const T* wd = w + d * 3 * hid * in;
    const T* rd = r + d * 3 * hid * hid;
    const T* bd = b ? b + d * 6 * hid : nullptr;
    const RnnActivation& f = cfg.activation(d, 0);
    const RnnActivation& g = cfg.activation(d, 1);
    T* z = scratch;
    T* reset = z + hid;
    T* candidate = reset + hid;
    // Row `row` of the gate block `gate` of W and R, and its bias sum.
    auto pre = [&](int64_t gate, int64_t j, const T* state) {
      const int64_t row = gate * hid + j;
      T v = dot(wd + row * in, x, in) + dot(rd + row * hid, state, hid);
      return bd ? v + bd[row] + bd[3 * hid + row] : v;
    };
    for (int64_t j = 0; j < 2 * hid; ++j) z[j] = pre(0, j, h);  // rows of z, then of r: z, reset
    activate(f, cfg, true, z, 2 * hid);
    if (linear_before_reset) {
      for (int64_t j = 0; j < hid; ++j) {
        const int64_t row = 2 * hid + j;
        const T recurrent = dot(rd + row * hid, h, hid) + (bd ? bd[3 * hid + row] : T(0));
        candidate[j] = dot(wd + row * in, x, in) + reset[j] * recurrent + (bd ? bd[row] : T(0));
      }
    } else {
      for (int64_t j = 0; j < hid; ++j) reset[j] *= h[j];
      for (int64_t j = 0; j < hid; ++j) candidate[j] = pre(2, j, reset);
    }
    activate(g, cfg, true, candidate, hid);
    for (int64_t j = 0; j < hid; ++j) h[j] = (T(1) - z[j]) * candidate[j] + z[j] * h[j];
  }
};

template <class T>
class GruKernel final : public Kernel {
 public:
  GruKernel(RecurrentConfig cfg, bool linear_before_reset, std::string label)
      : cfg_(std::move(cfg)), linear_before_reset_(linear_before_reset), label_(std::move(label)) {}

  void run(const RunArgs& args) const override {
    const SequenceIo<T> io = sequence_io<T>(args, false);
    check_sequence_lens(cfg_, io.lens, label_);
    const GruCell<T> cell{cfg_, linear_before_reset_, args.inputs[1]->data_as<T>(),
                          args.inputs[2]->data_as<T>(), optional_input<T>(args, 3)};
    run_sequences(cfg_, io, static_cast<T*>(args.workspace), 3 * cfg_.hidden,
                  3 * cfg_.hidden * (cfg_.input_size + cfg_.hidden), cell, args.stop);
  }

 private:
  RecurrentConfig cfg_;
  bool linear_before_reset_;
  std::string label_;
};

std::unique_ptr<Kernel> make_gru(KernelInit& init, std::string* why_not) {
  if (!recurrent_dtype_supported(init, why_not)) return nullptr;
  RecurrentConfig cfg =
      read_recurrent_config(init, {RnnActivationKind::Sigmoid, RnnActivationKind::Tanh});
  // GRU-1 has no linear_before_reset: its equations are those of the default 0.
  const bool linear_before_reset =
      init.opset >= 3 && init.node.attributes.get_int_or("linear_before_reset", 0) != 0;
  const int64_t workspace = sequence_workspace(cfg, 3 * cfg.hidden);
  init.flops = recurrent_flops(cfg, 3 * cfg.hidden);
  return make_recurrent_kernel<GruKernel>(init, workspace, std::move(cfg), linear_before_reset,
                                          init.node.label());
}

}  // namespace

EMBER_KERNEL("GRU", "", 1, kMaxOpset, DeviceKind::Cpu, make_gru);

}  // namespace ember
