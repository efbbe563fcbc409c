// CUDA ops that generate or mask elements rather than move them: ConstantOfShape,
// Range, Trilu and OneHot. Values that decide the output shape (ConstantOfShape's
// shape, Range's start/limit/delta, OneHot's depth) are plan-time constants by the
// schemas; Trilu's k and OneHot's [off, on] values are read on the device.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_util.h"
#include "ops/registry.h"

#include <cstring>

namespace ember::cuda {

namespace {

// ---- ConstantOfShape --------------------------------------------------------------------

class FillKernel final : public Kernel {
 public:
  FillKernel(int elem, uint64_t bits) : elem_(elem), bits_(bits) {}
  void run(const RunArgs& args) const override {
    launch_fill(args.outputs[0]->data(), args.outputs[0]->numel(), elem_, bits_, stream_context(args).stream);
    check_launch("ConstantOfShape on CUDA");
  }

 private:
  int elem_;
  uint64_t bits_;  // the element's bytes in the low end (little-endian)
};

std::unique_ptr<Kernel> make_constant_of_shape(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.outputs[0].dtype, why_not);
  if (!elem) return nullptr;
  uint64_t bits = 0;
  if (const auto* v = init.node.attributes.find("value")) {
    if (v->t.numel() < 1 || movement_elem_size(v->t.dtype()) != elem) {
      *why_not = "value must hold one element of the output dtype";
      return nullptr;
    }
    std::memcpy(&bits, v->t.data(), elem);
  }
  return std::make_unique<FillKernel>(static_cast<int>(elem), bits);
}

// ---- Range ------------------------------------------------------------------------------

class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(RangeParams p) : p_(p) {}
  void run(const RunArgs& args) const override {
    RangeParams p = p_;
    p.numel = args.outputs[0]->numel();
    launch_range(p, args.outputs[0]->data(), stream_context(args).stream);
    check_launch("Range on CUDA");
  }

 private:
  RangeParams p_;
};

std::unique_ptr<Kernel> make_range(KernelInit& init, std::string* why_not) {
  if (!inputs_known(init, {0, 2}, "start and delta", why_not)) return nullptr;
  const InferContext ctx = infer_context(init);
  RangeParams p;
  switch (init.inputs[0].dtype) {
    case DType::Float32: p.kind = 0; break;
    case DType::Float16: {
      const int64_t stash = init.node.attributes.get_int_or("stash_type", 1);
      if (stash != int64_t(DType::Float32) && stash != int64_t(DType::Float64)) {
        *why_not = "stash_type must be float (1) or double (11), got " + std::to_string(stash);
        return nullptr;
      }
      p.kind = stash == int64_t(DType::Float32) ? 1 : 2;
      break;
    }
    case DType::Int32: p.kind = 3; break;
    case DType::Int64: p.kind = 4; break;
    default: *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported on CUDA"; return nullptr;
  }
  if (p.kind <= 2) {
    p.start_f = read_floats(*init.values[0], ctx, "start")[0];
    p.delta_f = read_floats(*init.values[2], ctx, "delta")[0];
  } else {
    p.start_i = read_ints(*init.values[0], ctx, "start")[0];
    p.delta_i = read_ints(*init.values[2], ctx, "delta")[0];
  }
  return std::make_unique<RangeKernel>(p);
}

// ---- Trilu ------------------------------------------------------------------------------

class TriluKernel final : public Kernel {
 public:
  TriluKernel(bool upper, int elem) : upper_(upper), elem_(elem) {}
  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    const int64_t* k = args.inputs.size() > 1 && args.inputs[1] ? args.inputs[1]->data_as<int64_t>() : nullptr;
    const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    launch_trilu(x.data(), args.outputs[0]->data(), x.numel(), rows, cols, upper_, k, elem_,
                 stream_context(args).stream);
    check_launch("Trilu on CUDA");
  }

 private:
  bool upper_;
  int elem_;
};

std::unique_ptr<Kernel> make_trilu(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return nullptr;
  if (init.inputs.size() > 1 && init.inputs[1].present() &&
      (init.inputs[1].dtype != DType::Int64 || shape_numel(init.inputs[1].shape) != 1)) {
    *why_not = "k must be an int64 scalar";
    return nullptr;
  }
  return std::make_unique<TriluKernel>(init.node.attributes.get_int_or("upper", 1) != 0, static_cast<int>(elem));
}

// ---- OneHot -----------------------------------------------------------------------------

class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(int index_type, int64_t outer, int64_t depth, int64_t inner, int elem)
      : index_type_(index_type), outer_(outer), depth_(depth), inner_(inner), elem_(elem) {}
  void run(const RunArgs& args) const override {
    launch_one_hot(args.inputs[0]->data(), index_type_, args.inputs[2]->data(), args.outputs[0]->data(), outer_,
                   depth_, inner_, elem_, stream_context(args).stream);
    check_launch("OneHot on CUDA");
  }

 private:
  int index_type_;
  int64_t outer_, depth_, inner_;
  int elem_;
};

std::unique_ptr<Kernel> make_one_hot(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[2].dtype, why_not);
  if (!elem) return nullptr;
  int index_type = 0;
  switch (init.inputs[0].dtype) {
    case DType::Int32: index_type = 0; break;
    case DType::Int64: index_type = 1; break;
    case DType::Float32: index_type = 2; break;
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " indices are not supported on CUDA";
      return nullptr;
  }
  const Shape& out = init.outputs[0].shape;
  const int64_t rank = static_cast<int64_t>(out.size());
  int64_t axis = init.node.attributes.get_int_or("axis", -1);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out[d];
  return std::make_unique<OneHotKernel>(index_type, outer, out[axis], inner, static_cast<int>(elem));
}

}  // namespace

EMBER_KERNEL("ConstantOfShape", "", 9, kMaxOpset, DeviceKind::Cuda, make_constant_of_shape);
EMBER_KERNEL("Range", "", 11, kMaxOpset, DeviceKind::Cuda, make_range);
EMBER_KERNEL("Trilu", "", 14, kMaxOpset, DeviceKind::Cuda, make_trilu);
EMBER_KERNEL("OneHot", "", 9, kMaxOpset, DeviceKind::Cuda, make_one_hot);

}  // namespace ember::cuda
