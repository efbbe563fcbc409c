// com.ember ScaledDotProductAttention on CUDA (the node fuse_attention makes; its
// schema is graph/schemas/attention_fused.cc): one fused kernel, no score matrix.
// Takes rank-4 Q [B|1, H|1, Sq, D], K (through k_perm to Kt [B|1, H|1, D, Sk]),
// V [B|1, H|1, Sk, Dv], a mask broadcastable to [B, H, Sq, Sk] and a constant
// operand_scale (folded into the scale), in float32, float16 or bfloat16, with D, Dv <=
// 128; float16 and bfloat16 run on the tensor cores where the GPU has them (compute
// capability 8.0+). What it declines the planner runs as the decomposition.
#include "ops/cuda/attention_impl.h"
#include "ops/cuda/cuda_common.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>

#include <array>
#include <climits>

namespace ember {

namespace {

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const cuda::AttentionArgs& args, bool tensor_cores) : args_(args), tensor_cores_(tensor_cores) {}

  void run(const RunArgs& args) const override {
    cuda::AttentionArgs a = args_;
    a.q = args.inputs[0]->data();
    a.k = args.inputs[1]->data();
    a.v = args.inputs[2]->data();
    a.mask = a.mask_kind == cuda::AttentionMask::None ? nullptr : args.inputs[3]->data();
    a.y = args.outputs[0]->data();
    if (a.sq == 0 || a.dv == 0 || a.batch * a.heads == 0) return;  // an empty output
    if (tensor_cores_) cuda::launch_attention_mma(a, cuda::stream_context(args).stream);
    else cuda::launch_attention(a, cuda::stream_context(args).stream);
    cuda::check_launch("ScaledDotProductAttention");
  }

 private:
  cuda::AttentionArgs args_;
  bool tensor_cores_;  // float16/bfloat16 on compute capability 8.0+: attention_mma_impl.cu
};

using Strides = std::array<int64_t, 4>;

// Row-major element strides of a rank-4 shape, 0 on dims of size 1 (broadcast).
Strides broadcast_strides(const Shape& s) {
  Strides st{};
  int64_t step = 1;
  for (int i = 3; i >= 0; --i) {
    st[i] = s[i] == 1 ? 0 : step;
    step *= s[i];
  }
  return st;
}

// A rank-4 operand as the kernel indexes it: its dims and the element strides that
// reach them in memory.
struct Operand {
  Shape shape;
  Strides strides{};
};

// Transpose(x, perm) read in place: dim i is x's dim perm[i], with x's stride.
Operand permuted(const Shape& x, const Strides& x_strides, const Attributes& at, const char* attribute) {
  std::vector<int64_t> perm = at.get_ints_or(attribute, {0, 1, 2, 3});
  for (int64_t& p : perm) p = p < 0 ? p + 4 : p;  // the schema has checked it is a permutation
  Operand o;
  o.shape.resize(4);
  for (int i = 0; i < 4; ++i) {
    o.shape[i] = x[perm[i]];
    o.strides[i] = x_strides[perm[i]];
  }
  return o;
}

// The untransposed Y whose Transpose(Y, perm) is the output `stored`: Y's dim perm[j]
// is stored dim j.
Operand unpermuted(const Shape& stored, const Attributes& at, const char* attribute) {
  std::vector<int64_t> perm = at.get_ints_or(attribute, {0, 1, 2, 3});
  for (int64_t& p : perm) p = p < 0 ? p + 4 : p;
  Strides stored_strides{};
  int64_t step = 1;
  for (int i = 3; i >= 0; --i) {
    stored_strides[i] = step;
    step *= stored[i];
  }
  Operand o;
  o.shape.resize(4);
  for (int j = 0; j < 4; ++j) {
    o.shape[perm[j]] = stored[j];
    o.strides[perm[j]] = stored_strides[j];
  }
  return o;
}

void copy(const Strides& from, int64_t (&to)[4]) {
  for (int i = 0; i < 4; ++i) to[i] = from[i];
}

