// ember's own float32 matrix product: A [M, K] row-major times a constant B packed once
// into panels of columns, with the bias and the activation applied to each block of C
// while it is in registers or L1. On AVX2 the panels are 16 columns wide and the blocks
// 6 x 16; on AVX-512, 48 and 8 x 48 (ops/cpu/packed_gemm_avx512.h). It runs MatMul and
// Gemm on constant weights (ops/cpu/matmul.cc), and its AVX2 register blocks run the
// Winograd convolution's products (ops/cpu/winograd_conv.cc).
//
// Why not oneDNN's: on AVX2, oneDNN 2.6's GEMM-based matmul (its only one there) copies
// B into its own packed form on every call and applies bias and activation in a pass of
// its own afterwards. In GPT-2 at batch 1 (Zen 3, 2 threads) its products ran 30-80%
// behind ONNX Runtime's MLAS, which packs B once at session creation; the measurements
// are in the .cc. On AVX-512 oneDNN's brgemm kernels run well from cache, but a model's
// weights come from memory, and its products then ran 15-25% slower than from L3; the
// AVX-512 blocks prefetch the next slice of B while they work (measurements at
// PackedGemm::run_wide).
#pragma once

#include "graph/elementwise_functions.h"
#include "ops/cpu/vector_math.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>

namespace ember {

inline constexpr int64_t kBlockRows = 6;       // rows of A per register block
inline constexpr int64_t kPanelColumns = 16;   // columns of B per packed panel

// m[r][0, 16) = sum over d < depth of v[r * v_stride + d] * u[d * 16 + j], for r < 6:
// 12 accumulators, 2 vectors of u and a broadcast fill AVX2's 16 registers. m's rows
// are m_stride apart; each is stored as min(hi, max(lo, sum + bias[j])) (bias may be
// null; the bound first, so NaN stays NaN).
struct BlockStore {
  const float* bias = nullptr;
  float lo = -__builtin_inff(), hi = __builtin_inff();
};
// Lines of 16 floats from `from` on (another panel's), prefetched into L1 one at a time
// at even steps through the block's depth.
struct Prefetch {
  const float* from = nullptr;
  int64_t lines = 0;
};
void multiply_block_16(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride,
                       const BlockStore& store = {}, const Prefetch& prefetch = {});
// The same for a panel of 8 columns (u[d * 8 + j]), plain sums.
void multiply_block_8(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride);

// B [K, N] as panels of `columns` (16 or 48): columns [wp, wp + w) of every row, K rows
// of w floats, the last panel's columns past N zero. A oneDNN descriptor of dims {K, N},
// so the packed-weights cache makes it with packed_constant and can reorder it into
// another layout.
dnnl::memory::desc gemm_panels_desc(int64_t k, int64_t n, int64_t columns = kPanelColumns);

// C [M, N] (rows ldc apart) = act(A B + bias) for A [M, K] row-major and B packed as
// panels_desc(); the bias is [N] or absent. On AVX2 (the AVX-512 blocks: run_wide) A is
// taken in chunks of rows of kChunkBytes at most; each panel of B is read once per chunk, and every block of the
// chunk's rows multiplied by it over all of K, the panels split between the threads:
// the chunk stays in the caches while the panels stream past. Against oneDNN 2.6's
// matmul on the same product (2 threads, Zen 3, single-MatMul models, p50 of three
// alternations, oneDNN -> ember, ms):
//   128 x 768 x 3072    5.0-5.3 -> 4.3-4.6       256 x 768 x 3072   10.4-11.2 -> 8.4-8.5
//   512 x 768 x 3072   19.8-20.1 -> 16.3-17.3    1024 x 768 x 3072   36-43 -> 28-38
//   2048 x 768 x 768    17-21 -> 19-20           1024 x 3072 x 768   34-40 -> 36-42
// Without chunks, A of 3-12 MB ran even with oneDNN in a model of one MatMul, where A
// stayed in L3, and behind it inside models at batch 8, where A came from memory once
// per panel (ConvNeXt 6%). Slices of K (256) with chunks of A kept in L2, and A packed
// per slice as well, as BLAS libraries do, lost the smaller products' lead and stayed
// 10-25% behind on the larger.
class PackedGemm {
 public:
  PackedGemm() = default;
  // The AVX-512 blocks where `isa` is AVX-512, else the AVX2 ones.
  PackedGemm(int64_t m, int64_t k, int64_t n, int64_t ldc, const ew::Activation& act, CpuIsa isa = cpu_isa());

