// CUDA Gather, GatherElements, GatherND, ScatterND and ScatterElements (reduction
// "none") on bytes, so every dtype of 1, 2, 4 or 8 bytes works; int32 or int64 indices
// (int64 only for the ND ops, as on the CPU). Indices are read on the device: an
// out-of-range index gathers zeros and scatters nothing (gather_impl.h), where the CPU
// kernels raise.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/gather_impl.h"
#include "ops/cuda/movement_util.h"
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

// ScatterND/ScatterElements: only reduction "none" (opset 16 added the others).
bool reduction_none(const KernelInit& init, std::string* why_not) {
  const std::string r = init.opset >= 16 ? init.node.attributes.get_string_or("reduction", "none") : "none";
  if (r == "none") return true;
  *why_not = "reduction '" + r + "' is not supported on CUDA";
  return false;
}

// The widest unit (<= max_unit) every pointer is aligned to.
size_t run_unit(size_t max_unit, std::initializer_list<const void*> pointers) {
  size_t unit = max_unit;
  while (unit > 1 && !aligned_to(unit, pointers)) unit /= 2;
  return unit;
}

// out = data, unless they are the same bytes.
void copy_data(const RunArgs& args, cudaStream_t stream) {
  const Tensor& data = *args.inputs[0];
  Tensor& out = *args.outputs[0];
  if (out.data() != data.data() && data.nbytes())
    check(cudaMemcpyAsync(out.data(), data.data(), data.nbytes(), cudaMemcpyDeviceToDevice, stream),
          "copying the scatter's data on CUDA");
}

// ---- Gather -----------------------------------------------------------------------------

class GatherKernel final : public Kernel {
 public:
  GatherKernel(GatherParams p, int64_t inner_bytes) : p_(p), inner_bytes_(inner_bytes) {}
  void run(const RunArgs& args) const override {
    const void* data = args.inputs[0]->data();
    void* out = args.outputs[0]->data();
    GatherParams p = p_;
    p.unit = static_cast<int32_t>(run_unit(pow2_divisor(static_cast<uint64_t>(inner_bytes_)), {data, out}));
    p.inner = inner_bytes_ / p.unit;
    launch_gather(p, data, args.inputs[1]->data(), out, stream_context(args).stream);
    check_launch("Gather on CUDA");
  }

 private:
  GatherParams p_;
  int64_t inner_bytes_;
};

std::unique_ptr<Kernel> make_gather(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, true, why_not)) return nullptr;
  const Shape& data = init.inputs[0].shape;
  const int64_t axis = normalized_axis(init, static_cast<int64_t>(data.size()));
  GatherParams p;
  p.index64 = init.inputs[1].dtype == DType::Int64;
  p.outer = 1;
  p.axis_len = data[axis];
  p.count = shape_numel(init.inputs[1].shape);
  int64_t inner_bytes = static_cast<int64_t>(elem);
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (d < axis) p.outer *= data[d];
    if (d > axis) inner_bytes *= data[d];
  }
  return std::make_unique<GatherKernel>(p, inner_bytes);
}

// ---- GatherElements / ScatterElements ---------------------------------------------------

bool make_elements_params(const KernelInit& init, size_t elem, ElementsParams& p, std::string* why_not) {
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  if (indices.size() > static_cast<size_t>(kGatherMaxRank)) {
    *why_not = "rank above " + std::to_string(kGatherMaxRank) + " is not supported on CUDA";
    return false;
  }
  const auto strides = contiguous_strides(data);
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

class GatherElementsKernel final : public Kernel {
 public:
  explicit GatherElementsKernel(ElementsParams p) : p_(p) {}
  void run(const RunArgs& args) const override {
    launch_gather_elements(p_, args.inputs[0]->data(), args.inputs[1]->data(), args.outputs[0]->data(),
                           stream_context(args).stream);
    check_launch("GatherElements on CUDA");
  }

 private:
  ElementsParams p_;
};

std::unique_ptr<Kernel> make_gather_elements(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, true, why_not)) return nullptr;
  ElementsParams p;
  if (!make_elements_params(init, elem, p, why_not)) return nullptr;
  return std::make_unique<GatherElementsKernel>(p);
}

