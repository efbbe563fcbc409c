// com.ember ScaledDotProductAttention on CUDA (the node fuse_attention makes; its
// schema is graph/schemas/attention_fused.cc): one fused kernel, no score matrix.
// Takes rank-4 Q [B|1, H|1, Sq, D], K (through k_perm to Kt [B|1, H|1, D, Sk]),
// V [B|1, H|1, Sk, Dv], and a mask broadcastable to [B, H, Sq, Sk], in float32 or
// float16, with D, Dv <= 128; float16 runs on the tensor cores where the GPU has them
// (compute capability 8.0+). What it declines the planner runs as the decomposition.
#include "ops/cuda/attention_impl.h"
#include "ops/cuda/cuda_common.h"
#include "ops/registry.h"

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
  bool tensor_cores_;  // float16 on compute capability 8.0+: attention_mma_impl.cu
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

void copy(const Strides& from, int64_t (&to)[4]) {
  for (int i = 0; i < 4; ++i) to[i] = from[i];
}

std::unique_ptr<Kernel> make_attention(KernelInit& init, std::string* why_not) {
  const auto& at = init.node.attributes;
  const DType dtype = init.inputs[0].dtype;
  if (dtype != DType::Float32 && dtype != DType::Float16) {
    *why_not = std::string("ScaledDotProductAttention on CUDA takes float32 and float16, Q is ") + dtype_name(dtype);
    return nullptr;
  }
  cuda::AttentionArgs a;
  a.half = dtype == DType::Float16;
  a.scale = at.get_float_or("scale", 1.0f);
  a.mask_fill = at.get_float_or("mask_fill", 0.0f);
  const std::string kind = at.get_string_or("mask_kind", "none");
  a.mask_kind = kind == "additive" ? cuda::AttentionMask::Additive
                : kind == "boolean" ? cuda::AttentionMask::Boolean
                                    : cuda::AttentionMask::None;  // the schema rejects anything else

  const Shape& q = init.inputs[0].shape;
  const Shape& k = init.inputs[1].shape;
  const Shape& v = init.inputs[2].shape;
  const Shape& y = init.outputs[0].shape;
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || y.size() != 4) {
    *why_not = "the CUDA kernel takes rank-4 Q, K, V and output ([batch, heads, sequence, head dim]), got Q " +
               shape_to_string(q) + ", K " + shape_to_string(k) + ", V " + shape_to_string(v) + ", output " +
               shape_to_string(y);
    return nullptr;
  }
  // Kt = Transpose(K, k_perm): Kt's dim i is K's dim perm[i], with K's stride.
  std::vector<int64_t> perm = at.get_ints_or("k_perm", {0, 1, 2, 3});
  for (int64_t& p : perm) p = p < 0 ? p + 4 : p;  // the schema has checked it is a permutation
  const Strides k_strides = broadcast_strides(k);
  Shape kt(4);
  Strides kt_strides{};
  for (int i = 0; i < 4; ++i) {
    kt[i] = k[perm[i]];
    kt_strides[i] = k_strides[perm[i]];
  }
  a.batch = y[0];
  a.heads = y[1];
  a.sq = q[2];
  a.d = q[3];
  a.sk = kt[3];
  a.dv = v[3];
  if (a.d > cuda::kAttentionMaxHeadDim || a.dv > cuda::kAttentionMaxHeadDim) {
    *why_not = "head dim " + std::to_string(a.d > a.dv ? a.d : a.dv) + " exceeds " +
               std::to_string(cuda::kAttentionMaxHeadDim) + ", the most the CUDA kernel holds in registers";
    return nullptr;
  }
  // Every stride is 0 on a dim of size 1: on batch and heads that is the broadcast
  // (the schema has checked each such dim is 1 or the output's); on the other dims
  // only index 0 is read.
  copy(broadcast_strides(q), a.q_stride);
  a.k_stride[0] = kt_strides[0];
  a.k_stride[1] = kt_strides[1];
  a.k_stride[2] = kt_strides[3];  // key j
  a.k_stride[3] = kt_strides[2];  // feature
  copy(broadcast_strides(v), a.v_stride);

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
  if (kt[2] != a.d || v[2] != a.sk || y[2] != a.sq || y[3] != a.dv) {  // the schema's checks imply it
    *why_not = "internal: Q " + shape_to_string(q) + ", Kt " + shape_to_string(kt) + ", V " + shape_to_string(v) +
               " and output " + shape_to_string(y) + " do not fit";
    return nullptr;
  }
  const bool tensor_cores = a.half && cuda::stream_context(init).compute_major >= 8;
  if ((tensor_cores ? cuda::attention_mma_blocks(a) : cuda::attention_blocks(a)) > INT_MAX) {
    *why_not = "batch * heads * query tiles exceeds a CUDA grid";
    return nullptr;
  }
  return std::make_unique<AttentionKernel>(a, tensor_cores);
}

}  // namespace

EMBER_KERNEL("ScaledDotProductAttention", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_attention);

}  // namespace ember
