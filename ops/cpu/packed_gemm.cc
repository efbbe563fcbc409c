#include "ops/cpu/packed_gemm.h"

#include "ops/cpu/packed_gemm_avx512.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ember {

void multiply_block_16(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride,
                       const BlockStore& store, const Prefetch& prefetch) {
  const float *v0 = v, *v1 = v + v_stride, *v2 = v1 + v_stride, *v3 = v2 + v_stride, *v4 = v3 + v_stride,
              *v5 = v4 + v_stride;
  // Named accumulators, not an array: GCC kept an array's in registers but stored them
  // to the stack on every step as well, and ran at half oneDNN's speed.
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  // Depth in segments, one prefetched line before each (no prefetch: one segment).
  const int64_t segment = prefetch.lines ? std::max<int64_t>(1, depth / prefetch.lines) : depth;
  int64_t d = 0;
  for (int64_t line = 0; d < depth; ++line) {
    if (line < prefetch.lines) _mm_prefetch(reinterpret_cast<const char*>(prefetch.from + line * 16), _MM_HINT_T0);
    for (const int64_t end = std::min(depth, d + segment); d < end; ++d, u += 16) {
      const __m256 b0 = _mm256_loadu_ps(u), b1 = _mm256_loadu_ps(u + 8);
      __m256 a = _mm256_broadcast_ss(v0 + d);
      c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
      a = _mm256_broadcast_ss(v1 + d);
      c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
      a = _mm256_broadcast_ss(v2 + d);
      c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
      a = _mm256_broadcast_ss(v3 + d);
      c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
      a = _mm256_broadcast_ss(v4 + d);
      c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
      a = _mm256_broadcast_ss(v5 + d);
      c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
  }
  const __m256 bias0 = store.bias ? _mm256_loadu_ps(store.bias) : _mm256_setzero_ps();
  const __m256 bias1 = store.bias ? _mm256_loadu_ps(store.bias + 8) : _mm256_setzero_ps();
  const __m256 lo = _mm256_set1_ps(store.lo), hi = _mm256_set1_ps(store.hi);
  const auto put = [&](float* to, __m256 sum, __m256 bias) {
    _mm256_storeu_ps(to, _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_add_ps(sum, bias))));
  };
  const __m256 rows[kBlockRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int64_t r = 0; r < kBlockRows; ++r) {
    put(m + r * m_stride, rows[r][0], bias0);
    put(m + r * m_stride + 8, rows[r][1], bias1);
  }
}

void multiply_block_8(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride) {
  const float *v0 = v, *v1 = v + v_stride, *v2 = v1 + v_stride, *v3 = v2 + v_stride, *v4 = v3 + v_stride,
              *v5 = v4 + v_stride;
  __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
  for (int64_t d = 0; d < depth; ++d, u += 8) {
    const __m256 b = _mm256_loadu_ps(u);
    c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(v0 + d), b, c0);
    c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(v1 + d), b, c1);
    c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(v2 + d), b, c2);
    c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(v3 + d), b, c3);
    c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(v4 + d), b, c4);
    c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(v5 + d), b, c5);
  }
  const __m256 rows[kBlockRows] = {c0, c1, c2, c3, c4, c5};
  for (int64_t r = 0; r < kBlockRows; ++r) _mm256_storeu_ps(m + r * m_stride, rows[r]);
}

