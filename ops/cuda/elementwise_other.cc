// Where (three-way broadcasting select) and Cast / CastLike on CUDA. Opset ranges
// mirror the CPU's (ops/cpu/where.cc, cast.cc).
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/elementwise.h"
#include "ops/registry.h"

namespace ember::cuda {

namespace {

class WhereKernel final : public Kernel {
 public:
  WhereKernel(int element_bytes, const BroadcastIndex& index) : bytes_(element_bytes), index_(index) {}

  void run(const RunArgs& args) const override {
    launch_where(bytes_, args.inputs[0]->data(), args.inputs[1]->data(), args.inputs[2]->data(),
                 args.outputs[0]->data(), index_, stream_context(args).stream);
    check_launch("Where");
  }

 private:
  int bytes_;
  BroadcastIndex index_;
};

// Selection only moves bytes: every dtype of 1, 2, 4 or 8 bytes is served.
std::unique_ptr<Kernel> make_where(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[1].dtype;
  if (init.inputs[0].dtype != DType::Bool || init.inputs[2].dtype != dtype) {
    *why_not = "Where needs a bool condition and x, y of one dtype";
    return nullptr;
  }
  const int bits = dtype_bits(dtype);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    *why_not = unsupported_on_cuda(init, dtype);
    return nullptr;
  }
  BroadcastIndex index;
  if (!make_broadcast_index(init.outputs[0].shape,
                            {&init.inputs[0].shape, &init.inputs[1].shape, &init.inputs[2].shape}, &index, why_not))
    return nullptr;
  return std::make_unique<WhereKernel>(bits / 8, index);
}

class CastKernel final : public Kernel {
 public:
  CastKernel(EwType from, EwType to) : from_(from), to_(to) {}

  void run(const RunArgs& args) const override {
    launch_cast(from_, to_, args.inputs[0]->data(), args.outputs[0]->data(), args.outputs[0]->numel(),
                stream_context(args).stream);
    check_launch("Cast");
  }

 private:
  EwType from_, to_;
};

// float32/16/64, bfloat16, int8/32/64, uint8 and bool, both ways; the others (float8,
// 16-bit and unsigned 32/64-bit integers, strings) decline.
std::unique_ptr<Kernel> make_cast_to(KernelInit& init, std::string* why_not, DType to) {
  const DType from = init.inputs[0].dtype;
  EwType a, b;
  if (!to_ew_type(from, &a) || !to_ew_type(to, &b)) {
    *why_not = std::string("Cast from ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported on CUDA";
    return nullptr;
  }
  return std::make_unique<CastKernel>(a, b);
}

std::unique_ptr<Kernel> make_cast(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.outputs[0].dtype);
}

std::unique_ptr<Kernel> make_cast_like(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.inputs[1].dtype);
}

}  // namespace

// Opset 16 only adds bfloat16 (a 2-byte type, served like the others).
EMBER_KERNEL("Where", "", 9, kMaxOpset, DeviceKind::Cuda, make_where);
// Opset 1 names `to` by a string; 6+ by number. 19+ add `saturate` and 24+ `round_mode`,
// which concern only the float8 types (declined here).
EMBER_KERNEL_FLAGS("Cast", "", 6, kMaxOpset, DeviceKind::Cuda, make_cast, kToItsOwnType);
EMBER_KERNEL_FLAGS("CastLike", "", 15, kMaxOpset, DeviceKind::Cuda, make_cast_like, kToItsOwnType);

}  // namespace ember::cuda
