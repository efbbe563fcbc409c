// CPU kernel for the standard-domain Attention (opsets 23-25): softmax(Q K^T * scale +
// bias) V per head, with grouped-query heads, a KV cache (past_key/past_value ->
// present_key/present_value), causal and sliding-window masks aligned to the end of the
// cache, a bool or additive attn_mask, per-batch valid KV lengths (nonpad_kv_seqlen),
// softcap, and the optional qk_matmul_output.
//
// Correct first: one query row at a time, in float, with the row's scores in the
// workspace. A row whose keys are all masked yields zeros (not NaN), as ONNX specifies.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>

namespace ember {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct AttentionParams {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, seq = 0, kv_seq = 0, past = 0;
  int64_t head = 0, v_head = 0;
  bool packed = false;  // 3-D inputs: [B, S, heads * head]
  float scale = 1, softcap = 0;
  bool causal = false;
  int64_t left_window = -1, right_window = -1;
  int64_t qk_mode = 0;
  // attn_mask right-aligned to [B, Hq, S, total]: strides (0 where broadcast) and
  // its last dim, past which keys are masked.
  bool has_mask = false;
  DType mask_dtype = DType::Undefined;
  int64_t mask_strides[3] = {0, 0, 0}, mask_cols = 0;
  int64_t total() const { return past + kv_seq; }
};

float mask_value(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Bool: return static_cast<const bool*>(data)[i] ? 0.f : kNegInf;
    case DType::Float32: return static_cast<const float*>(data)[i];
    case DType::Float64: return static_cast<float>(static_cast<const double*>(data)[i]);
    case DType::Float16: return static_cast<float>(static_cast<const Float16*>(data)[i]);
    case DType::BFloat16: return static_cast<float>(static_cast<const BFloat16*>(data)[i]);
    default: return 0.f;
  }
}

template <class T>
class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(AttentionParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const Inputs in = inputs(args);
    copy_present(in, args);
    T* y = args.outputs[0]->data_as<T>();
    T* qk_out = output(args, 3);
    float* scores_all = static_cast<float*>(args.workspace);
    const int64_t rows = p_.batch * p_.q_heads * p_.seq;
    parallel_for(rows, p_.total() * (p_.head + p_.v_head) * 2, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % p_.seq, h = r / p_.seq % p_.q_heads, b = r / p_.seq / p_.q_heads;
        row(in, b, h, i, scores_all + r * p_.total(), y, qk_out);
      }
    });
  }

 private:
  struct Inputs {
    const T *q, *k, *v, *past_k, *past_v;
    const void* mask;
    const int64_t* nonpad;
  };

  static T* output(const RunArgs& args, size_t i) {
    return args.outputs.size() > i && args.outputs[i] ? args.outputs[i]->data_as<T>() : nullptr;
  }
  static const void* input(const RunArgs& args, size_t i) {
    return args.inputs.size() > i && args.inputs[i] ? args.inputs[i]->data() : nullptr;
  }

  Inputs inputs(const RunArgs& args) const {
    return {static_cast<const T*>(input(args, 0)), static_cast<const T*>(input(args, 1)),
            static_cast<const T*>(input(args, 2)), static_cast<const T*>(input(args, 4)),
            static_cast<const T*>(input(args, 5)), input(args, 3),
            static_cast<const int64_t*>(input(args, 6))};
  }

  // Element offset of (b, head h, position s, feature d) in Q/K/V's own layout.
  int64_t offset(int64_t b, int64_t h, int64_t heads, int64_t s, int64_t len, int64_t d,
                 int64_t width) const {
    return p_.packed ? ((b * len + s) * heads + h) * width + d : ((b * heads + h) * len + s) * width + d;
  }

  // Key/value j of the concatenated cache [past, new].
  float cached(const T* past, const T* fresh, int64_t b, int64_t h, int64_t j, int64_t d,
               int64_t width) const {
    if (j < p_.past) return float(past[((b * p_.kv_heads + h) * p_.past + j) * width + d]);
    return float(fresh[offset(b, h, p_.kv_heads, j - p_.past, p_.kv_seq, d, width)]);
  }

  void copy_present(const Inputs& in, const RunArgs& args) const {
    T* present[2] = {output(args, 1), output(args, 2)};
    const T* past[2] = {in.past_k, in.past_v};
    const T* fresh[2] = {in.k, in.v};
    const int64_t width[2] = {p_.head, p_.v_head};
    for (int t = 0; t < 2; ++t) {
      if (!present[t]) continue;
      for (int64_t b = 0; b < p_.batch; ++b)
        for (int64_t h = 0; h < p_.kv_heads; ++h)
          for (int64_t j = 0; j < p_.total(); ++j)
            for (int64_t d = 0; d < width[t]; ++d)
              present[t][((b * p_.kv_heads + h) * p_.total() + j) * width[t] + d] =
                  T(cached(past[t], fresh[t], b, h, j, d, width[t]));
    }
  }

  // The additive bias of key j for query i: mask + causal + window + padding.
  float bias(const Inputs& in, int64_t b, int64_t h, int64_t i, int64_t j) const {
    float bias = 0;
    if (p_.has_mask) {
      if (j >= p_.mask_cols) return kNegInf;
      const int64_t m = b * p_.mask_strides[0] + h * p_.mask_strides[1] + i * p_.mask_strides[2] + j;
      bias += mask_value(in.mask, p_.mask_dtype, m);
    }
    // The query block sits at the end of the keys: after the cache, or ending at the
    // batch's valid length for an external cache.
    const int64_t offset = p_.past > 0 || !in.nonpad ? p_.past : in.nonpad[b] - p_.seq;
    const int64_t diff = i + offset - j;
    if (p_.causal && diff < 0) return kNegInf;
    if (p_.left_window >= 0 && diff > p_.left_window) return kNegInf;
    if (p_.right_window >= 0 && -diff > p_.right_window) return kNegInf;
    if (in.nonpad && j >= in.nonpad[b]) return kNegInf;
    return bias;
  }

  void row(const Inputs& in, int64_t b, int64_t h, int64_t i, float* s, T* y, T* qk_out) const {
    const int64_t kh = h / (p_.q_heads / p_.kv_heads), total = p_.total();
    T* qk_row = qk_out ? qk_out + ((b * p_.q_heads + h) * p_.seq + i) * total : nullptr;
    float max_bias = kNegInf, max_score = kNegInf;
    for (int64_t j = 0; j < total; ++j) {
      float dot = 0;
      for (int64_t d = 0; d < p_.head; ++d)
        dot += float(in.q[offset(b, h, p_.q_heads, i, p_.seq, d, p_.head)]) *
               cached(in.past_k, in.k, b, kh, j, d, p_.head);
      dot *= p_.scale;
      if (p_.softcap > 0) dot = p_.softcap * std::tanh(dot / p_.softcap);
      const float bj = bias(in, b, h, i, j);
      if (qk_row && p_.qk_mode <= 1) qk_row[j] = T(dot);
      if (qk_row && p_.qk_mode == 2) qk_row[j] = T(dot + bj);
      s[j] = dot + bj;
      max_bias = std::max(max_bias, bj);
      max_score = std::max(max_score, s[j]);
    }
    const bool all_masked = max_bias == kNegInf;
    float sum = 0;
    for (int64_t j = 0; j < total; ++j) {
      s[j] = all_masked || s[j] == kNegInf ? 0.f : std::exp(s[j] - max_score);
      sum += s[j];
    }
    for (int64_t j = 0; j < total; ++j) {
      if (sum > 0) s[j] /= sum;
      if (qk_row && p_.qk_mode == 3) qk_row[j] = T(s[j]);
    }
    for (int64_t d = 0; d < p_.v_head; ++d) {
      float acc = 0;
      for (int64_t j = 0; j < total; ++j)
        if (s[j] != 0) acc += s[j] * cached(in.past_v, in.v, b, kh, j, d, p_.v_head);
      const int64_t out = p_.packed ? ((b * p_.seq + i) * p_.q_heads + h) * p_.v_head + d
                                    : ((b * p_.q_heads + h) * p_.seq + i) * p_.v_head + d;
      y[out] = T(acc);
    }
  }

  AttentionParams p_;
};

