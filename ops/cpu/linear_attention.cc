// CPU kernel for LinearAttention (opset 27): the token-by-token recurrence of the
// spec (linear, gated, delta, gated_delta) in float, one task per (batch, KV head);
// each KV head's state serves q_num_heads / kv_num_heads consecutive query heads.
#include <cmath>

#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

namespace ember {

namespace {

struct LinearAttentionParams {
  int64_t b = 0, t = 0, hq = 0, hkv = 0, dk = 0, dv = 0;
  int64_t decay_last = 0, beta_last = 0;  // 0 when the input is absent
  bool gating = false, delta = false;
  float scale = 1;
};

template <class T, class S>
class LinearAttentionKernel final : public Kernel {
 public:
  explicit LinearAttentionKernel(LinearAttentionParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    parallel_for(p_.b * p_.hkv, p_.t * p_.dk * p_.dv * 4, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) run_head(args, task);
    });
  }

 private:
  const Tensor* input(const RunArgs& args, size_t i) const {
    return i < args.inputs.size() ? args.inputs[i] : nullptr;
  }

  void run_head(const RunArgs& args, int64_t task) const {
    const int64_t bi = task / p_.hkv, h = task % p_.hkv, dk = p_.dk, dv = p_.dv;
    const int64_t group = p_.hq / p_.hkv;
    float* ws = static_cast<float*>(args.workspace) + task * (dk * dv + dv);
    float* state = ws;                // (dk, dv)
    float* retrieved = ws + dk * dv;  // (dv)
    const Tensor* past = input(args, 3);
    for (int64_t i = 0; i < dk * dv; ++i)
      state[i] = past ? convert<float>(past->data_as<S>()[task * dk * dv + i]) : 0.0f;
    const T* q = args.inputs[0]->data_as<T>();
    const T* k = args.inputs[1]->data_as<T>();
    const T* v = args.inputs[2]->data_as<T>();
    const Tensor* decay_t = p_.gating ? input(args, 4) : nullptr;
    const Tensor* beta_t = p_.delta ? input(args, 5) : nullptr;
    const T* decay = decay_t ? decay_t->data_as<T>() : nullptr;
    const T* beta = beta_t ? beta_t->data_as<T>() : nullptr;
    T* out = args.outputs[0]->data_as<T>();
    for (int64_t t = 0; t < p_.t; ++t) {
      const int64_t row = bi * p_.t + t;
      const T* kt = k + row * p_.hkv * dk + h * dk;
      const T* vt = v + row * p_.hkv * dv + h * dv;
      if (decay) {
        const T* g = decay + row * p_.decay_last + (p_.decay_last == p_.hkv ? h : h * dk);
        for (int64_t d = 0; d < dk; ++d) {
          const float f = std::exp(convert<float>(g[p_.decay_last == p_.hkv ? 0 : d]));
          for (int64_t m = 0; m < dv; ++m) state[d * dv + m] *= f;
        }
      }
      for (int64_t m = 0; m < dv; ++m) retrieved[m] = convert<float>(vt[m]);
      if (beta) {
        const float bt = convert<float>(beta[row * p_.beta_last + (p_.beta_last == 1 ? 0 : h)]);
        for (int64_t m = 0; m < dv; ++m) {
          float s = 0;
          for (int64_t d = 0; d < dk; ++d) s += state[d * dv + m] * convert<float>(kt[d]);
          retrieved[m] = bt * (retrieved[m] - s);
        }
      }
      for (int64_t d = 0; d < dk; ++d) {
        const float kd = convert<float>(kt[d]);
        for (int64_t m = 0; m < dv; ++m) state[d * dv + m] += kd * retrieved[m];
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t qh = h * group + g;
        const T* qt = q + row * p_.hq * dk + qh * dk;
        T* o = out + row * p_.hq * dv + qh * dv;
        for (int64_t m = 0; m < dv; ++m) {
          float s = 0;
          for (int64_t d = 0; d < dk; ++d) s += convert<float>(qt[d]) * state[d * dv + m];
          o[m] = convert<T>(p_.scale * s);
        }
      }
    }
    if (args.outputs.size() < 2 || !args.outputs[1]) return;
    S* present = args.outputs[1]->data_as<S>() + task * dk * dv;
    for (int64_t i = 0; i < dk * dv; ++i) present[i] = convert<S>(state[i]);
  }

