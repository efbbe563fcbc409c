// ops/cpu/packed_gemm_avx512.h: the register blocks, and the walk of one group of B's
// columns over K's slices and A's row blocks. Compiled alone with -mavx512f/bw/dq/vl.
#include "ops/cpu/packed_gemm_avx512.h"

#include <immintrin.h>

// GCC 12 reports its own _mm512_undefined_ps() inside _mm512_max_ps/min_ps as
// "(may be) used uninitialized" (a false positive of its headers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::avx512_gemm {
namespace {

constexpr int64_t kVectors = kGroupColumns / 16;
constexpr int64_t kLineFloats = 16;  // a 64-byte cache line

constexpr int64_t least(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t most(int64_t a, int64_t b) { return a < b ? b : a; }

// One register block: C[r][0, 48) for r < R over one slice of K.
struct Block {
  const float* a = nullptr;  // A's first row at the slice's first step
  int64_t lda = 0;
  const float* b = nullptr;  // the group's slice: 48 floats a step
  int64_t depth = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  const __mmask16* masks = nullptr;  // C's columns per vector (the last group's may be partial)
  bool first = false;                // the first slice: sums start at zero, else at C
  const float* bias = nullptr;       // the last slice: 48 floats added, then the bounds
  float lo = 0.f, hi = 0.f;
  const float* prefetch = nullptr;  // lines of the next slice, spread through the depth
  int64_t lines = 0;
};

// Accumulators as an array indexed by constants: with R and V template arguments and
// every loop fixed, GCC keeps all V R in registers (the step's loop below has no stack
// access). V < 3 only for the last group, where N leaves it a vector or two of columns.
template <int R, int V>
void multiply_block(const Block& k) {
  __m512 sum[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      sum[r][v] = k.first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k.masks[v], k.c + r * k.ldc + v * 16);
  // The depth in segments, one prefetched line before each (none: one segment). Lines
  // go to L2: the slice moves to L1 as its first block reads it.
  const int64_t segment = k.lines ? most(1, k.depth / k.lines) : k.depth;
  const float* b = k.b;
  int64_t d = 0;
  for (int64_t line = 0; d < k.depth; ++line) {
    if (line < k.lines) _mm_prefetch(reinterpret_cast<const char*>(k.prefetch + line * kLineFloats), _MM_HINT_T1);
    for (const int64_t end = least(k.depth, d + segment); d < end; ++d, b += kGroupColumns) {
      __m512 column[V];
      for (int v = 0; v < V; ++v) column[v] = _mm512_loadu_ps(b + v * 16);
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(k.a[r * k.lda + d]);
        for (int v = 0; v < V; ++v) sum[r][v] = _mm512_fmadd_ps(a, column[v], sum[r][v]);
      }
    }
  }
  if (k.bias) {
    const __m512 lo = _mm512_set1_ps(k.lo), hi = _mm512_set1_ps(k.hi);
    for (int v = 0; v < V; ++v) {
      const __m512 bias = _mm512_loadu_ps(k.bias + v * 16);
      for (int r = 0; r < R; ++r)  // the bound first, so NaN stays NaN
        sum[r][v] = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(sum[r][v], bias)));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(k.c + r * k.ldc + v * 16, k.masks[v], sum[r][v]);
}

// A single row (a decoder's token) over all of K at once: it waits on B coming from
// memory, one stream the hardware's prefetcher follows best (no software prefetch, as
// the AVX2 row, ops/cpu/packed_gemm.cc), and two sums per vector, even and odd steps,
// keep its multiplies off each other's latency. The Llama-style decoder's step with
// past key/values (`infer --repeat 800`, 4 alternations, p50 ms): 5.26-5.88 as a block
// of one row (slices, prefetches), 5.53-5.96 on the matrix-vector kernel (its weights
// as rows), 4.84-5.07 by this row.
template <int V>
void multiply_row(const float* a, const float* b, int64_t depth, float* c, const __mmask16* masks, const float* bias,
                  float lo, float hi) {
  __m512 even[V], odd[V];
  for (int v = 0; v < V; ++v) even[v] = odd[v] = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 2 <= depth; d += 2, b += 2 * kGroupColumns) {
    const __m512 a0 = _mm512_set1_ps(a[d]), a1 = _mm512_set1_ps(a[d + 1]);
    for (int v = 0; v < V; ++v) {
      even[v] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + v * 16), even[v]);
      odd[v] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b + kGroupColumns + v * 16), odd[v]);
    }
  }
  if (d < depth) {
    const __m512 a0 = _mm512_set1_ps(a[d]);
    for (int v = 0; v < V; ++v) even[v] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + v * 16), even[v]);
  }
  const __m512 low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
  for (int v = 0; v < V; ++v) {
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(even[v], odd[v]), _mm512_loadu_ps(bias + v * 16));
    _mm512_mask_storeu_ps(c + v * 16, masks[v], _mm512_min_ps(high, _mm512_max_ps(low, sum)));
  }
}

