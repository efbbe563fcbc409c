// CPU kernels for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// Both pick, per sample n and position d, the (log-)probability of the target class:
// loss[n, d] = -w[n, d] * logp[n, target[n, d], d], where w is the class weight (1
// without weights) and 0 for ignore_index. "mean" divides by the sum of w, as ONNX
// defines it (so ignored positions do not count). Sums run in double.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <optional>

namespace ember {

namespace {

enum class Reduction { None, Sum, Mean };

struct LossParams {
  int64_t n = 0, c = 0, d = 1;  // input viewed as [N, C, D]
  Reduction reduction = Reduction::Mean;
  std::optional<int64_t> ignore_index;
  bool softmax = false;  // SoftmaxCrossEntropyLoss: log_softmax over C first
};

template <class T, class I>
class LossKernel final : public Kernel {
 public:
  explicit LossKernel(LossParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const I* target = args.inputs[1]->data_as<I>();
    const T* weight = args.inputs.size() > 2 && args.inputs[2] ? args.inputs[2]->data_as<T>() : nullptr;
    T* loss = args.outputs[0]->data_as<T>();
    T* log_prob = args.outputs.size() > 1 && args.outputs[1] ? args.outputs[1]->data_as<T>() : nullptr;
    double total = 0, weight_sum = 0;
    for (int64_t n = 0; n < p_.n; ++n) {
      for (int64_t d = 0; d < p_.d; ++d) {
        const T* col = x + n * p_.c * p_.d + d;  // class k at col[k * D]
        const double log_sum = p_.softmax ? log_sum_exp(col) : 0;
        if (log_prob)
          for (int64_t k = 0; k < p_.c; ++k)
            log_prob[(n * p_.c + k) * p_.d + d] = T(convert<double>(col[k * p_.d]) - log_sum);
        const int64_t t = static_cast<int64_t>(target[n * p_.d + d]);
        double l = 0, w = 0;
        // Ignored (and out-of-range) targets contribute neither loss nor weight.
        if (!(p_.ignore_index && t == *p_.ignore_index) && t >= 0 && t < p_.c) {
          w = weight ? convert<double>(weight[t]) : 1.0;
          l = -w * (convert<double>(col[t * p_.d]) - log_sum);
        }
        if (p_.reduction == Reduction::None) loss[n * p_.d + d] = T(l);
        total += l;
        weight_sum += w;
      }
    }
    if (p_.reduction == Reduction::Sum) loss[0] = T(total);
    if (p_.reduction == Reduction::Mean) loss[0] = T(total / weight_sum);
  }

 private:
  double log_sum_exp(const T* col) const {
    double m = -INFINITY;
    for (int64_t k = 0; k < p_.c; ++k) m = std::max(m, convert<double>(col[k * p_.d]));
    double s = 0;
    for (int64_t k = 0; k < p_.c; ++k) s += std::exp(convert<double>(col[k * p_.d]) - m);
    return m + std::log(s);
  }

  LossParams p_;
};

std::unique_ptr<Kernel> make_loss(KernelInit& init, std::string* why_not, bool softmax) {
  const Shape& x = init.inputs[0].shape;
  LossParams p;
  p.softmax = softmax;
  p.n = x[0];
  p.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) p.d *= x[i];
  const std::string reduction = init.node.attributes.get_string_or("reduction", "mean");
  p.reduction = reduction == "none" ? Reduction::None
                : reduction == "sum" ? Reduction::Sum
                                     : Reduction::Mean;
  if (init.node.attributes.has("ignore_index"))
    p.ignore_index = init.node.attributes.get_int("ignore_index");
  const DType dtype = init.inputs[0].dtype, target = init.inputs[1].dtype;
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].dtype != dtype)
    init.fail("weight must have the dtype of the input");
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (target == DType::Int64) kernel = std::make_unique<LossKernel<T, int64_t>>(p);
    if (target == DType::Int32) kernel = std::make_unique<LossKernel<T, int32_t>>(p);
  });
  if (!kernel)
    *why_not = std::string("input ") + dtype_name(dtype) + " with target " + dtype_name(target) +
               " is not supported";
  return kernel;
}

std::unique_ptr<Kernel> make_nll_loss(KernelInit& init, std::string* why_not) {
  return make_loss(init, why_not, false);
}

std::unique_ptr<Kernel> make_softmax_cross_entropy(KernelInit& init, std::string* why_not) {
  return make_loss(init, why_not, true);
}

}  // namespace

EMBER_KERNEL("NegativeLogLikelihoodLoss", "", 12, kMaxOpset, DeviceKind::Cpu, make_nll_loss);
EMBER_KERNEL("SoftmaxCrossEntropyLoss", "", 12, kMaxOpset, DeviceKind::Cpu,
             make_softmax_cross_entropy);

}  // namespace ember
