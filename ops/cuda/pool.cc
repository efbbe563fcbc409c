// MaxPool (without Indices), AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool,
// and com.ember's channels-last Nhwc* forms of all but LpPool, on CUDA: own kernels (pool_impl.cu) that follow the CPU reference loop exactly,
// window geometry (pads, auto_pad, strides, dilations, ceil_mode) computed once here.
#include "graph/schemas/window.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/pool_impl.h"
#include "ops/registry.h"

namespace ember {

namespace {

class PoolKernel final : public Kernel {
 public:
  PoolKernel(cuda::PoolType type, const cuda::PoolArgs& args) : type_(type), args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::PoolArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data();
    cuda::launch_pool(type_, a, cuda::stream_context(args).stream);
    cuda::check_launch("pooling");
  }

 private:
  cuda::PoolType type_;
  cuda::PoolArgs args_;
};

std::unique_ptr<Kernel> make_pool(KernelInit& init, std::string* why_not, cuda::PoolMode mode,
                                  Layout layout = Layout::ChannelsFirst) {
  const DType dtype = init.inputs[0].dtype;
  cuda::PoolType type;
  if (dtype == DType::Float32) type = cuda::PoolType::Float32;
  else if (dtype == DType::Float16) type = cuda::PoolType::Float16;
  else if (dtype == DType::BFloat16) type = cuda::PoolType::BFloat16;
  else if (mode == cuda::PoolMode::Max && dtype == DType::Int8) type = cuda::PoolType::Int8;
  else if (mode == cuda::PoolMode::Max && dtype == DType::UInt8) type = cuda::PoolType::UInt8;
  else {
    *why_not = init.node.op_type + " on CUDA does not take " + dtype_name(dtype);
    return nullptr;
  }
  if (init.node.outputs.size() > 1 && !init.node.outputs[1].empty()) {
    *why_not = "MaxPool's Indices output is not supported on CUDA";
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  if (x.size() < 3 || x.size() > 5) {
    *why_not = "pooling on CUDA takes 1 to 3 spatial dims, X is " + shape_to_string(x);
    return nullptr;
  }
  const auto& at = init.node.attributes;
  const WindowGeometry g = forward_window(init.node, spatial_dims(x, layout), at.get_ints("kernel_shape"),
                                          at.get_int_or("ceil_mode", 0) != 0);
  cuda::PoolArgs a;
  a.mode = mode;
  a.count_include_pad = at.get_int_or("count_include_pad", 0) != 0;
  if (const Attribute* pa = at.find("p")) a.p = pa->kind == Attribute::Kind::Float ? pa->f : static_cast<float>(pa->i);
  if (mode == cuda::PoolMode::Lp && !(a.p > 0)) init.fail("p must be positive");
  a.channels_last = layout == Layout::ChannelsLast;
  a.channels = channels_of(x, layout);
  a.planes = x[0] * a.channels;
  const Shape spatial = spatial_dims(x, layout);
  const size_t sd = g.kernel.size(), lead = 3 - sd;
  for (size_t i = 0; i < sd; ++i) {
    a.in[lead + i] = spatial[i];
    a.out[lead + i] = g.out[i];
    a.kernel[lead + i] = g.kernel[i];
    a.stride[lead + i] = g.strides[i];
    a.dilation[lead + i] = g.dilations[i];
    a.pad_begin[lead + i] = g.pads_begin[i];
    a.pad_end[lead + i] = g.pads_end[i];
  }
  return std::make_unique<PoolKernel>(type, a);
}

std::unique_ptr<Kernel> make_max_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, cuda::PoolMode::Max);
}
std::unique_ptr<Kernel> make_average_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, cuda::PoolMode::Average);
}
std::unique_ptr<Kernel> make_lp_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, cuda::PoolMode::Lp);
}
std::unique_ptr<Kernel> make_nhwc_max_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, cuda::PoolMode::Max, Layout::ChannelsLast);
}
std::unique_ptr<Kernel> make_nhwc_average_pool(KernelInit& init, std::string* why_not) {
  return make_pool(init, why_not, cuda::PoolMode::Average, Layout::ChannelsLast);
}

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(cuda::FloatStorage storage, const cuda::GlobalPoolArgs& args) : storage_(storage), args_(args) {}

  void run(const RunArgs& args) const override {
    cuda::GlobalPoolArgs a = args_;
    a.x = args.inputs[0]->data();
    a.y = args.outputs[0]->data();
    cuda::launch_global_pool(storage_, a, cuda::stream_context(args).stream);
    cuda::check_launch("global pooling");
  }

 private:
  cuda::FloatStorage storage_;
  cuda::GlobalPoolArgs args_;
};

template <bool Max, Layout kLayout = Layout::ChannelsFirst>
std::unique_ptr<Kernel> make_global_pool(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  cuda::FloatStorage storage;
  if (!cuda::float_storage(dtype, &storage)) {
    *why_not = init.node.op_type + " on CUDA takes float32, float16 and bfloat16, got " + dtype_name(dtype);
    return nullptr;
  }
  const Shape& x = init.inputs[0].shape;
  cuda::GlobalPoolArgs a;
  a.max = Max;
  a.channels_last = kLayout == Layout::ChannelsLast;
  a.channels = channels_of(x, kLayout);
  a.planes = x[0] * a.channels;
  a.size = a.planes ? shape_numel(x) / a.planes : 0;
  if (a.planes > 0 && a.size == 0) {
    *why_not = "pooling over an empty plane";
    return nullptr;
  }
  return std::make_unique<GlobalPoolKernel>(storage, a);
}

std::unique_ptr<Kernel> make_nhwc_global_average_pool(KernelInit& init, std::string* why_not) {
  return make_global_pool<false, Layout::ChannelsLast>(init, why_not);
}
std::unique_ptr<Kernel> make_nhwc_global_max_pool(KernelInit& init, std::string* why_not) {
  return make_global_pool<true, Layout::ChannelsLast>(init, why_not);
}

}  // namespace

EMBER_KERNEL("MaxPool", "", 1, kMaxOpset, DeviceKind::Cuda, make_max_pool);
EMBER_KERNEL("AveragePool", "", 1, kMaxOpset, DeviceKind::Cuda, make_average_pool);
EMBER_KERNEL("LpPool", "", 1, kMaxOpset, DeviceKind::Cuda, make_lp_pool);
EMBER_KERNEL("GlobalAveragePool", "", 1, kMaxOpset, DeviceKind::Cuda, make_global_pool<false>);
EMBER_KERNEL("GlobalMaxPool", "", 1, kMaxOpset, DeviceKind::Cuda, make_global_pool<true>);
// The channels-last forms the layout planning (graph/passes/channels_last) puts in.
EMBER_KERNEL("NhwcMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_nhwc_max_pool);
EMBER_KERNEL("NhwcAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_nhwc_average_pool);
EMBER_KERNEL("NhwcGlobalAveragePool", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_nhwc_global_average_pool);
EMBER_KERNEL("NhwcGlobalMaxPool", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_nhwc_global_max_pool);

}  // namespace ember
