// MatMul on float64. oneDNN's CPU matmul has no f64, and float64 models are rare (the
// ONNX tests, scientific models): a plain row-times-matrix loop, parallel over output
// rows, accumulating in double in the order k = 0, 1, ... (as a naive reference would).
#include "graph/schemas/shape_util.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember {

namespace {

class MatMulDoubleKernel final : public Kernel {
 public:
  explicit MatMulDoubleKernel(const KernelInit& init) {
    Shape a = init.inputs[0].shape, b = init.inputs[1].shape;
    if (a.size() == 1) a.insert(a.begin(), 1);  // numpy: a 1-D A is a row, a 1-D B a column
    if (b.size() == 1) b.push_back(1);
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = b.back();
    // Batch dims broadcast; each output matrix's A and B offsets, once, at plan time.
    const size_t rank = std::max(a.size(), b.size());
    a.insert(a.begin(), rank - a.size(), 1);
    b.insert(b.begin(), rank - b.size(), 1);
    Shape batch(rank - 2);
    for (size_t d = 0; d + 2 < rank; ++d) batch[d] = std::max(a[d], b[d]);
    const int64_t count = shape_numel(batch);
    a_offsets_.resize(count);
    b_offsets_.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      int64_t rest = i, a_at = 0, b_at = 0, a_stride = m_ * k_, b_stride = k_ * n_;
      for (size_t d = batch.size(); d-- > 0;) {
        const int64_t index = rest % batch[d];
        rest /= batch[d];
        if (a[d] != 1) a_at += index * a_stride;
        if (b[d] != 1) b_at += index * b_stride;
        a_stride *= a[d];
        b_stride *= b[d];
      }
      a_offsets_[i] = a_at;
      b_offsets_[i] = b_at;
    }
  }

  void run(const RunArgs& args) const override {
    const double* a = args.inputs[0]->data_as<double>();
    const double* b = args.inputs[1]->data_as<double>();
    double* c = args.outputs[0]->data_as<double>();
    const int64_t rows = static_cast<int64_t>(a_offsets_.size()) * m_;
    parallel_for(rows, k_ * n_, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t batch = r / m_, i = r % m_;
        const double* a_row = a + a_offsets_[batch] + i * k_;
        const double* b_mat = b + b_offsets_[batch];
        double* c_row = c + r * n_;
        std::fill(c_row, c_row + n_, 0.0);
        for (int64_t p = 0; p < k_; ++p) {
          const double x = a_row[p];
          const double* b_row = b_mat + p * n_;
          for (int64_t j = 0; j < n_; ++j) c_row[j] += x * b_row[j];
        }
      }
    });
  }

 private:
  int64_t m_ = 0, k_ = 0, n_ = 0;
  std::vector<int64_t> a_offsets_, b_offsets_;  // per output matrix, in elements
};

std::unique_ptr<Kernel> make_matmul_double(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != DType::Float64 || init.inputs[1].dtype != DType::Float64) {
    *why_not = "the float64 kernel takes float64 A and B";
    return nullptr;
  }
  return std::make_unique<MatMulDoubleKernel>(init);
}

}  // namespace

EMBER_KERNEL("MatMul", "", 1, kMaxOpset, DeviceKind::Cpu, make_matmul_double);

}  // namespace ember