class ScatterElementsKernel final : public Kernel {
 public:
  explicit ScatterElementsKernel(ElementsParams p) : p_(p) {}
  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    copy_data(args, stream);
    launch_scatter_elements(p_, args.inputs[1]->data(), args.inputs[2]->data(), args.outputs[0]->data(), stream);
    check_launch("ScatterElements on CUDA");
  }

 private:
  ElementsParams p_;
};

std::unique_ptr<Kernel> make_scatter_elements(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, true, why_not) || !reduction_none(init, why_not)) return nullptr;
  ElementsParams p;
  if (!make_elements_params(init, elem, p, why_not)) return nullptr;
  return std::make_unique<ScatterElementsKernel>(p);
}

// ---- GatherND / ScatterND ---------------------------------------------------------------

// NDParams with every count in bytes (unit 1); run divides by the unit it picks, which
// divides the slice's bytes and so every stride (each a multiple of the slice).
class NDKernel final : public Kernel {
 public:
  NDKernel(NDParams bytes, bool scatter) : bytes_(bytes), scatter_(scatter) {}
  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    void* out = args.outputs[0]->data();
    const auto* indices = args.inputs[1]->data_as<int64_t>();
    const void* src = scatter_ ? args.inputs[2]->data() : args.inputs[0]->data();
    NDParams p = bytes_;
    const int64_t unit = static_cast<int64_t>(run_unit(pow2_divisor(static_cast<uint64_t>(p.slice)), {src, out}));
    p.unit = static_cast<int32_t>(unit);
    p.slice /= unit;
    p.batch_stride /= unit;
    for (int j = 0; j < p.k; ++j) p.strides[j] /= unit;
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

std::unique_ptr<Kernel> make_nd(KernelInit& init, bool scatter, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem || !index_dtype_ok(init.inputs[1].dtype, false, why_not)) return nullptr;
  if (scatter && !reduction_none(init, why_not)) return nullptr;
  const Shape& data = init.inputs[0].shape;
  const Shape& indices = init.inputs[1].shape;
  const int64_t b = !scatter && init.opset >= 12 ? init.node.attributes.get_int_or("batch_dims", 0) : 0;
  const int64_t k = indices.back();
  if (k > kGatherMaxRank) {
    *why_not = "index tuples longer than " + std::to_string(kGatherMaxRank) + " are not supported on CUDA";
    return nullptr;
  }
  const auto strides = contiguous_strides(data);
  const int64_t e = static_cast<int64_t>(elem);
  NDParams p;
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
  return std::make_unique<NDKernel>(p, scatter);
}

std::unique_ptr<Kernel> make_gather_nd(KernelInit& init, std::string* why_not) { return make_nd(init, false, why_not); }
std::unique_ptr<Kernel> make_scatter_nd(KernelInit& init, std::string* why_not) { return make_nd(init, true, why_not); }

}  // namespace

EMBER_KERNEL("Gather", "", 1, kMaxOpset, DeviceKind::Cuda, make_gather);
EMBER_KERNEL("GatherElements", "", 11, kMaxOpset, DeviceKind::Cuda, make_gather_elements);
EMBER_KERNEL("GatherND", "", 11, kMaxOpset, DeviceKind::Cuda, make_gather_nd);
EMBER_KERNEL("ScatterND", "", 11, kMaxOpset, DeviceKind::Cuda, make_scatter_nd);
EMBER_KERNEL("ScatterElements", "", 11, kMaxOpset, DeviceKind::Cuda, make_scatter_elements);
EMBER_KERNEL("Scatter", "", 9, 10, DeviceKind::Cuda, make_scatter_elements);

}  // namespace ember::cuda
