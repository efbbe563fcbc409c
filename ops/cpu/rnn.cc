// CPU kernel for RNN (opsets 1-22), the simple recurrence
//   Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
// for every direction, layout, sequence_lens, clip and activation the spec names.
#include "ops/cpu/rnn_common.h"
#include "ops/registry.h"

namespace ember {

namespace {

template <class T>
struct RnnCell {
  const RecurrentConfig& cfg;
  const T* w;  // [dirs, hidden, input]
  const T* r;  // [dirs, hidden, hidden]
  const T* b;  // [dirs, 2 * hidden] or nullptr

  // scratch: hidden elements for the new state, since every output reads all of h.
  void step(int64_t d, const T* x, T* h, T*, T* scratch) const {
    const int64_t hid = cfg.hidden, in = cfg.input_size;
    const T* wd = w + d * hid * in;
    const T* rd = r + d * hid * hid;
    const T* bd = b ? b + d * 2 * hid : nullptr;
    const RnnActivation& f = cfg.activation(d, 0);
    for (int64_t j = 0; j < hid; ++j) {
      T g = dot(wd + j * in, x, in) + dot(rd + j * hid, h, hid);
      if (bd) g += bd[j] + bd[hid + j];
      scratch[j] = g;
    }
    activate(f, cfg, true, scratch, hid);
    std::copy_n(scratch, hid, h);
  }
};

template <class T>
class RnnKernel final : public Kernel {
 public:
  RnnKernel(RecurrentConfig cfg, std::string label) : cfg_(std::move(cfg)), label_(std::move(label)) {}

  void run(const RunArgs& args) const override {
    const SequenceIo<T> io = sequence_io<T>(args, false);
    check_sequence_lens(cfg_, io.lens, label_);
    const RnnCell<T> cell{cfg_, args.inputs[1]->data_as<T>(), args.inputs[2]->data_as<T>(),
                          optional_input<T>(args, 3)};
    run_sequences(cfg_, io, static_cast<T*>(args.workspace), cfg_.hidden,
                  cfg_.hidden * (cfg_.input_size + cfg_.hidden), cell, args.stop);
  }

 private:
  RecurrentConfig cfg_;
  std::string label_;
};

std::unique_ptr<Kernel> make_rnn(KernelInit& init, std::string* why_not) {
  if (!recurrent_dtype_supported(init, why_not)) return nullptr;
  RecurrentConfig cfg = read_recurrent_config(init, {RnnActivationKind::Tanh});
  const int64_t workspace = sequence_workspace(cfg, cfg.hidden);
  init.flops = recurrent_flops(cfg, cfg.hidden);
  return make_recurrent_kernel<RnnKernel>(init, workspace, std::move(cfg), init.node.label());
}

}  // namespace

EMBER_KERNEL("RNN", "", 1, kMaxOpset, DeviceKind::Cpu, make_rnn);

}  // namespace ember
