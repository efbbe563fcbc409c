#include "ops/cpu/matrix_vector.h"

#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/parallel.h"

#include <immintrin.h>

#include <algorithm>

namespace ember {

namespace {

using dnnl::memory;

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// sums[j] = dot(rows[j], x) for j < 4: four independent streams of weights against one
// x, eight lanes each (AVX2 + FMA, the library's baseline).
void dot_four_rows(const float* const rows[4], const float* x, int64_t k, float sums[4]) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(rows[0] + i), xv, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(rows[1] + i), xv, a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(rows[2] + i), xv, a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(rows[3] + i), xv, a3);
  }
  sums[0] = horizontal_sum(a0);
  sums[1] = horizontal_sum(a1);
  sums[2] = horizontal_sum(a2);
  sums[3] = horizontal_sum(a3);
  for (; i < k; ++i)
    for (int j = 0; j < 4; ++j) sums[j] += rows[j][i] * x[i];
}

class MatrixVectorKernel final : public Kernel {
 public:
  MatrixVectorKernel(KernelInit& init, const ew::Activation& act, memory::desc stored)
      : act_(act), k_(shape_numel(init.inputs[0].shape)), n_(shape_numel(init.outputs[0].shape)) {
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    // [k, n] read n-major is n rows of k; a convolution's [n, k, 1..] already is.
    const memory::desc rows = stored.dims().size() == 2 ? memory::desc({k_, n_}, memory::data_type::f32, {1, k_})
                                                        : plain_f32_desc(init.inputs[1].shape);
    weights_ = packed_constant(init, 1, stored, rows);
  }

  const char* variant() const override { return "matrix-vector"; }

  void run(const RunArgs& args) const override {
    const float* x = args.inputs[0]->data_as<float>();
    const float* bias = has_bias_ ? args.inputs[2]->data_as<float>() : nullptr;
    const float* w = static_cast<const float*>(weights_.get_data_handle());
    float* y = args.outputs[0]->data_as<float>();
    parallel_for((n_ + 3) / 4, 8 * k_, [&](int64_t begin, int64_t end) {
      for (int64_t block = begin; block < end; ++block) {
        const int64_t first = block * 4, count = std::min<int64_t>(4, n_ - first);
        const float* rows[4];
        for (int64_t j = 0; j < 4; ++j) rows[j] = w + (first + std::min(j, count - 1)) * k_;  // a short block repeats its last row
        float sums[4];
        dot_four_rows(rows, x, k_, sums);
        for (int64_t j = 0; j < count; ++j)
          y[first + j] = ew::apply_activation(act_, bias ? sums[j] + bias[first + j] : sums[j]);
      }
    });
  }

 private:
  ew::Activation act_;
  int64_t k_, n_;
  bool has_bias_ = false;
  memory weights_;
};

}  // namespace

bool matrix_vector_applies(const KernelInit& init, int64_t rows, int64_t k, int64_t n) {
  if (rows != 1 || k <= 0 || n <= 0 || init.values[1] == nullptr || init.dense_math != DenseMath::Float32) return false;
  for (const TensorType& t : init.inputs)
    if (t.present() && t.dtype != DType::Float32) return false;
  return init.outputs[0].dtype == DType::Float32;
}

std::unique_ptr<Kernel> make_matrix_vector_kernel(KernelInit& init, const memory::desc& stored, std::string* why_not) {
  return with_fused_activation<MatrixVectorKernel>(init, why_not, stored);
}

}  // namespace ember