  LinearAttentionParams p_;
};

void parse_optional(KernelInit& init, LinearAttentionParams& p, const std::string& rule) {
  p.gating = rule == "gated" || rule == "gated_delta";
  p.delta = rule == "delta" || rule == "gated_delta";
  const bool has_decay = init.inputs.size() > 4 && init.inputs[4].present();
  const bool has_beta = init.inputs.size() > 5 && init.inputs[5].present();
  if (p.gating != has_decay)
    init.fail("update_rule '" + rule + "' " + (p.gating ? "requires" : "forbids") + " decay");
  if (p.delta != has_beta)
    init.fail("update_rule '" + rule + "' " + (p.delta ? "requires" : "forbids") + " beta");
  if (has_decay) {
    const Shape& s = init.inputs[4].shape;
    if (s.size() != 3 || s[0] != p.b || s[1] != p.t || (s[2] != p.hkv && s[2] != p.hkv * p.dk))
      init.fail("decay must be (B, T, kv_num_heads) or (B, T, kv_num_heads*d_k), got " +
                shape_to_string(s));
    p.decay_last = s[2];
  }
  if (has_beta) {
    const Shape& s = init.inputs[5].shape;
    if (s.size() != 3 || s[0] != p.b || s[1] != p.t || (s[2] != p.hkv && s[2] != 1))
      init.fail("beta must be (B, T, kv_num_heads) or (B, T, 1), got " + shape_to_string(s));
    p.beta_last = s[2];
  }
}

std::unique_ptr<Kernel> make_linear_attention(KernelInit& init, std::string* why_not) {
  const auto& a = init.node.attributes;
  const std::string rule = a.get_string_or("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    init.fail("unsupported update_rule '" + rule + "'");
  LinearAttentionParams p;
  const Shape& q = init.inputs[0].shape;
  p.b = q[0], p.t = q[1], p.hq = a.get_int("q_num_heads"), p.hkv = a.get_int("kv_num_heads");
  p.dk = q[2] / p.hq, p.dv = init.inputs[2].shape[2] / p.hkv;
  parse_optional(init, p, rule);
  const float scale = a.get_float_or("scale", 0.0f);
  p.scale = scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(p.dk)) : scale;
  const DType t_dtype = init.inputs[0].dtype;
  const bool has_past = init.inputs.size() > 3 && init.inputs[3].present();
  const DType s_dtype = has_past ? init.inputs[3].dtype : t_dtype;
  for (size_t i : {1, 2, 4, 5})
    if (i < init.inputs.size() && init.inputs[i].present() && init.inputs[i].dtype != t_dtype)
      init.fail("key, value, decay and beta must share the query's dtype");
  init.workspace_bytes = sizeof(float) * p.b * p.hkv * (p.dk * p.dv + p.dv);
  using Types = TypeList<float, Float16, BFloat16>;
  std::unique_ptr<Kernel> kernel;
  dispatch(Types{}, t_dtype, [&](auto t) {
    dispatch(Types{}, s_dtype, [&](auto s) {
      kernel = std::make_unique<
          LinearAttentionKernel<typename decltype(t)::type, typename decltype(s)::type>>(p);
    });
  });
  if (!kernel)
    *why_not = std::string(dtype_name(t_dtype)) + "/" + dtype_name(s_dtype) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("LinearAttention", "", 27, kMaxOpset, DeviceKind::Cpu, make_linear_attention);

}  // namespace ember
