// CPU kernels for Trilu (keep the upper or lower triangle of each matrix in the last
// two dims, shifted by diagonal k) and EyeLike (ones on diagonal k of a 2-D tensor).
// Both only move or zero elements, so they work on bytes and take every fixed-size
// dtype; zero bytes are zero in every numeric type and false in bool.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

class TriluKernel final : public Kernel {
 public:
  TriluKernel(bool upper, size_t elem) : upper_(upper), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    int64_t k = 0;
    if (args.inputs.size() > 1 && args.inputs[1]) k = *args.inputs[1]->data_as<int64_t>();
    const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    const int64_t matrices = rows * cols > 0 ? x.numel() / (rows * cols) : 0;
    const auto* in = static_cast<const char*>(x.data());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    parallel_for(matrices * rows, cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % rows;
        // Columns j with j - i >= k (upper) or j - i <= k (lower) are kept.
        const int64_t split = std::clamp<int64_t>(upper_ ? i + k : i + k + 1, 0, cols);
        const int64_t keep_from = upper_ ? split : 0, keep_to = upper_ ? cols : split;
        const size_t row = static_cast<size_t>(r * cols) * elem_;
        std::memset(out + row, 0, cols * elem_);
        std::memcpy(out + row + keep_from * elem_, in + row + keep_from * elem_, (keep_to - keep_from) * elem_);
      }
    });
  }

 private:
  bool upper_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_trilu(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  if (init.inputs.size() > 1 && init.inputs[1].present() &&
      (init.inputs[1].dtype != DType::Int64 || shape_numel(init.inputs[1].shape) != 1))
    init.fail("k must be an int64 scalar");
  return std::make_unique<TriluKernel>(init.node.attributes.get_int_or("upper", 1) != 0, elem);
}

template <class T>
class EyeLikeKernel final : public Kernel {
 public:
  explicit EyeLikeKernel(int64_t k) : k_(k) {}
  void run(const RunArgs& args) const override {
    Tensor& y = *args.outputs[0];
    const int64_t rows = y.shape()[0], cols = y.shape()[1];
    T* out = y.data_as<T>();
    std::fill(out, out + rows * cols, convert<T>(0));
    for (int64_t i = std::max<int64_t>(0, -k_); i < rows && i + k_ < cols; ++i) out[i * cols + i + k_] = convert<T>(1);
  }

 private:
  int64_t k_;
};

std::unique_ptr<Kernel> make_eye_like(KernelInit& init, std::string* why_not) {
  const int64_t k = init.node.attributes.get_int_or("k", 0);
  std::unique_ptr<Kernel> kernel;
  dispatch(AllTypes{}, init.outputs[0].dtype,
           [&](auto tag) { kernel = std::make_unique<EyeLikeKernel<typename decltype(tag)::type>>(k); });
  if (!kernel) *why_not = unsupported_dtype(init, init.outputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("Trilu", "", 14, kMaxOpset, DeviceKind::Cpu, make_trilu);
EMBER_KERNEL("EyeLike", "", 9, kMaxOpset, DeviceKind::Cpu, make_eye_like);

}  // namespace ember
