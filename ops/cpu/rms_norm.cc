// CPU kernel for RMSNormalization (opset 23): each row of the trailing dims from `axis`
// on is divided by sqrt(mean(x^2) + epsilon), then multiplied by Scale, which
// broadcasts to X (numpy rules). Statistics in float (double for double inputs), which
// is what stash_type 1 asks for.
#include "graph/schemas/norm.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>
#include <vector>

namespace ember {

namespace {

constexpr int kMaxRank = 8;

template <class T>
class RmsNormKernel final : public Kernel {
 public:
  RmsNormKernel(int64_t rows, int64_t cols, float epsilon, const Shape& x, const Shape& scale)
      : rows_(rows), cols_(cols), epsilon_(epsilon), rank_(static_cast<int>(x.size())) {
    // Scale's element stride per X dim, 0 where it broadcasts.
    int64_t stride = 1;
    for (int d = rank_ - 1; d >= 0; --d) {
      const int64_t sd = d - rank_ + static_cast<int>(scale.size());
      const int64_t size = sd >= 0 ? scale[sd] : 1;
      dims_[d] = x[d];
      strides_[d] = size == 1 ? 0 : stride;
      stride *= size;
    }
  }

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* scale = args.inputs[1]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    using C = compute_t<T>;
    parallel_for(rows_, cols_ * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = x + r * cols_;
        C sum = 0;
        for (int64_t j = 0; j < cols_; ++j) sum += C(in[j]) * C(in[j]);
        const C inv = C(1) / std::sqrt(sum / C(cols_) + C(epsilon_));
        for (int64_t j = 0; j < cols_; ++j)
          y[r * cols_ + j] = T(C(in[j]) * inv * C(scale[scale_offset(r * cols_ + j)]));
      }
    });
  }

 private:
  int64_t scale_offset(int64_t flat) const {
    int64_t off = 0;
    for (int d = rank_ - 1; d >= 0; --d) {
      off += flat % dims_[d] * strides_[d];
      flat /= dims_[d];
    }
    return off;
  }

  int64_t rows_, cols_;
  float epsilon_;
  int rank_;
  int64_t dims_[kMaxRank] = {}, strides_[kMaxRank] = {};
};

std::unique_ptr<Kernel> make_rms_norm(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const RowNormShape rows = row_norm_shape(infer_context(init));
  if (x.size() > kMaxRank) {
    *why_not = "rank above 8";
    return nullptr;
  }
  const DType dtype = init.inputs[0].dtype;
  if (init.inputs[1].dtype != dtype) init.fail("scale must have the dtype of X");
  const Shape& scale = init.inputs[1].shape;
  for (size_t i = 0; i < scale.size(); ++i) {
    const int64_t xd = x[x.size() - scale.size() + i];
    if (scale[i] != 1 && scale[i] != xd)
      init.fail("scale " + shape_to_string(scale) + " does not broadcast to X " + shape_to_string(x));
  }
  const float epsilon = init.attributes<RowNormAttributes>()->epsilon;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<RmsNormKernel<typename decltype(tag)::type>>(rows.rows, rows.cols, epsilon, x, scale);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("RMSNormalization", "", 23, kMaxOpset, DeviceKind::Cpu, make_rms_norm);

}  // namespace ember
