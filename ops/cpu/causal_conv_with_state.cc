// CPU kernel for CausalConvWithState (opset 27): a depthwise causal 1-D convolution
// over [past_state (zeros if absent), input] along the length axis, plus bias and an
// optional fused SiLU; present_state is the last K-1 positions of that padded input.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

struct CausalConvParams {
  int64_t n = 0, c = 0, length = 0, k = 1;
  bool silu = false;
};

template <class T>
class CausalConvKernel final : public Kernel {
 public:
  explicit CausalConvKernel(CausalConvParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    parallel_for(p_.n * p_.c, p_.length * p_.k, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) run_channel(args, r);
    });
  }

 private:
  // One (batch, channel) row. Padded position j < K-1 reads the past state, the
  // rest reads the input at j - (K-1).
  void run_channel(const RunArgs& args, int64_t row) const {
    const int64_t c = row % p_.c, hist = p_.k - 1, len = p_.length;
    const T* x = args.inputs[0]->data_as<T>() + row * len;
    const T* w = args.inputs[1]->data_as<T>() + c * p_.k;
    const Tensor* bias = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
    const Tensor* past = args.inputs.size() > 3 ? args.inputs[3] : nullptr;
    const T* state = past ? past->data_as<T>() + row * hist : nullptr;
    auto padded = [&](int64_t j) {
      if (j >= hist) return convert<float>(x[j - hist]);
      return state ? convert<float>(state[j]) : 0.0f;
    };
    const float b = bias ? convert<float>(bias->data_as<T>()[c]) : 0.0f;
    T* y = args.outputs[0]->data_as<T>() + row * len;
    for (int64_t t = 0; t < len; ++t) {
      float sum = b;
      for (int64_t j = 0; j < p_.k; ++j) sum += convert<float>(w[j]) * padded(t + j);
      if (p_.silu) sum = convert<float>(convert<T>(sum));  // the conv output is rounded first
      y[t] = convert<T>(p_.silu ? sum / (1.0f + std::exp(-sum)) : sum);
    }
    if (args.outputs.size() < 2 || !args.outputs[1]) return;
    T* present = args.outputs[1]->data_as<T>() + row * hist;
    for (int64_t j = 0; j < hist; ++j) {
      const int64_t src = len + j;  // the padded input has hist + len positions
      present[j] = src >= hist ? x[src - hist] : (state ? state[src] : T(0.0f));
    }
  }

  CausalConvParams p_;
};

std::unique_ptr<Kernel> make_causal_conv(KernelInit& init, std::string* why_not) {
  const std::string activation = init.node.attributes.get_string_or("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    init.fail("activation must be none, silu or swish, got '" + activation + "'");
  const Shape& x = init.inputs[0].shape;
  CausalConvParams p{x[0], x[1], x[2], init.inputs[1].shape[2], activation != "none"};
  const DType dtype = init.inputs[0].dtype;
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != dtype)
      init.fail("all inputs must share the input's dtype");
  std::unique_ptr<Kernel> kernel;
  dispatch(TypeList<float, Float16, BFloat16>{}, dtype, [&](auto tag) {
    kernel = std::make_unique<CausalConvKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("CausalConvWithState", "", 27, kMaxOpset, DeviceKind::Cpu, make_causal_conv);

}  // namespace ember
