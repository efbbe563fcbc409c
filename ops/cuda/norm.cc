// LayerNormalization (and com.ember AddLayerNormalization, the residual Add fused into
// it), RMSNormalization, InstanceNormalization and GroupNormalization on CUDA: float32,
// float16 and bfloat16 storage (X, scale and bias of one dtype), float32 statistics; the
// same opset ranges and arithmetic as the CPU kernels (ops/cpu/layer_norm.cc, rms_norm.cc,
// norm.cc). norm_impl.h has the kernels.
#include "graph/schemas/norm.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/norm_impl.h"
#include "ops/registry.h"

namespace ember {

namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

std::string dtype_reason(DType t) {
  return std::string(dtype_name(t)) + " is not supported on CUDA (float32, float16 and bfloat16 are)";
}

// Inputs 1.. that are present must have X's dtype (the ops' type constraints say so;
// the kernels read them as X's storage type).
bool same_dtypes(const KernelInit& init, size_t count, std::string* why_not) {
  for (size_t i = 1; i < count && i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != init.inputs[0].dtype) {
      *why_not = "input " + std::to_string(i) + " is " + dtype_name(init.inputs[i].dtype) + " while X is " +
                 dtype_name(init.inputs[0].dtype) + " (the CUDA kernel needs one dtype)";
      return false;
    }
  return true;
}

// True when parameter `p` (right-aligned against X) is indexed by the position inside
// the normalized row alone: 1 on every dim before `axis`, X's size on every dim from
// `axis` on (size-1 dims of X aside).
bool indexed_by_column(const Shape& x, const Shape& p, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(x.size()), lead = rank - static_cast<int64_t>(p.size());
  if (lead < 0) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t pd = d < lead ? 1 : p[d - lead];
    if (d < axis ? pd != 1 : pd != x[d] && x[d] != 1) return false;
  }
  return true;
}

class RowNormKernel final : public Kernel {
 public:
  // `params`: the index of the scale input (bias after it); 2 when input 1 is the
  // residual AddLayerNormalization adds to X.
  RowNormKernel(const cuda::RowNormArgs& args, size_t params) : args_(args), params_(params) {}

  void run(const RunArgs& args) const override {
    cuda::RowNormArgs a = args_;
    a.x = args.inputs[0]->data();
    a.skip = params_ == 2 ? args.inputs[1]->data() : nullptr;
    a.scale = args.inputs[params_]->data();
    const size_t b = params_ + 1;
    a.bias = !a.rms && args.inputs.size() > b && args.inputs[b] ? args.inputs[b]->data() : nullptr;
    a.y = args.outputs[0]->data();
    a.mean = stat_output(args, 1);
    a.inv_std = stat_output(args, 2);
    cuda::launch_row_norm(a, cuda::stream_context(args).stream);
    cuda::check_launch(a.rms ? "RMSNormalization" : "LayerNormalization");
  }

 private:
  float* stat_output(const RunArgs& args, size_t i) const {
    if (args_.rms || args.outputs.size() <= i || !args.outputs[i]) return nullptr;
    return args.outputs[i]->data_as<float>();
  }

  cuda::RowNormArgs args_;
  size_t params_;
};

