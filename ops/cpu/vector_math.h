// Vectorized float32 math for the CPU kernels: the elementwise table's costly
// functions (graph/elementwise_functions.h) over arrays, in AVX-512, AVX2+FMA or
// scalar code chosen once at run time, so one binary serves every x86-64 machine.
// The AVX-512 code lives in its own translation unit compiled with AVX-512 flags
// (ops/cpu/vector_math_avx512.cc) and runs only where the CPU reports AVX-512F/BW/DQ/VL.
// EMBER_CPU_ISA=scalar|avx2|avx512 forces a lower level (tests, comparisons).
//
// One algorithm per function (ops/cpu/vector_math_kernels.h), written once for every
// level; none calls libm. Accuracy, measured against libm in double over every 97th
// float bit pattern plus [-10, 10] densely (tests/ops/cpu/test_vector_math.cc):
//   function   bound (measured max)
//   exp        1 ulp (0.90); 0 below -103.98, +inf above 88.73, denormal results kept
//   tanh       3 ulp (2.23)
//   sigmoid    3 ulp (2.40)
//   erf        3 ulp (2.34)
//   gelu       7 ulp (6.17): x Phi(x) with Phi through erfc, no cancellation for x < 0
//   gelu_tanh  3 ulp for x >= 0; below, x sigmoid(2u) (the tanh form rewritten without
//              cancellation), u's own roundings amplified by |u|: 3 + 4|u| ulp (147 at
//              x = -9.7, where the result is 1e-40)
//   swish      5 ulp (4.1): x sigmoid(alpha x), SiLU and QuickGelu
//   softplus   3 ulp (1.86)
//   log        1 ulp (0.79)
// Results below FLT_MIN count in denormal steps; where one is x times a denormal
// factor (swish, the GELUs) it may be off by |x| steps more (52 at x = -104).
// Specials: NaN in, NaN out; +-inf and +-0 give the limits libm gives.
#pragma once

#include "graph/elementwise_functions.h"

#include <cstdint>

namespace ember {

enum class CpuIsa { Scalar, Avx2, Avx512 };

// The level the CPU supports (and EMBER_CPU_ISA allows), decided once.
CpuIsa cpu_isa();
// Whether this CPU can run `isa`.
bool cpu_supports(CpuIsa isa);
const char* isa_name(CpuIsa isa);

// Whether vector_unary computes f (else the caller keeps its scalar loop).
bool has_vector_form(ew::UnaryFunction f);

// y[i] = f(x[i]) for i < n (y may be x), at cpu_isa()'s level or the one given.
void vector_unary(ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n);
void vector_unary(CpuIsa isa, ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n);

// y[i] = x[i] sigmoid(alpha x[i]) for alpha > 0 (SiLU, QuickGelu) in 17 operations a
// vector to Swish's 26, for GEMM and convolution epilogues: 3 ulp (measured 1.7) where
// |y| >= 1e-36 / alpha; a smaller result comes out below that in magnitude (no
// denormal steps kept). Specials: NaN -> NaN, +inf -> +inf, -inf -> a tiny negative.
void fast_swish(CpuIsa isa, float alpha, const float* x, float* y, int64_t n);
// Whether `act` runs as fast_swish: SiLU or QuickGelu with alpha > 0.
bool runs_as_fast_swish(const ew::Activation& act);

// y[i] = act(y[i]) for i < n, on `rows` rows `stride` apart, on the calling thread:
// fast_swish for SiLU and QuickGelu (alpha > 0), vector_unary where the function has a
// vector form, else the table's scalar function. A GEMM's or convolution's fused
// activation, after the product; a GEMM's column block in one call (per 16-float row,
// the call cost GELU 60% more time).
void activate(const ew::Activation& act, float* y, int64_t n, int64_t rows = 1, int64_t stride = 0);

// y[i] = exp(x[i] - shift[i * shift_step]) (shift_step 0: one shift for all), 0 where
// x[i] - shift < -87, below which it would be a denormal or 0 (why: vector_math_kernels.h);
// returns the sum of the y[i]. Softmax's inner loop.
float exp_shifted_sum(const float* x, const float* shift, int64_t shift_step, float* y, int64_t n);
float exp_shifted_sum(CpuIsa isa, const float* x, const float* shift, int64_t shift_step, float* y, int64_t n);

// The largest x[i], i < n (-inf for n = 0). A NaN may be passed over: in a softmax it
// reaches every result through exp all the same.
float max_value(const float* x, int64_t n);
float max_value(CpuIsa isa, const float* x, int64_t n);

// y[i] = exp(x[i] - m) / sum_j exp(x[j] - m), m = max_value(x, n), for i < n (y may be
// x): Softmax's row, its three passes at the CPU's level while the row is in L1.
void softmax_row(const float* x, float* y, int64_t n);
void softmax_row(CpuIsa isa, const float* x, float* y, int64_t n);

}  // namespace ember
