// LayerNormalization, RMSNormalization, InstanceNormalization and GroupNormalization
// on CUDA: float32 and float16 storage (X, scale and bias of one dtype), float32
// statistics; the same opset ranges and arithmetic as the CPU kernels
// (ops/cpu/layer_norm.cc, rms_norm.cc, norm.cc). norm_impl.h has the kernels.
#include "graph/schemas/norm.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/norm_impl.h"
#include "ops/registry.h"

namespace ember {

namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16; }

std::string dtype_reason(DType t) {
  return std::string(dtype_name(t)) + " is not supported on CUDA (float32 and float16 are)";
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
  explicit RowNormKernel(const cuda::RowNormArgs& args) : args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::RowNormArgs a = args_;
    a.x = args.inputs[0]->data();
    a.scale = args.inputs[1]->data();
    a.bias = !a.rms && args.inputs.size() > 2 && args.inputs[2] ? args.inputs[2]->data() : nullptr;
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
};

// LayerNormalization (opset 17) and RMSNormalization (opset 23): rows of the dims from
// `axis` on.
template <bool kRms>
std::unique_ptr<Kernel> make_row_norm(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  if (!is_float(dtype)) {
    *why_not = dtype_reason(dtype);
    return nullptr;
  }
  if (!same_dtypes(init, kRms ? 2 : 3, why_not)) return nullptr;
  const auto attributes = init.attributes<RowNormAttributes>();
  if (!kRms && attributes->stash_type != 1) {
    *why_not = "only stash_type 1 (float) is supported";
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  const RowNormShape rows = row_norm_shape(infer_context(init));
  const int64_t axis = rows.axis;
  const bool has_bias = !kRms && init.inputs.size() > 2 && init.inputs[2].present();
  for (size_t i = 1; i < (has_bias ? 3u : 2u); ++i)
    if (!indexed_by_column(x, init.inputs[i].shape, axis)) {
      *why_not = std::string(i == 1 ? "scale " : "bias ") + shape_to_string(init.inputs[i].shape) +
                 " broadcasts inside the normalized dims or varies across rows of X " + shape_to_string(x) +
                 " (the CUDA kernel indexes it by the position in the row)";
      return nullptr;
    }
  cuda::RowNormArgs a;
  a.half = dtype == DType::Float16;
  a.rms = kRms;
  a.epsilon = attributes->epsilon;
  a.rows = rows.rows;
  a.cols = rows.cols;
  return std::make_unique<RowNormKernel>(a);
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
  a.half = dtype == DType::Float16;
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
EMBER_KERNEL("InstanceNormalization", "", 1, kMaxOpset, DeviceKind::Cuda, make_group_norm);
EMBER_KERNEL("GroupNormalization", "", 18, kMaxOpset, DeviceKind::Cuda, make_group_norm);

}  // namespace ember