// LayerNormalization (opset 17) and RMSNormalization (opset 23): rows of the dims from
// `axis` on. kSkip: com.ember AddLayerNormalization, LayerNormalization of input 0 +
// input 1 (of one shape; a broadcasting residual is left to the decomposition), its
// scale and bias one input later.
template <bool kRms, bool kSkip = false>
std::unique_ptr<Kernel> make_row_norm(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  if (!is_float(dtype)) {
    *why_not = dtype_reason(dtype);
    return nullptr;
  }
  const size_t params = kSkip ? 2 : 1;
  if (!same_dtypes(init, params + (kRms ? 1 : 2), why_not)) return nullptr;
  if (kSkip && init.inputs[1].shape != init.inputs[0].shape) {
    *why_not = "the residual " + shape_to_string(init.inputs[1].shape) + " broadcasts to X " +
               shape_to_string(init.inputs[0].shape) + " (the fused kernel adds them element by element)";
    return nullptr;
  }
  const auto attributes = init.attributes<RowNormAttributes>();
  if (!kRms && attributes->stash_type != 1) {
    *why_not = "only stash_type 1 (float) is supported";
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  const RowNormShape rows = row_norm_shape(infer_context(init));
  const int64_t axis = rows.axis;
  const bool has_bias = !kRms && init.inputs.size() > params + 1 && init.inputs[params + 1].present();
  for (size_t i = params; i < params + (has_bias ? 2u : 1u); ++i)
    if (!indexed_by_column(x, init.inputs[i].shape, axis)) {
      *why_not = std::string(i == params ? "scale " : "bias ") + shape_to_string(init.inputs[i].shape) +
                 " broadcasts inside the normalized dims or varies across rows of X " + shape_to_string(x) +
                 " (the CUDA kernel indexes it by the position in the row)";
      return nullptr;
    }
  cuda::RowNormArgs a;
  cuda::float_storage(dtype, &a.storage);
  a.rms = kRms;
  a.epsilon = attributes->epsilon;
  a.rows = rows.rows;
  a.cols = rows.cols;
  return std::make_unique<RowNormKernel>(a, params);
}

std::unique_ptr<Kernel> make_add_layer_norm(KernelInit& init, std::string* why_not) {
  return make_row_norm<false, true>(init, why_not);
}

class GroupNormKernel final : public Kernel {
 public:
  explicit GroupNormKernel(const cuda::GroupNormArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::GroupNormArgs a = args_;
    a.x = args.inputs[0]->data();
    a.scale = args.inputs[1]->data();
    a.bias = args.inputs[2]->data();
    a.y = args.outputs[0]->data();
    cuda::launch_group_norm(a, cuda::stream_context(args).stream);
    cuda::check_launch(a.groups == a.channels && a.per_channel ? "InstanceNormalization" : "GroupNormalization");
  }

 private:
  cuda::GroupNormArgs args_;
};

std::unique_ptr<Kernel> make_group_norm_kernel(const KernelInit& init, const GroupNormParams& p,
                                               std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  if (!is_float(dtype)) {
    *why_not = dtype_reason(dtype);
    return nullptr;
  }
  if (!same_dtypes(init, 3, why_not)) return nullptr;
  cuda::GroupNormArgs a;
  cuda::float_storage(dtype, &a.storage);
  a.per_channel = p.per_channel;
  a.epsilon = p.epsilon;
  a.batch = p.batch;
  a.channels = p.channels;
  a.groups = p.groups;
  a.spatial = p.spatial;
  return std::make_unique<GroupNormKernel>(a);
}

// InstanceNormalization and GroupNormalization alike: the schema's view tells them apart.
std::unique_ptr<Kernel> make_group_norm(KernelInit& init, std::string* why_not) {
  GroupNormParams p;
  if (!group_norm_params(infer_context(init), &p, why_not)) return nullptr;
  return make_group_norm_kernel(init, p, why_not);
}

}  // namespace

EMBER_KERNEL("LayerNormalization", "", 17, kMaxOpset, DeviceKind::Cuda, make_row_norm<false>);
EMBER_KERNEL("RMSNormalization", "", 23, kMaxOpset, DeviceKind::Cuda, make_row_norm<true>);
EMBER_KERNEL("RMSNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_row_norm<true>);
EMBER_KERNEL("AddLayerNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_add_layer_norm);
EMBER_KERNEL("InstanceNormalization", "", 1, kMaxOpset, DeviceKind::Cuda, make_group_norm);
EMBER_KERNEL("GroupNormalization", "", 18, kMaxOpset, DeviceKind::Cuda, make_group_norm);

}  // namespace ember