void set_mask(AttentionParams& p, const TensorType& mask, const KernelInit& init) {
  const Shape& m = mask.shape;
  if (m.empty() || m.size() > 4) init.fail("attn_mask must have rank 1 to 4, got " + shape_to_string(m));
  const int64_t target[3] = {p.batch, p.q_heads, p.seq};
  p.has_mask = true;
  p.mask_dtype = mask.dtype;
  p.mask_cols = m.back();
  // Strides of the leading (b, h, i) dims, right-aligned; size-1 dims broadcast.
  int64_t stride = m.back();
  for (int k = 2; k >= 0; --k) {
    const int64_t md = static_cast<int64_t>(m.size()) - 1 - (3 - k);
    const int64_t size = md >= 0 ? m[md] : 1;
    if (size != 1 && size != target[k])
      init.fail("attn_mask " + shape_to_string(m) + " does not broadcast to the scores");
    p.mask_strides[k] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

std::unique_ptr<Kernel> make_attention(KernelInit& init, std::string* why_not) {
  const auto& a = init.node.attributes;
  const Shape& q = init.inputs[0].shape;
  const Shape& k = init.inputs[1].shape;
  const Shape& v = init.inputs[2].shape;
  AttentionParams p;
  p.packed = q.size() == 3;
  p.batch = q[0];
  if (p.packed) {
    p.q_heads = a.get_int("q_num_heads"), p.kv_heads = a.get_int("kv_num_heads");
    p.seq = q[1], p.kv_seq = k[1];
    p.head = q[2] / p.q_heads, p.v_head = v[2] / p.kv_heads;
  } else {
    p.q_heads = q[1], p.kv_heads = k[1], p.seq = q[2], p.kv_seq = k[2], p.head = q[3], p.v_head = v[3];
  }
  const auto has = [&](size_t i) { return init.inputs.size() > i && init.inputs[i].present(); };
  if (has(4) != has(5)) init.fail("past_key and past_value must be given together");
  if (has(4)) p.past = init.inputs[4].shape[2];
  p.scale = a.has("scale") ? a.get_float("scale") : 1.f / std::sqrt(float(p.head));
  p.softcap = a.get_float_or("softcap", 0);
  p.causal = a.get_int_or("is_causal", 0) != 0;
  p.left_window = a.get_int_or("left_window_size", -1);
  p.right_window = a.get_int_or("right_window_size", -1);
  p.qk_mode = a.get_int_or("qk_matmul_output_mode", 0);
  if (p.qk_mode < 0 || p.qk_mode > 3) init.fail("qk_matmul_output_mode must be 0..3");
  if (has(3)) set_mask(p, init.inputs[3], init);
  if (has(6) && init.inputs[6].dtype != DType::Int64) {
    *why_not = "nonpad_kv_seqlen must be int64";
    return nullptr;
  }
  init.workspace_bytes = sizeof(float) * p.batch * p.q_heads * p.seq * p.total();
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<AttentionKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("Attention", "", 23, kMaxOpset, DeviceKind::Cpu, make_attention);

}  // namespace ember
