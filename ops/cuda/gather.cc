// CUDA Gather, GatherElements, GatherND, ScatterND and ScatterElements (reduction
// "none") on bytes, so every dtype of 1, 2, 4 or 8 bytes works; int32 or int64 indices
// (int64 only for the ND ops, as on the CPU). Indices are read on the device: an
// out-of-range index gathers zeros and scatters nothing (gather_impl.h), where the CPU
// kernels raise.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_plans.h"
#include "ops/registry.h"

namespace ember::cuda {

namespace {

bool index_dtype_ok(DType t, bool allow32, std::string* why_not) {
  if (t == DType::Int64 || (allow32 && t == DType::Int32)) return true;
  *why_not = std::string(dtype_name(t)) + " indices are not supported on CUDA";
  return false;
}

int64_t normalized_axis(const KernelInit& init, int64_t rank) {
  const int64_t axis = init.node.attributes.get_int_or("axis", 0);
  return axis < 0 ? axis + rank : axis;
}

bool is_scatter(const KernelInit& init) { return init.node.op_type.rfind("Scatter", 0) == 0; }

// ScatterND/ScatterElements: only reduction "none" (opset 16 added the others).
bool reduction_none(const KernelInit& init, std::string* why_not) {
  const std::string r = init.opset >= 16 ? init.node.attributes.get_string_or("reduction", "none") : "none";
  if (r == "none") return true;
  *why_not = "reduction '" + r + "' is not supported on CUDA";
  return false;
}

// The widest unit (<= max_unit) every pointer is aligned to.
int64_t run_unit(size_t max_unit, std::initializer_list<const void*> pointers) {
  size_t unit = max_unit;
  while (unit > 1 && !aligned_to(unit, pointers)) unit /= 2;
  return static_cast<int64_t>(unit);
}

// out = data, unless they are the same bytes.
void copy_data(const RunArgs& args, cudaStream_t stream) {
  const Tensor& data = *args.inputs[0];
  Tensor& out = *args.outputs[0];
  if (out.data() != data.data() && data.nbytes())
    check(cudaMemcpyAsync(out.data(), data.data(), data.nbytes(), cudaMemcpyDeviceToDevice, stream),
          "copying the scatter's data on CUDA");
}

class GatherKernel final : public Kernel {
 public:
  explicit GatherKernel(GatherParams bytes) : bytes_(bytes) {}
  void run(const RunArgs& args) const override {
    const void* data = args.inputs[0]->data();
    void* out = args.outputs[0]->data();
    const int64_t unit = run_unit(pow2_divisor(static_cast<uint64_t>(bytes_.inner)), {data, out});
    launch_gather(gather_for_unit(bytes_, unit), data, args.inputs[1]->data(), out, stream_context(args).stream);
    check_launch("Gather on CUDA");
  }

 private:
  GatherParams bytes_;
};

std::unique_ptr<Kernel> make_gather(KernelInit& init, std::string* why_not) {
  GatherParams p;
  if (!plan_gather(init, p, why_not)) return nullptr;
  return std::make_unique<GatherKernel>(p);
}

class ElementsKernel final : public Kernel {
 public:
  ElementsKernel(ElementsParams p, bool scatter) : p_(p), scatter_(scatter) {}
  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    if (scatter_) {
      copy_data(args, stream);
      launch_scatter_elements(p_, args.inputs[1]->data(), args.inputs[2]->data(), args.outputs[0]->data(), stream);
      check_launch("ScatterElements on CUDA");
    } else {
      launch_gather_elements(p_, args.inputs[0]->data(), args.inputs[1]->data(), args.outputs[0]->data(), stream);
      check_launch("GatherElements on CUDA");
    }
  }

 private:
  ElementsParams p_;
  bool scatter_;
};

std::unique_ptr<Kernel> make_elements(KernelInit& init, std::string* why_not) {
  ElementsParams p;
  if (!plan_elements(init, p, why_not)) return nullptr;
  return std::make_unique<ElementsKernel>(p, is_scatter(init));
}

class NDKernel final : public Kernel {
 public:
  NDKernel(NDParams bytes, bool scatter) : bytes_(bytes), scatter_(scatter) {}
  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    void* out = args.outputs[0]->data();
    const auto* indices = args.inputs[1]->data_as<int64_t>();
    const void* src = scatter_ ? args.inputs[2]->data() : args.inputs[0]->data();
    const NDParams p = nd_for_unit(bytes_, run_unit(pow2_divisor(static_cast<uint64_t>(bytes_.slice)), {src, out}));
    if (scatter_) {
      copy_data(args, stream);
      launch_scatter_nd(p, indices, src, out, stream);
      check_launch("ScatterND on CUDA");
    } else {
      launch_gather_nd(p, src, indices, out, stream);
      check_launch("GatherND on CUDA");
    }
  }

