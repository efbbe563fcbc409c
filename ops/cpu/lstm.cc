// CPU kernel for LSTM (opsets 1-22), gates in ONNX order i, o, f, c; peepholes P in
// order i, o, f:
//   it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)
//   ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf)     (1 - it with input_forget)
//   ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)
//   Ct = ft (.) Ct-1 + it (.) ct
//   ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)
//   Ht = ot (.) h(Ct)
// clip bounds the inputs of f and g (the gates), not the cell state that h reads.
#include "ops/cpu/rnn_common.h"
#include "ops/registry.h"

namespace ember {

namespace {

template <class T>
struct LstmCell {
  const RecurrentConfig& cfg;
  bool input_forget;
  const T* w;  // [dirs, 4 * hidden, input]
  const T* r;  // [dirs, 4 * hidden, hidden]
  const T* b;  // [dirs, 8 * hidden] or nullptr
  const T* p;  // [dirs, 3 * hidden] or nullptr

  // scratch: the 4 * hidden gate pre-activations (i, o, f, c), all read from Ht-1.
  void step(int64_t d, const T* x, T* h, T* c, T* gates) const {
    const int64_t hid = cfg.hidden, in = cfg.input_size;
    const T* wd = w + d * 4 * hid * in;
    const T* rd = r + d * 4 * hid * hid;
    const T* bd = b ? b + d * 8 * hid : nullptr;
    for (int64_t row = 0; row < 4 * hid; ++row) {
      const T v = dot(wd + row * in, x, in) + dot(rd + row * hid, h, hid);
      gates[row] = bd ? v + bd[row] + bd[4 * hid + row] : v;
    }
    // The gates as arrays, so that their activations run vectorized: i and f read
    // Ct-1 through the peepholes, o reads Ct.
    T *gi = gates, *go = gates + hid, *gf = gates + 2 * hid, *gc = gates + 3 * hid;
    const T* pd = p ? p + d * 3 * hid : nullptr;
    if (pd)
      for (int64_t j = 0; j < hid; ++j) {
        gi[j] += pd[j] * c[j];
        gf[j] += pd[2 * hid + j] * c[j];
      }
    const RnnActivation& f = cfg.activation(d, 0);
    activate(f, cfg, true, gi, hid);
    if (input_forget)
      for (int64_t j = 0; j < hid; ++j) gf[j] = T(1) - gi[j];
    else
      activate(f, cfg, true, gf, hid);
    activate(cfg.activation(d, 1), cfg, true, gc, hid);
    for (int64_t j = 0; j < hid; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
    if (pd)
      for (int64_t j = 0; j < hid; ++j) go[j] += pd[hid + j] * c[j];
    activate(f, cfg, true, go, hid);
    std::copy_n(c, hid, h);  // Ht-1 is spent (the gates read it): Ht = o (.) h(Ct)
    activate(cfg.activation(d, 2), cfg, false, h, hid);
    for (int64_t j = 0; j < hid; ++j) h[j] *= go[j];
  }
};

template <class T>
class LstmKernel final : public Kernel {
 public:
  LstmKernel(RecurrentConfig cfg, bool input_forget, std::string label)
      : cfg_(std::move(cfg)), input_forget_(input_forget), label_(std::move(label)) {}

  void run(const RunArgs& args) const override {
    const SequenceIo<T> io = sequence_io<T>(args, true);
    check_sequence_lens(cfg_, io.lens, label_);
    const LstmCell<T> cell{cfg_, input_forget_, args.inputs[1]->data_as<T>(),
                           args.inputs[2]->data_as<T>(), optional_input<T>(args, 3),
                           optional_input<T>(args, 7)};
    run_sequences(cfg_, io, static_cast<T*>(args.workspace), 4 * cfg_.hidden,
                  4 * cfg_.hidden * (cfg_.input_size + cfg_.hidden), cell, args.stop);
  }

 private:
  RecurrentConfig cfg_;
  bool input_forget_;
  std::string label_;
};

std::unique_ptr<Kernel> make_lstm(KernelInit& init, std::string* why_not) {
  if (!recurrent_dtype_supported(init, why_not)) return nullptr;
  RecurrentConfig cfg = read_recurrent_config(
      init, {RnnActivationKind::Sigmoid, RnnActivationKind::Tanh, RnnActivationKind::Tanh});
  const bool input_forget = init.node.attributes.get_int_or("input_forget", 0) != 0;
  const int64_t workspace = sequence_workspace(cfg, 4 * cfg.hidden);
  init.flops = recurrent_flops(cfg, 4 * cfg.hidden);
  return make_recurrent_kernel<LstmKernel>(init, workspace, std::move(cfg), input_forget,
                                           init.node.label());
}

}  // namespace

EMBER_KERNEL("LSTM", "", 1, kMaxOpset, DeviceKind::Cpu, make_lstm);

}  // namespace ember
