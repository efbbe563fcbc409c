// Run-time choice of ops/cpu/vector_math.h's level: the best the CPU has, once per
// process, lowered (never raised) by EMBER_CPU_ISA; each level's code is in its own
// translation unit (ops/cpu/vector_math_<isa>.cc).
#include "ops/cpu/vector_math.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace ember {

// The levels' entry points (ops/cpu/vector_math_kernels.h, one instance per level).
#define EMBER_VM_DECLARE(isa)                                                                          \
  namespace vecmath::isa {                                                                             \
  bool unary(ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n, int64_t rows, \
             int64_t stride);                                                                         \
  float exp_shifted_sum(const float* x, const float* shift, int64_t shift_step, float* y, int64_t n);  \
  void fast_swish(float alpha, const float* x, float* y, int64_t n, int64_t rows, int64_t stride);     \
  float max_value(const float* x, int64_t n);                                                          \
  void softmax_row(const float* x, float* y, int64_t n);                                               \
  }
EMBER_VM_DECLARE(scalar)
EMBER_VM_DECLARE(avx2)
EMBER_VM_DECLARE(avx512)
#undef EMBER_VM_DECLARE

namespace {

CpuIsa detect_isa() {
  CpuIsa best = CpuIsa::Scalar;
  if (cpu_supports(CpuIsa::Avx512)) best = CpuIsa::Avx512;
  else if (cpu_supports(CpuIsa::Avx2)) best = CpuIsa::Avx2;
  const char* forced = std::getenv("EMBER_CPU_ISA");
  if (!forced) return best;
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
    if (std::strcmp(forced, isa_name(isa)) == 0 && isa <= best) return isa;
  return best;  // unknown, or above what the CPU has
}

}  // namespace

bool cpu_supports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar: return true;
    case CpuIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

CpuIsa cpu_isa() {
  static const CpuIsa isa = detect_isa();
  return isa;
}

const char* isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar: return "scalar";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
  }
  return "?";
}

bool has_vector_form(ew::UnaryFunction f) {
  float x = 1.f, y;
  return vecmath::scalar::unary(f, {}, &x, &y, 1, 1, 1);
}

namespace {

// The level's unary over `rows` rows `stride` apart; false where f has no vector form.
bool unary_at(CpuIsa isa, ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n, int64_t rows,
              int64_t stride) {
  switch (isa) {
    case CpuIsa::Avx512: return vecmath::avx512::unary(f, p, x, y, n, rows, stride);
    case CpuIsa::Avx2: return vecmath::avx2::unary(f, p, x, y, n, rows, stride);
    case CpuIsa::Scalar: break;
  }
  return vecmath::scalar::unary(f, p, x, y, n, rows, stride);
}

void fast_swish_at(CpuIsa isa, float alpha, const float* x, float* y, int64_t n, int64_t rows, int64_t stride) {
  switch (isa) {
    case CpuIsa::Avx512: vecmath::avx512::fast_swish(alpha, x, y, n, rows, stride); return;
    case CpuIsa::Avx2: vecmath::avx2::fast_swish(alpha, x, y, n, rows, stride); return;
    case CpuIsa::Scalar: vecmath::scalar::fast_swish(alpha, x, y, n, rows, stride); return;
  }
}

}  // namespace

void vector_unary(CpuIsa isa, ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n) {
  unary_at(isa, f, p, x, y, n, 1, n);
}

void vector_unary(ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n) {
  vector_unary(cpu_isa(), f, p, x, y, n);
}

void fast_swish(CpuIsa isa, float alpha, const float* x, float* y, int64_t n) {
  fast_swish_at(isa, alpha, x, y, n, 1, n);
}

bool runs_as_fast_swish(const ew::Activation& act) {
  return (act.is(ew::UnaryFunction::Swish) || act.is(ew::UnaryFunction::QuickGelu)) && act.params.alpha > 0.f;
}

void activate(const ew::Activation& act, float* y, int64_t n, int64_t rows, int64_t stride) {
  if (act.kind == ew::Activation::Kind::None) return;
  if (runs_as_fast_swish(act)) {
    fast_swish_at(cpu_isa(), act.params.alpha, y, y, n, rows, stride);
    return;
  }
  if (act.kind == ew::Activation::Kind::Function &&
      unary_at(cpu_isa(), act.function, act.params, y, y, n, rows, stride))
    return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * stride + i] = ew::apply_activation(act, y[r * stride + i]);
}

float exp_shifted_sum(CpuIsa isa, const float* x, const float* shift, int64_t shift_step, float* y, int64_t n) {
  switch (isa) {
    case CpuIsa::Avx512: return vecmath::avx512::exp_shifted_sum(x, shift, shift_step, y, n);
    case CpuIsa::Avx2: return vecmath::avx2::exp_shifted_sum(x, shift, shift_step, y, n);
    case CpuIsa::Scalar: break;
  }
  return vecmath::scalar::exp_shifted_sum(x, shift, shift_step, y, n);
}
float exp_shifted_sum(const float* x, const float* shift, int64_t shift_step, float* y, int64_t n) {
  return exp_shifted_sum(cpu_isa(), x, shift, shift_step, y, n);
}

float max_value(CpuIsa isa, const float* x, int64_t n) {
  switch (isa) {
    case CpuIsa::Avx512: return vecmath::avx512::max_value(x, n);
    case CpuIsa::Avx2: return vecmath::avx2::max_value(x, n);
    case CpuIsa::Scalar: break;
  }
  return vecmath::scalar::max_value(x, n);
}
float max_value(const float* x, int64_t n) { return max_value(cpu_isa(), x, n); }

void softmax_row(CpuIsa isa, const float* x, float* y, int64_t n) {
  switch (isa) {
    case CpuIsa::Avx512: return vecmath::avx512::softmax_row(x, y, n);
    case CpuIsa::Avx2: return vecmath::avx2::softmax_row(x, y, n);
    case CpuIsa::Scalar: break;
  }
  vecmath::scalar::softmax_row(x, y, n);
}
void softmax_row(const float* x, float* y, int64_t n) { softmax_row(cpu_isa(), x, y, n); }

}  // namespace ember