using BlockFunction = void (*)(const Block&);
template <int V>
constexpr BlockFunction kBlockOfRows[kBlockRows] = {multiply_block<1, V>, multiply_block<2, V>, multiply_block<3, V>,
                                                   multiply_block<4, V>, multiply_block<5, V>, multiply_block<6, V>,
                                                   multiply_block<7, V>, multiply_block<8, V>};
// By the vectors of columns a group holds (1 to 3), then by rows (1 to 8).
constexpr const BlockFunction* kBlocks[kVectors] = {kBlockOfRows<1>, kBlockOfRows<2>, kBlockOfRows<3>};
using RowFunction = void (*)(const float*, const float*, int64_t, float*, const __mmask16*, const float*, float, float);
constexpr RowFunction kRows[kVectors] = {multiply_row<1>, multiply_row<2>, multiply_row<3>};

}  // namespace

// Slice by slice, every row block over the slice, which stays in L1 from the first block
// on. Meanwhile the blocks prefetch the next slice into L2, a share of its lines each:
// the thread's groups lie one after another, so the next slice is the next 256 steps of
// this group or the first of the next group. Without the prefetches, B coming from
// memory (a model's weights) ran the product 15-20% slower than from L3.
void multiply_group(const Product& p, const Operands& x, int64_t g, int64_t row0, int64_t row1) {
  const int64_t col0 = g * kGroupColumns;
  __mmask16 masks[kVectors];
  for (int64_t v = 0; v < kVectors; ++v) {
    const int64_t columns = least(16, most(0, p.n - col0 - v * 16));
    masks[v] = static_cast<__mmask16>((1u << columns) - 1u);
  }
  float bias[kGroupColumns] = {};
  if (x.bias)
    for (int64_t j = 0; j < least(kGroupColumns, p.n - col0); ++j) bias[j] = x.bias[col0 + j];
  const float* group = x.groups + g * p.k * kGroupColumns;
  const int64_t vectors = least(kVectors, (p.n - col0 + 15) / 16);
  if (p.m == 1) return kRows[vectors - 1](x.a, group, p.k, x.c + col0, masks, bias, p.lo, p.hi);
  const BlockFunction* block_of_rows = kBlocks[vectors - 1];
  const int64_t blocks = (row1 - row0 + kBlockRows - 1) / kBlockRows;
  for (int64_t k0 = 0; k0 < p.k; k0 += kSliceDepth) {
    Block block;
    block.depth = least(kSliceDepth, p.k - k0);
    block.b = group + k0 * kGroupColumns;
    block.lda = p.k, block.ldc = p.ldc, block.masks = masks, block.first = k0 == 0;
    block.lo = p.lo, block.hi = p.hi;
    if (k0 + block.depth == p.k) block.bias = bias;
    const float* next = block.b + block.depth * kGroupColumns;
    const int64_t next_lines =
        next < x.prefetch_end ? least(kSliceDepth * kGroupColumns, x.prefetch_end - next) / kLineFloats : 0;
    const int64_t lines_per_block = (next_lines + blocks - 1) / blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t row = row0 + b * kBlockRows, line0 = least(next_lines, b * lines_per_block);
      block.a = x.a + row * p.k + k0;
      block.c = x.c + row * p.ldc + col0;
      block.prefetch = next + line0 * kLineFloats;
      block.lines = least(next_lines, line0 + lines_per_block) - line0;
      block_of_rows[least(kBlockRows, row1 - row) - 1](block);
    }
  }
}

}  // namespace ember::avx512_gemm