  // The panels this product reads: gemm_panels_desc at its width.
  dnnl::memory::desc panels_desc() const;
  // Columns per panel with `isa`'s blocks: 16 on AVX2, the AVX-512 blocks' groups of 48.
  static int64_t panel_columns(CpuIsa isa);
  const char* name() const { return wide_ ? "ember packed AVX-512" : "ember packed AVX2"; }

  // Rows of A per pass over the panels: 2 MB of them (B is read once per chunk). Inside
  // ConvNeXt at batch 8 (A up to 9.6 MB) the kernel ran 6% slower than oneDNN's without
  // chunks and 4% faster in chunks of 2 MB; BERT at batch 8 in chunks of 1 MB: even.
  static constexpr int64_t kChunkBytes = int64_t{2} << 20;

  // Chunks of at most this many register blocks (M <= 96) spread the next panel's
  // prefetches through each block's depth (see multiply_panel). Sessions planned both
  // ways in one process (tools/ab.py, 2 threads, medians), the burst -> spread: BERT-base
  // at sequence 16 50.0 -> 39.3 ms, 32 67.7 -> 60.8, 48 79.0 -> 72.6, 64 100.6 -> 95.5
  // (96: 2% faster, 128: even; ViT's 197 rows 1-3% slower); GPT-2 at sequence 8 65.2 ->
  // 46.5, at 16 75.9 -> 59.3; the Llama-style builder at 16 20.3 -> 18.0.
  static constexpr int64_t kSpreadBlocks = 16;

  // The AVX-512 blocks' chunks of A: rows of 1 MB, and at least 128 (a sequence of 128
  // at K = 3072 stays one chunk).
  static constexpr int64_t kWideChunkBytes = int64_t{1} << 20;
  static constexpr int64_t kWideChunkRows = 128;
  // The most rows the AVX-512 blocks take (more run on oneDNN's matmul; see the .cc).
  static constexpr int64_t kWideMaxRows = 256;
  // The AVX-512 blocks split the rows between the threads, not B's groups, where B's
  // panels take at most kRowSplitBytes and A has kRowSplitRows rows or more (see the .cc).
  static constexpr int64_t kRowSplitBytes = int64_t{3} << 19;  // 1.5 MB
  static constexpr int64_t kRowSplitRows = 32;

  // Whether a product of m rows of depth k runs faster here than on oneDNN's matmul: K of
  // 256 or more, and on AVX-512 at most kWideMaxRows rows.
  static bool runs_faster(int64_t m, int64_t k, CpuIsa isa = cpu_isa());
  // False where EMBER_CPU_GEMM=onednn (read on every call, as each plan is made): every
  // product on oneDNN, to compare the two in one process (tools/ab.py) or to work around
  // the own kernel.
  static bool enabled();

  // A's last M % 6 rows, copied into a whole register block (none for a single row).
  size_t workspace_bytes() const;
  void run(const float* a, const float* panels, const float* bias, float* c, void* workspace) const;

 private:
  struct Operands {
    const float *a, *tail, *panels, *bias;
    float* c;
  };
  void multiply_panel(const Operands& x, int64_t p, bool prefetch_next, int64_t first, int64_t last) const;
  void run_wide(const float* a, const float* groups, const float* bias, float* c) const;
  // Whether the AVX-512 blocks split A's m rows between the threads, not B's groups.
  static bool splits_rows(int64_t m, int64_t k, int64_t groups);
  int64_t columns() const { return panel_columns(wide_ ? CpuIsa::Avx512 : CpuIsa::Avx2); }
  // Whether A's last rows go to a whole block in the workspace: M not a multiple of 6,
  // and more than the one row the row kernel reads in place.
  bool copies_tail() const { return !wide_ && m_ > 1 && m_ % kBlockRows != 0; }

  int64_t m_ = 0, k_ = 0, n_ = 0, ldc_ = 0;
  int64_t panels_ = 0;  // of columns() each
  ew::Activation act_;
  float lo_ = -__builtin_inff(), hi_ = __builtin_inff();
  bool activation_after_ = false;  // a function the bounds cannot express
  bool wide_ = false;              // the AVX-512 blocks
  bool split_rows_ = false;        // splits_rows
};

}  // namespace ember
