// CPU kernels for BitCast (the same bytes read as another type of the same width) and
// TensorScatter (a KV-cache update: past_cache with `update` written along `axis` at
// each batch entry's write index). Both move bytes, so they take every fixed-size dtype.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

void copy_bytes(const RunArgs& args) {
  std::memcpy(args.outputs[0]->data(), args.inputs[0]->data(), args.inputs[0]->nbytes());
}

std::unique_ptr<Kernel> make_bit_cast(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype == DType::String) {
    *why_not = "BitCast of strings is not supported";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(copy_bytes);
}

class TensorScatterKernel final : public Kernel {
 public:
  // The cache is [batch, prefix, max_seq, suffix] when flattened around the axis.
  TensorScatterKernel(int64_t batch, int64_t prefix, int64_t max_seq, int64_t seq, size_t row_bytes,
                      bool circular)
      : batch_(batch), prefix_(prefix), max_seq_(max_seq), seq_(seq), row_bytes_(row_bytes), circular_(circular) {}

  void run(const RunArgs& args) const override {
    copy_bytes(args);
    const auto* update = static_cast<const char*>(args.inputs[1]->data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const Tensor* indices = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t start = write_index(indices, b);
      for (int64_t p = 0; p < prefix_; ++p)
        for (int64_t s = 0; s < seq_; ++s) {
          int64_t at = start + s;
          if (circular_) at %= max_seq_;
          if (at < 0 || at >= max_seq_)
            throw Error("TensorScatter: write index " + std::to_string(at) + " is outside the cache of " +
                        std::to_string(max_seq_));
          std::memcpy(out + ((b * prefix_ + p) * max_seq_ + at) * row_bytes_,
                      update + ((b * prefix_ + p) * seq_ + s) * row_bytes_, row_bytes_);
        }
    }
  }

 private:
  static int64_t write_index(const Tensor* indices, int64_t b) {
    if (!indices) return 0;
    return indices->dtype() == DType::Int32 ? indices->data_as<int32_t>()[b] : indices->data_as<int64_t>()[b];
  }

  int64_t batch_, prefix_, max_seq_, seq_;
  size_t row_bytes_;
  bool circular_;
};

std::unique_ptr<Kernel> make_tensor_scatter(KernelInit& init, std::string* why_not) {
  const Shape& cache = init.inputs[0].shape;
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  const int64_t rank = static_cast<int64_t>(cache.size());
  int64_t axis = init.node.attributes.get_int_or("axis", -2);
  if (axis < 0) axis += rank;
  const std::string mode = init.node.attributes.get_string_or("mode", "linear");
  if (mode != "linear" && mode != "circular") init.fail("mode must be linear or circular, got '" + mode + "'");
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].dtype != DType::Int32 &&
      init.inputs[2].dtype != DType::Int64)
    init.fail("write_indices must be int32 or int64");
  int64_t prefix = 1, suffix = 1;
  for (int64_t d = 1; d < axis; ++d) prefix *= cache[d];
  for (int64_t d = axis + 1; d < rank; ++d) suffix *= cache[d];
  return std::make_unique<TensorScatterKernel>(cache[0], prefix, cache[axis], init.inputs[1].shape[axis],
                                               suffix * elem, mode == "circular");
}

}  // namespace

EMBER_KERNEL("BitCast", "", 26, kMaxOpset, DeviceKind::Cpu, make_bit_cast);
EMBER_KERNEL("TensorScatter", "", 24, kMaxOpset, DeviceKind::Cpu, make_tensor_scatter);

}  // namespace ember