std::unique_ptr<Kernel> make_attention(KernelInit& init, std::string* why_not) {
  const auto& at = init.node.attributes;
  const DType dtype = init.inputs[0].dtype;
  cuda::AttentionArgs a;
  if (!cuda::float_storage(dtype, &a.storage)) {
    *why_not = std::string("ScaledDotProductAttention on CUDA takes float32, float16 and bfloat16, Q is ") +
               dtype_name(dtype);
    return nullptr;
  }
  a.scale = at.get_float_or("scale", 1.0f);
  if (init.inputs.size() > 4 && init.inputs[4].present()) {
    // Q and K each times operand_scale: the scores times its square. The planner has
    // folded it from the shapes by now, or it is not a constant the kernel can take.
    const Tensor* s = init.values[4];
    float factor = 0.f;
    if (!s || s->numel() != 1 || !dispatch(FloatTypes{}, s->dtype(), [&]<class T>(TypeTag<T>) {
          factor = static_cast<float>(*s->data_as<T>());
        })) {
      *why_not = "operand_scale must be a one-element float constant when the plan is made";
      return nullptr;
    }
    a.scale *= factor * factor;
  }
  a.mask_fill = at.get_float_or("mask_fill", 0.0f);
  const std::string kind = at.get_string_or("mask_kind", "none");
  a.mask_kind = kind == "additive" ? cuda::AttentionMask::Additive
                : kind == "boolean" ? cuda::AttentionMask::Boolean
                                    : cuda::AttentionMask::None;  // the schema rejects anything else

  // Each operand as the product reads it (Q, Kt, V: [B|1, H|1, rows, features]) with the
  // strides of the tensor given, through its perm attribute; Y as the product writes it,
  // with the strides of the output, through y_perm.
  const Shape& y_stored = init.outputs[0].shape;
  if (init.inputs[0].shape.size() != 4 || init.inputs[1].shape.size() != 4 || init.inputs[2].shape.size() != 4 ||
      y_stored.size() != 4) {
    *why_not = "the CUDA kernel takes rank-4 Q, K, V and output ([batch, heads, sequence, head dim]), got Q " +
               shape_to_string(init.inputs[0].shape) + ", K " + shape_to_string(init.inputs[1].shape) + ", V " +
               shape_to_string(init.inputs[2].shape) + ", output " + shape_to_string(y_stored);
    return nullptr;
  }
  const Operand q = permuted(init.inputs[0].shape, broadcast_strides(init.inputs[0].shape), at, "q_perm");
  const Operand kt = permuted(init.inputs[1].shape, broadcast_strides(init.inputs[1].shape), at, "k_perm");
  const Operand v = permuted(init.inputs[2].shape, broadcast_strides(init.inputs[2].shape), at, "v_perm");
  const Operand y = unpermuted(y_stored, at, "y_perm");
  a.batch = y.shape[0];
  a.heads = y.shape[1];
  a.sq = q.shape[2];
  a.d = q.shape[3];
  a.sk = kt.shape[3];
  a.dv = v.shape[3];
  if (a.d > cuda::kAttentionMaxHeadDim || a.dv > cuda::kAttentionMaxHeadDim) {
    *why_not = "head dim " + std::to_string(a.d > a.dv ? a.d : a.dv) + " exceeds " +
               std::to_string(cuda::kAttentionMaxHeadDim) + ", the most the CUDA kernel holds in registers";
    return nullptr;
  }
  // Every stride is 0 on a dim of size 1: on batch and heads that is the broadcast
  // (the schema has checked each such dim is 1 or the output's); on the other dims
  // only index 0 is read.
  copy(q.strides, a.q_stride);
  a.k_stride[0] = kt.strides[0];
  a.k_stride[1] = kt.strides[1];
  a.k_stride[2] = kt.strides[3];  // key j
  a.k_stride[3] = kt.strides[2];  // feature
  copy(v.strides, a.v_stride);
  copy(y.strides, a.y_stride);

  if (a.mask_kind != cuda::AttentionMask::None) {
    const Shape& m = init.inputs[3].shape;
    if (m.size() > 4) {
      *why_not = "the mask has rank " + std::to_string(m.size()) + ", more than the scores' 4";
      return nullptr;
    }
    Shape m4(4 - m.size(), 1);
    m4.insert(m4.end(), m.begin(), m.end());
    // A mask may broadcast the scores over batch and heads; one that widens the
    // query or key dims (scores of size 1 there) changes what the softmax normalizes.
    if ((m4[2] != 1 && m4[2] != a.sq) || (m4[3] != 1 && m4[3] != a.sk)) {
      *why_not = "the mask " + shape_to_string(m) + " widens the scores' query or key dims (Sq = " +
                 std::to_string(a.sq) + ", Sk = " + std::to_string(a.sk) + ")";
      return nullptr;
    }
    copy(broadcast_strides(m4), a.mask_stride);
  }
  if (kt.shape[2] != a.d || v.shape[2] != a.sk || y.shape[2] != a.sq || y.shape[3] != a.dv) {  // the schema's checks imply it
    *why_not = "internal: Q " + shape_to_string(q.shape) + ", Kt " + shape_to_string(kt.shape) + ", V " +
               shape_to_string(v.shape) + " and output " + shape_to_string(y.shape) + " do not fit";
    return nullptr;
  }
  const bool tensor_cores =
      a.storage != cuda::FloatStorage::Float32 && cuda::stream_context(init).compute_major >= 8;
  if ((tensor_cores ? cuda::attention_mma_blocks(a) : cuda::attention_blocks(a)) > INT_MAX) {
    *why_not = "batch * heads * query tiles exceeds a CUDA grid";
    return nullptr;
  }
  return std::make_unique<AttentionKernel>(a, tensor_cores);
}

}  // namespace

EMBER_KERNEL("ScaledDotProductAttention", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_attention);

}  // namespace ember