 private:
  NDParams bytes_;
  bool scatter_;
};

std::unique_ptr<Kernel> make_nd(KernelInit& init, std::string* why_not) {
  NDParams p;
  if (!plan_nd(init, p, why_not)) return nullptr;
  return std::make_unique<NDKernel>(p, is_scatter(init));
}

}  // namespace

bool plan_gather(const KernelInit& init, GatherParams& p, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, true, why_not)) return false;
  const Shape& data = init.inputs[0].shape;
  const int64_t axis = normalized_axis(init, static_cast<int64_t>(data.size()));
  p = GatherParams{};
  p.index64 = init.inputs[1].dtype == DType::Int64;
  p.outer = 1;
  p.axis_len = data[axis];
  p.count = shape_numel(init.inputs[1].shape);
  p.inner = static_cast<int64_t>(elem);
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (d < axis) p.outer *= data[d];
    if (d > axis) p.inner *= data[d];
  }
  return true;
}

GatherParams gather_for_unit(const GatherParams& bytes, int64_t unit) {
  GatherParams p = bytes;
  p.unit = static_cast<int32_t>(unit);
  p.inner = bytes.inner / unit;
  return p;
}

bool plan_elements(const KernelInit& init, ElementsParams& p, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, true, why_not)) return false;
  if (is_scatter(init) && !reduction_none(init, why_not)) return false;
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  if (indices.size() > static_cast<size_t>(kGatherMaxRank)) {
    *why_not = "rank above " + std::to_string(kGatherMaxRank) + " is not supported on CUDA";
    return false;
  }
  const auto strides = contiguous_strides(data);
  p = ElementsParams{};
  p.rank = static_cast<int32_t>(indices.size());
  p.axis = static_cast<int32_t>(normalized_axis(init, static_cast<int64_t>(data.size())));
  p.elem = static_cast<int32_t>(elem);
  p.index64 = init.inputs[1].dtype == DType::Int64;
  p.numel = shape_numel(indices);
  p.axis_len = data[p.axis];
  for (size_t d = 0; d < indices.size(); ++d) {
    p.dims[d] = indices[d];
    p.data_strides[d] = strides[d];
  }
  return true;
}

bool plan_nd(const KernelInit& init, NDParams& p, std::string* why_not) {
  const bool scatter = is_scatter(init);
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, false, why_not)) return false;
  if (scatter && !reduction_none(init, why_not)) return false;
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  const int64_t b = !scatter && init.opset >= 12 ? init.node.attributes.get_int_or("batch_dims", 0) : 0;
  const int64_t k = indices.back();
  if (k > kGatherMaxRank) {
    *why_not = "index tuples longer than " + std::to_string(kGatherMaxRank) + " are not supported on CUDA";
    return false;
  }
  const auto strides = contiguous_strides(data);
  const int64_t e = static_cast<int64_t>(elem);
  p = NDParams{};
  p.k = static_cast<int32_t>(k);
  int64_t batches = 1;
  p.tuples = 1;
  for (int64_t d = 0; d < b; ++d) batches *= indices[d];
  for (size_t d = b; d + 1 < indices.size(); ++d) p.tuples *= indices[d];
  p.total_tuples = batches * p.tuples;
  p.slice = e;
  for (size_t d = b + k; d < data.size(); ++d) p.slice *= data[d];
  p.batch_stride = b ? strides[b - 1] * e : 0;
  for (int64_t j = 0; j < k; ++j) {
    p.dims[j] = data[b + j];
    p.strides[j] = strides[b + j] * e;
  }
  return true;
}

// Every stride is a multiple of the slice's bytes, which the unit divides.
NDParams nd_for_unit(const NDParams& bytes, int64_t unit) {
  NDParams p = bytes;
  p.unit = static_cast<int32_t>(unit);
  p.slice /= unit;
  p.batch_stride /= unit;
  for (int j = 0; j < p.k; ++j) p.strides[j] /= unit;
  return p;
}

EMBER_KERNEL("Gather", "", 1, kMaxOpset, DeviceKind::Cuda, make_gather);
EMBER_KERNEL("GatherElements", "", 11, kMaxOpset, DeviceKind::Cuda, make_elements);
EMBER_KERNEL("GatherND", "", 11, kMaxOpset, DeviceKind::Cuda, make_nd);
EMBER_KERNEL("ScatterND", "", 11, kMaxOpset, DeviceKind::Cuda, make_nd);
EMBER_KERNEL("ScatterElements", "", 11, kMaxOpset, DeviceKind::Cuda, make_elements);
EMBER_KERNEL("Scatter", "", 9, 10, DeviceKind::Cuda, make_elements);

}  // namespace ember::cuda