namespace {

// m[0, 16) = sum over d < depth of v[d] * u[d * 16 + j], stored as multiply_block_16
// stores a row. A single row (a decoder's token) waits on the panels coming from memory;
// four sums, even and odd steps apart, keep its multiplies off each other's latency, so
// the stream alone sets the pace, and the hardware's prefetcher follows the one stream
// best. Sessions planned both ways, runs interleaved (tools/ab.py, 2 threads, medians),
// against the matrix-vector kernel (ops/cpu/matrix_vector.h) at one token: the 6-row
// block (its rows zeros but one) ran GPT-2 and BERT 1-11% slower; this row with the next
// panel prefetched as the block does, 4-11% slower; this row as it is, faster: BERT
// 25.0 -> 22.1 ms, GPT-2 37.5 -> 32.7, the Llama-style builder 13.4 -> 10.0.
void multiply_row_16(const float* v, const float* u, int64_t depth, float* m, const BlockStore& store) {
  __m256 even0 = _mm256_setzero_ps(), even1 = even0, odd0 = even0, odd1 = even0;
  int64_t d = 0;
  for (; d + 2 <= depth; d += 2, u += 32) {
    const __m256 a = _mm256_broadcast_ss(v + d), b = _mm256_broadcast_ss(v + d + 1);
    even0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(u), even0), even1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(u + 8), even1);
    odd0 = _mm256_fmadd_ps(b, _mm256_loadu_ps(u + 16), odd0), odd1 = _mm256_fmadd_ps(b, _mm256_loadu_ps(u + 24), odd1);
  }
  if (d < depth) {
    const __m256 a = _mm256_broadcast_ss(v + d);
    even0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(u), even0), even1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(u + 8), even1);
  }
  const __m256 lo = _mm256_set1_ps(store.lo), hi = _mm256_set1_ps(store.hi);
  const auto put = [&](float* to, __m256 sum, const float* bias) {
    if (bias) sum = _mm256_add_ps(sum, _mm256_loadu_ps(bias));
    _mm256_storeu_ps(to, _mm256_min_ps(hi, _mm256_max_ps(lo, sum)));
  };
  put(m, _mm256_add_ps(even0, odd0), store.bias);
  put(m + 8, _mm256_add_ps(even1, odd1), store.bias ? store.bias + 8 : nullptr);
}

}  // namespace

dnnl::memory::desc gemm_panels_desc(int64_t k, int64_t n, int64_t columns) {
  // oneDNN 2.6 names no such 2-D format: its blocking is spelled out. Element (d, j)
  // lies at (j / w) * K * w + d * w + j % w.
  dnnl::memory::desc md({k, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  dnnl_memory_desc_t& d = md.data;
  d.padded_dims[1] = (n + columns - 1) / columns * columns;
  dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
  blocking.strides[0] = columns;
  blocking.strides[1] = k * columns;
  blocking.inner_nblks = 1;
  blocking.inner_blks[0] = columns;
  blocking.inner_idxs[0] = 1;
  return md;
}

PackedGemm::PackedGemm(int64_t m, int64_t k, int64_t n, int64_t ldc, const ew::Activation& act, CpuIsa isa)
    : m_(m), k_(k), n_(n), ldc_(ldc), act_(act), wide_(isa == CpuIsa::Avx512) {
  panels_ = (n + columns() - 1) / columns();
  split_rows_ = wide_ && splits_rows(m, k, panels_);
  if (act.is(ew::UnaryFunction::Relu)) lo_ = 0.f;
  else if (act.kind == ew::Activation::Kind::Clip) lo_ = act.params.alpha, hi_ = act.params.beta;
  else activation_after_ = act.kind != ew::Activation::Kind::None;
}

// Whole models, sessions planned both ways and run interleaved in one process (Zen 3,
// 2 threads, batch 1, median ms, oneDNN for all -> this rule): GPT-2 (seq 128) 344 ->
// 297, ViT-B/16 337 -> 311, the Llama-style builder 109 -> 101, ConvNeXt 89.5 -> 87.2.
// ConvNeXt with every A up to 2 MB on this kernel took 94.4: its first stages' K of 96
// and 192 by thousands of rows ran slower here (K of 384 and up: even or faster).
// Larger A, in chunks of rows (kChunkBytes), against oneDNN's matmul at batch 8 (the same
// way, medians): GPT-2 2172 -> 2078 ms, ViT-B/16 2263 -> 2233, ConvNeXt 689 -> 662 (721
// -> 716 in a second sitting), Llama 698 -> 690, BERT (seq 128) 1435 -> 1403 in one
// sitting, 1484 -> 1508 and 1612 -> 1657 in two more: within a few percent either way,
// and one packed form per weight instead of two.
// On AVX-512 (a 2-core Xeon, sessions planned both ways in one process, tools/ab.py,
// medians, oneDNN -> these blocks): BERT-base (seq 128) 1.10x faster, GPT-2 1.06x, ViT
// 1.05x, the Llama-style builder 1.04x; GPT-2 at sequence 16 1.16x, at 64 1.15x, at 1
// even with the matrix-vector kernel. With more rows B's cost spreads over them, and
// oneDNN's blocks are the faster: BERT at batch 2 (256 rows) even, at batch 4 0.96x, at
// batch 8 0.89x.
bool PackedGemm::runs_faster(int64_t m, int64_t k, CpuIsa isa) {
  return k >= 256 && (isa != CpuIsa::Avx512 || m <= kWideMaxRows);
}

bool PackedGemm::enabled() {
  const char* gemm = std::getenv("EMBER_CPU_GEMM");
  return !gemm || std::string_view(gemm) != "onednn";
}

int64_t PackedGemm::panel_columns(CpuIsa isa) {
  return isa == CpuIsa::Avx512 ? avx512_gemm::kGroupColumns : kPanelColumns;
}

dnnl::memory::desc PackedGemm::panels_desc() const { return gemm_panels_desc(k_, n_, columns()); }

size_t PackedGemm::workspace_bytes() const {
  return copies_tail() ? static_cast<size_t>(kBlockRows * k_) * sizeof(float) : 0;
}

void PackedGemm::run(const float* a, const float* panels, const float* bias, float* c, void* workspace) const {
  if (wide_) return run_wide(a, panels, bias, c);
  const int64_t whole = m_ / kBlockRows;
  float* tail = static_cast<float*>(workspace);
  if (copies_tail()) {
    const int64_t rows = m_ - whole * kBlockRows;
    std::memcpy(tail, a + whole * kBlockRows * k_, static_cast<size_t>(rows * k_) * sizeof(float));
    std::fill(tail + rows * k_, tail + kBlockRows * k_, 0.f);
  }
  const Operands operands{a, tail, panels, bias, c};
  const int64_t blocks = (m_ + kBlockRows - 1) / kBlockRows;
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / (kBlockRows * k_ * static_cast<int64_t>(sizeof(float))));
  parallel_for(panels_, 2 * m_ * k_ * kPanelColumns, [&](int64_t begin, int64_t end) {
    for (int64_t first = 0; first < blocks; first += chunk) {
      const int64_t last = std::min(blocks, first + chunk);
      for (int64_t p = begin; p < end; ++p) multiply_panel(operands, p, p + 1 < end, first, last);
    }
  });
}

// Blocks [first, last) of rows times panel p, all of K at once: the panel stays in L1 or
// L2, the chunk of A in L2 or L3. Meanwhile, where `prefetch_next`, the next panel is
// prefetched, a share of its lines per block: fetched on demand, its first block ran at
// memory latency, and GPT-2's products ran 5-20% slower with B out of cache. With few
// blocks (kSpreadBlocks) the product waits on memory, and a block spreads its share
// through its depth; issued all at once, before it, they held the stream back. Spread
// against all at once (Zen 3, 2 threads, B out of cache, fastest of 40 runs each,
// interleaved, ms; whole models in the header):
//   K = 768, N = 3072:  M = 4  0.73 -> 0.68   12  0.87 -> 0.68   16  1.02 -> 0.87
//                       M = 24 1.19 -> 0.93   48  2.00 -> 1.81   96  3.66 -> 3.42   198  6.46 -> 6.82
//   K = 3072, N = 768:  M = 12 0.90 -> 0.77   16  1.11 -> 1.03   48  1.97 -> 1.84   96  3.68 -> 3.80
void PackedGemm::multiply_panel(const Operands& x, int64_t p, bool prefetch_next, int64_t first, int64_t last) const {
  const int64_t col0 = p * kPanelColumns, cols = std::min(kPanelColumns, n_ - col0);
  const int64_t whole = m_ / kBlockRows, blocks = last - first;
  float padded_bias[kPanelColumns] = {};
  if (x.bias) std::copy(x.bias + col0, x.bias + col0 + cols, padded_bias);
  const BlockStore store{x.bias ? padded_bias : nullptr, lo_, hi_};
  const float* panel = x.panels + p * k_ * kPanelColumns;
  const float* next = panel + k_ * kPanelColumns;
  const int64_t next_lines = prefetch_next ? k_ : 0;  // a line: one row of 16 floats
  const int64_t lines_per_block = (next_lines + blocks - 1) / blocks;
  const bool spread = blocks <= kSpreadBlocks;
  for (int64_t b = first; b < last; ++b) {
    float* out = x.c + b * kBlockRows * ldc_ + col0;
    if (m_ == 1) {  // no software prefetch: see multiply_row_16
      float row[kPanelColumns];
      multiply_row_16(x.a, panel, k_, cols == kPanelColumns ? out : row, store);
      if (cols < kPanelColumns) std::copy(row, row + cols, out);
      continue;
    }
    const int64_t line0 = std::min(next_lines, (b - first) * lines_per_block);
    const Prefetch share{next + line0 * kPanelColumns, std::min(next_lines, line0 + lines_per_block) - line0};
    if (!spread)
      for (int64_t line = 0; line < share.lines; ++line)
        _mm_prefetch(reinterpret_cast<const char*>(share.from + line * kPanelColumns), _MM_HINT_T0);
    const Prefetch in_block = spread ? share : Prefetch{};
    const float* rows = b < whole ? x.a + b * kBlockRows * k_ : x.tail;
    if (b < whole && cols == kPanelColumns) {
      multiply_block_16(rows, k_, panel, k_, out, ldc_, store, in_block);
      continue;
    }
    // A block past C's last row or column: whole in a tile, then its part that is C.
    float tile[kBlockRows * kPanelColumns];
    multiply_block_16(rows, k_, panel, k_, tile, kPanelColumns, store, in_block);
    const int64_t valid_rows = std::min(kBlockRows, m_ - b * kBlockRows);
    for (int64_t r = 0; r < valid_rows; ++r)
      std::copy(tile + r * kPanelColumns, tile + r * kPanelColumns + cols, out + r * ldc_);
  }
  // The activation the store's bounds cannot express, on the panel's columns of C while
  // they are in L2, in one call (per block's row, the calls' cost made GELU 60% slower).
  const int64_t row0 = first * kBlockRows, rows = std::min(m_, last * kBlockRows) - row0;
  if (activation_after_) activate(act_, x.c + row0 * ldc_ + col0, cols, rows, ldc_);
}

// Split by columns, each thread reads every row of A, and half of A was written by the
// other core (by the op before, split as this is): the first group's blocks then wait on
// lines coming from the other core's cache. Split by rows, a thread reads the rows it
// wrote (the ops before and after split their rows as this does) and all of B, which
// costs little while B is small. A product alone, after a pass that wrote A split as
// the product before it (2 threads, B from memory, medians of 1,000, groups -> rows, ms):
//   128 x 256 x 480 0.104 -> 0.090    128 x 512 x 288 0.128 -> 0.107   256 x 256 x 480
//   0.221 -> 0.189   64 x 256 x 480 0.059 -> 0.055   128 x 1024 x 288 0.262 -> 0.246
// B of 2 MB and more: 128 x 768 x 768 0.520 -> 0.534, 128 x 512 x 1008 even, 128 x 768
// x 3072 1.96 -> 2.04, 64 x 768 x 768 0.296 -> 0.380, 16 x 256 x 480 0.019 -> 0.020.
// Whole models, sessions planned both ways in one process (tools/ab.py, 2 threads,
// batch 1, sequence 128, medians): transformers' OLMo, Qwen3 and Gemma exports (hidden
// 256, MLP 512) 1.24x, 1.20x and 1.21x faster split by rows; the Llama-style builder
// (hidden 512) 1.04x. Fewer than 4 groups split by rows whatever B is, so both threads
// work.
bool PackedGemm::splits_rows(int64_t m, int64_t k, int64_t groups) {
  const int64_t b_bytes = groups * k * avx512_gemm::kGroupColumns * int64_t{sizeof(float)};
  return groups < 4 || (b_bytes <= kRowSplitBytes && m >= kRowSplitRows);
}

// The AVX-512 blocks (ops/cpu/packed_gemm_avx512.h), the groups of 48 columns split
// between the threads; A in chunks of rows (kWideChunkBytes), each chunk over every
// group of the thread's, so the chunk stays in L2. Where B is small (splits_rows) the
// rows are split instead, every thread reading all of B.
//
// Against oneDNN 2.6's brgemm matmul alone (2 threads, Xeon with AVX-512, B from memory
// as a model's weights are: 64 copies of it in turn; medians, oneDNN -> this, ms):
// 128 x 768 x 3072 2.23 -> 1.95, 128 x 768 x 768 0.56 -> 0.47, 128 x 3072 x 768 2.16 ->
// 2.00, in one sitting; the machine's slow spells moved such ratios by 0.1-0.2, so the
// rule (runs_faster) rests on whole models in one process. Chunks of 128-336 rows ran
// 1024 x 768 x 3072 within 5% of oneDNN, 32 rows 15% and 4 MB 30% behind.
void PackedGemm::run_wide(const float* a, const float* groups, const float* bias, float* c) const {
  const avx512_gemm::Product product{m_, k_, n_, ldc_, lo_, hi_};
  const int64_t width = avx512_gemm::kGroupColumns, rows_per_block = avx512_gemm::kBlockRows;
  const auto activate_after = [&](int64_t g, int64_t row0, int64_t row1) {
    if (activation_after_)
      activate(act_, c + row0 * ldc_ + g * width, std::min(width, n_ - g * width), row1 - row0, ldc_);
  };
  const float* groups_end = groups + panels_ * k_ * width;
  if (split_rows_) {
    const int64_t blocks = (m_ + rows_per_block - 1) / rows_per_block;
    parallel_for(blocks, 2 * k_ * rows_per_block * width * panels_, [&](int64_t begin, int64_t end) {
      const avx512_gemm::Operands x{a, groups, bias, c, groups_end};
      const int64_t row0 = begin * rows_per_block, row1 = std::min(m_, end * rows_per_block);
      for (int64_t g = 0; g < panels_; ++g) {
        avx512_gemm::multiply_group(product, x, g, row0, row1);
        activate_after(g, row0, row1);
      }
    });
    return;
  }
  const int64_t chunk = std::max<int64_t>(kWideChunkRows, kWideChunkBytes / (k_ * int64_t{sizeof(float)}) /
                                                              rows_per_block * rows_per_block);
  parallel_for(panels_, 2 * m_ * k_ * width, [&](int64_t begin, int64_t end) {
    const avx512_gemm::Operands x{a, groups, bias, c, groups + end * k_ * width};
    for (int64_t row0 = 0; row0 < m_; row0 += chunk) {
      const int64_t row1 = std::min(m_, row0 + chunk);
      for (int64_t g = begin; g < end; ++g) {
        avx512_gemm::multiply_group(product, x, g, row0, row1);
        activate_after(g, row0, row1);
      }
    }
  });
}

}  // namespace ember
