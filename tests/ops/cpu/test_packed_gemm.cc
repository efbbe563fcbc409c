// ember's own float32 product on constant B (ops/cpu/packed_gemm.h) against a plain
// double-precision loop, with the AVX2 blocks and, where the CPU has AVX-512, the
// AVX-512 ones: row counts that leave a partial register block (6 rows, 8), column
// counts that leave a partial panel (16 columns, 48), depths that leave a partial slice
// of K (256), a C wider than N, biases, every fused activation, NaN through the bounds;
// the panels' oneDNN descriptor against the layout the kernel reads; and which MatMul
// and Gemm nodes the registry gives it.
#include "graph/elementwise_table.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/packed_gemm.h"
#include "ops/cpu/vector_math.h"
#include "test_conv_util.h"

#include <cfloat>
#include <cstdlib>
#include <limits>

namespace ember::test {
namespace {

// The instruction sets whose blocks this CPU runs.
std::vector<CpuIsa> gemm_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512})
    if (cpu_supports(isa)) isas.push_back(isa);
  return isas;
}

// B [k, n] row-major packed as gemm_panels_desc documents it, by hand, in panels of w.
std::vector<float> packed_by_hand(const Tensor& b, int64_t w) {
  const int64_t k = b.shape()[0], n = b.shape()[1], panels = (n + w - 1) / w;
  std::vector<float> packed(static_cast<size_t>(panels * k * w), 0.f);
  for (int64_t d = 0; d < k; ++d)
    for (int64_t j = 0; j < n; ++j) packed[(j / w * k + d) * w + j % w] = b.data_as<float>()[d * n + j];
  return packed;
}

ew::Activation activation_of(const ActivationCase& a) {
  Node node = make_node("FusedMatMul", 2, 1, {}, "com.ember");
  set_activation(node, a);
  ew::Activation act;
  std::string why_not;
  EXPECT_TRUE(fused_activation_of(node, &act, &why_not)) << why_not;
  return act;
}

struct Product {
  int64_t m, k, n, ldc;
};

// C = act(A B + bias) by the kernel, against the loop. Tolerance: float32 sums of k
// products drift from the exact sum by at most about k * FLT_EPSILON * sum |a b| (the
// kernel sums in k order, one rounding per step); the activations are 1.2-Lipschitz at
// most here, and their vector forms a few ulp off (ops/cpu/vector_math.h): 1e-6 |y|.
void check_product(const Product& p, bool with_bias, const ActivationCase& a, CpuIsa isa) {
  SCOPED_TRACE(std::string(isa_name(isa)) + ": " + std::to_string(p.m) + " x " + std::to_string(p.k) + " x " +
               std::to_string(p.n) + ", ldc " + std::to_string(p.ldc) + (with_bias ? ", bias" : "") +
               ", activation '" + a.kind + "'");
  const Tensor x = random_floats({p.m, p.k}, 1), w = random_floats({p.k, p.n}, 2), bias = random_floats({p.n}, 3);
  const std::vector<float> panels = packed_by_hand(w, PackedGemm::panel_columns(isa));
  const PackedGemm gemm(p.m, p.k, p.n, p.ldc, activation_of(a), isa);
  std::vector<float> workspace(gemm.workspace_bytes() / sizeof(float) + 1);
  const float sentinel = -12345.f;  // C's columns past N must keep it
  std::vector<float> c(static_cast<size_t>(p.m * p.ldc), sentinel);
  gemm.run(x.data_as<float>(), panels.data(), with_bias ? bias.data_as<float>() : nullptr, c.data(), workspace.data());
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = with_bias ? bias.data_as<float>()[j] : 0.0, magnitude = std::abs(sum);
      for (int64_t d = 0; d < p.k; ++d) {
        const double term = double(x.data_as<float>()[i * p.k + d]) * w.data_as<float>()[d * p.n + j];
        sum += term;
        magnitude += std::abs(term);
      }
      const double want = activate(a.kind, a.params, static_cast<float>(sum));
      const double tolerance = 1.2 * (p.k + 1) * FLT_EPSILON * magnitude + 1e-6 * std::abs(want) + 1e-30;
      ASSERT_NEAR(c[i * p.ldc + j], want, tolerance) << "at row " << i << ", column " << j;
    }
    for (int64_t j = p.n; j < p.ldc; ++j) ASSERT_EQ(c[i * p.ldc + j], sentinel) << "wrote past N at row " << i;
  }
}

TEST(PackedGemm, MatchesAPlainProductOnOddShapes) {
  // AVX2: up to kSpreadBlocks blocks (M <= 96) each block prefetches its share of the
  // next panel in segments of its depth: 16 x 301 leaves a depth no share divides, and
  // 96 and 100 rows sit either side of the rule.
  static_assert(PackedGemm::kSpreadBlocks * kBlockRows == 96);
  // AVX-512: blocks of 1 to 8 rows, groups of 48 columns whole, partial (49, 100) and
  // fewer than 16 (37), last groups of one vector (49, 100, 150, 200), two (17, 500) and
  // three (37, 40), depths of one slice, a slice and a step, and three slices (the
  // sums carried through C between them), rows split between the threads (fewer than 4
  // groups) and groups split (150, 200 columns); single rows of odd and even depth
  // (their own kernel, two sums a vector).
  for (CpuIsa isa : gemm_isas())
    for (const Product& p : {Product{1, 1, 1, 1}, {5, 3, 7, 7}, {6, 16, 16, 16}, {7, 33, 17, 20}, {13, 300, 40, 40},
                             {16, 301, 64, 64}, {96, 257, 48, 50}, {100, 257, 48, 48}, {64, 129, 48, 48},
                             {20, 8, 100, 101}, {1, 301, 37, 40}, {1, 2, 16, 16}, {8, 256, 48, 48}, {9, 257, 49, 52},
                             {17, 700, 200, 203}, {3, 513, 150, 150}, {130, 300, 100, 100}, {1, 600, 500, 500}})
      for (bool with_bias : {false, true}) check_product(p, with_bias, {"", {}}, isa);
}

TEST(PackedGemm, AppliesEveryFusedActivation) {
  for (CpuIsa isa : gemm_isas())
    for (const ActivationCase& a : all_activations()) {
      check_product({13, 70, 40, 40}, true, a, isa);
      check_product({1, 70, 40, 40}, true, a, isa);  // a single row: its own kernel, the same stores
      check_product({11, 300, 200, 200}, true, a, isa);  // AVX-512: bounds on the last slice, groups split
    }
}

TEST(PackedGemm, SplitsThePanelsBetweenThreads) {
  // 96 panels (32 groups) of 130 rows by 64 deep: on AVX2 parallel_for gives each thread
  // a range of panels, and the last range prefetches no panel past its own. The AVX-512
  // blocks split these rows instead (B of 384 KB: PackedGemm::splits_rows).
  for (CpuIsa isa : gemm_isas()) check_product({130, 64, 1536, 1536}, true, {"Gelu", {}}, isa);
}

TEST(PackedGemm, SplitsTheRowsWhereBIsSmallAndTheGroupsWhereNot) {
  if (!cpu_supports(CpuIsa::Avx512)) GTEST_SKIP() << "the AVX-512 blocks need a CPU with AVX-512";
  // 64 rows by 6 groups of 256 deep (B of 288 KB): the rows split, each thread over all
  // groups, the last of two vectors (32 columns). 130 rows by 21 groups of 512 deep (B of
  // 2 MB, over kRowSplitBytes): the groups split, the last of two vectors (30 columns).
  static_assert(PackedGemm::kRowSplitBytes < 512 * 1008 * int64_t{sizeof(float)});
  check_product({64, 256, 272, 272}, true, {"Relu", {}}, CpuIsa::Avx512);
  check_product({130, 512, 990, 992}, true, {"Relu", {}}, CpuIsa::Avx512);
}

TEST(PackedGemm, TakesALargeAInChunksOfRows) {
  // AVX2: 2,500 rows of 512: 5 MB of A, three passes over the panels (1,020 rows, 1,020,
  // then 460 ending in a partial block of 4), each with its own GELU pass and bias.
  const int64_t chunk_rows = PackedGemm::kChunkBytes / (kBlockRows * 512 * int64_t{sizeof(float)}) * kBlockRows;
  ASSERT_EQ(chunk_rows, 1020);
  check_product({2500, 512, 40, 41}, true, {"Gelu", {}}, CpuIsa::Avx2);
  // AVX-512: 200 rows of 4,096 (3.2 MB) in chunks of 128 rows, then 72, over 5 groups.
  if (!cpu_supports(CpuIsa::Avx512)) GTEST_SKIP() << "the AVX-512 blocks need a CPU with AVX-512";
  ASSERT_EQ(PackedGemm::kWideChunkBytes / (4096 * int64_t{sizeof(float)}), 64) << "fewer than kWideChunkRows";
  check_product({200, 4096, 230, 230}, true, {"Gelu", {}}, CpuIsa::Avx512);
}

TEST(PackedGemm, NaNStaysNaNThroughTheBounds) {
  Tensor x = random_floats({7, 9}, 4);
  x.data_as<float>()[9 * 6 + 2] = std::numeric_limits<float>::quiet_NaN();  // row 6: the partial block
  x.data_as<float>()[1] = std::numeric_limits<float>::quiet_NaN();          // row 0: a whole block
  const Tensor w = random_floats({9, 20}, 5);
  for (CpuIsa isa : gemm_isas())
  for (const ActivationCase& a : {ActivationCase{"Relu", {}}, ActivationCase{"Clip", {-0.5f, 0.7f}}}) {
    SCOPED_TRACE(isa_name(isa));
    const std::vector<float> panels = packed_by_hand(w, PackedGemm::panel_columns(isa));
    const PackedGemm gemm(7, 9, 20, 20, activation_of(a), isa);
    std::vector<float> workspace(gemm.workspace_bytes() / sizeof(float) + 1), c(7 * 20);
    gemm.run(x.data_as<float>(), panels.data(), nullptr, c.data(), workspace.data());
    for (int64_t j = 0; j < 20; ++j) {
      EXPECT_TRUE(std::isnan(c[j])) << a.kind << " column " << j;
      EXPECT_TRUE(std::isnan(c[6 * 20 + j])) << a.kind << " column " << j;
      EXPECT_FALSE(std::isnan(c[20 + j])) << a.kind << " column " << j;
    }
  }
}

// The packed-weights cache makes the panels with a oneDNN reorder into gemm_panels_desc,
// and a given-back weight's other forms are reordered out of it: the descriptor must be
// the layout the kernel reads, from B as stored or transposed (Gemm's transB).
TEST(PackedGemm, PanelsDescriptorIsTheLayoutTheKernelReads) {
  for (const CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512})
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{5, 16}, {33, 17}, {64, 40}, {7, 100}}) {
    const int64_t columns = PackedGemm::panel_columns(isa);
    const Tensor w = random_floats({k, n}, 6);
    Tensor transposed(DType::Float32, {n, k});
    for (int64_t d = 0; d < k; ++d)
      for (int64_t j = 0; j < n; ++j) transposed.data_as<float>()[j * k + d] = w.data_as<float>()[d * n + j];
    const std::vector<float> want = packed_by_hand(w, columns);
    using dnnl::memory;
    const memory::desc row_major({k, n}, memory::data_type::f32, memory::dims{n, 1});
    const memory::desc column_major({k, n}, memory::data_type::f32, memory::dims{1, k});
    using Stored = std::pair<memory::desc, const void*>;
    for (const auto& [from, data] : {Stored{row_major, w.data()}, Stored{column_major, transposed.data()}}) {
      memory src(from, dnnl_engine(), const_cast<void*>(data)), dst(gemm_panels_desc(k, n, columns), dnnl_engine());
      dnnl::reorder(src, dst).execute(dnnl_stream(), src, dst);
      dnnl_stream().wait();
      ASSERT_EQ(dst.get_desc().get_size(), want.size() * sizeof(float));
      const float* got = static_cast<const float*>(dst.get_data_handle());
      for (size_t i = 0; i < want.size(); ++i) {
        const int64_t column = static_cast<int64_t>(i) / (k * columns) * columns + static_cast<int64_t>(i) % columns;
        if (column < n) {  // not the padding
          ASSERT_EQ(got[i], want[i]) << k << " x " << n << " in panels of " << columns << " at " << i;
        }
      }
    }
  }
}

// Which nodes the registry gives the kernel, by its --explain name.
std::string variant_of(const Node& node, const std::vector<const Tensor*>& inputs, DenseMath math = DenseMath::Float32,
                       bool values_known = true) {
  std::vector<TensorType> types(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) types[i] = {inputs[i]->dtype(), inputs[i]->shape()};
  const std::vector<const Tensor*> values = values_known ? inputs : std::vector<const Tensor*>(inputs.size());
  KernelInit init{node, 13, Device{}, types, values, infer_node(node, 13, types, values)};
  init.dense_math = math;
  std::string why;
  auto kernel = find_kernels(node.domain, node.op_type, 13, DeviceKind::Cpu).at(0)->factory(init, &why);
  if (!kernel) return "refused: " + why;
  return kernel->variant() ? kernel->variant() : "";
}

TEST(PackedGemm, RunsMatMulAndGemmOnConstantWeights) {
  if (cpu_isa() == CpuIsa::Scalar) GTEST_SKIP() << "ember's own product needs AVX2";
  const bool wide = cpu_isa() == CpuIsa::Avx512;
  const std::string own = wide ? "ember packed AVX-512" : "ember packed AVX2";
  const Tensor a = random_floats({2, 7, 256}, 7), b = random_floats({256, 17}, 8), row = random_floats({1, 256}, 9);
  EXPECT_EQ(variant_of(make_node("MatMul", 2), {&a, &b}), own);
  EXPECT_NE(variant_of(make_node("MatMul", 2), {&a, &b}, DenseMath::Float32, false), own) << "B unknown at plan time";
  EXPECT_EQ(variant_of(make_node("MatMul", 2), {&row, &b}), own) << "one row: the same panels, one form a weight";
  const Tensor shallow_a = random_floats({7, 255}, 7), shallow_b = random_floats({255, 17}, 8);
  EXPECT_NE(variant_of(make_node("MatMul", 2), {&shallow_a, &shallow_b}), own) << "K below 256: oneDNN's";
  const Tensor shallow_row = random_floats({1, 255}, 9);
  EXPECT_EQ(variant_of(make_node("MatMul", 2), {&shallow_row, &shallow_b}), "matrix-vector") << "one row below 256";
  const Tensor most_a = random_floats({2, 128, 512}, 17), more_a = random_floats({257, 512}, 17),
               narrow_b = random_floats({512, 16}, 18);
  EXPECT_EQ(variant_of(make_node("MatMul", 2), {&most_a, &narrow_b}), own) << "256 rows";
  if (wide)
    EXPECT_NE(variant_of(make_node("MatMul", 2), {&more_a, &narrow_b}), own) << "past 256 rows: oneDNN's on AVX-512";
  else
    EXPECT_EQ(variant_of(make_node("MatMul", 2), {&more_a, &narrow_b}), own) << "any rows on AVX2";
  setenv("EMBER_CPU_GEMM", "onednn", 1);
  EXPECT_NE(variant_of(make_node("MatMul", 2), {&a, &b}), own) << "EMBER_CPU_GEMM=onednn";
  unsetenv("EMBER_CPU_GEMM");
  EXPECT_EQ(variant_of(make_node("MatMul", 2), {&a, &b}), own) << "read as each kernel is made";
  Node transposed_a = make_node("FusedMatMul", 2, 1, {}, "com.ember");
  transposed_a.attributes.set_ints("perm_a", {0, 2, 1});
  const Tensor at = random_floats({2, 256, 7}, 10);
  EXPECT_NE(variant_of(transposed_a, {&at, &b}), own) << "A read transposed";

  const Tensor ga = random_floats({7, 256}, 11), gb = random_floats({17, 256}, 12), c = random_floats({17}, 13);
  Node gemm = make_node("Gemm", 3);
  gemm.attributes.set_int("transB", 1);
  gemm.attributes.set_float("beta", 0.5f);
  EXPECT_EQ(variant_of(gemm, {&ga, &gb, &c}), own);
  gemm.attributes.set_float("alpha", 2.f);
  EXPECT_NE(variant_of(gemm, {&ga, &gb, &c}), own) << "alpha is oneDNN's output scale";
}

// The bias shapes the fusion passes write ([N], [1, N], [1, 1, N]) on a FusedMatMul of a
// 3-D A with a fused GELU, the own kernel's path where the CPU takes it.
TEST(PackedGemm, FusedMatMulTakesEveryBiasShapeExportersWrite) {
  const Tensor a = random_floats({2, 7, 256}, 19), b = random_floats({256, 40}, 20);
  for (const Shape& bias_shape : {Shape{40}, Shape{1, 40}, Shape{1, 1, 40}}) {
    SCOPED_TRACE(shape_to_string(bias_shape));
    const Tensor bias = random_floats(bias_shape, 21);
    Node node = make_node("FusedMatMul", 3, 1, {}, "com.ember");
    set_activation(node, {"Gelu", {}});
    std::vector<double> want(14 * 40);
    for (int64_t i = 0; i < 14; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        double s = bias.data_as<float>()[j];
        for (int64_t d = 0; d < 256; ++d) s += double(a.data_as<float>()[i * 256 + d]) * b.data_as<float>()[d * 40 + j];
        want[i * 40 + j] = activate("Gelu", {}, static_cast<float>(s));
      }
    // float32 sums of 256 products in [-1, 1], then GELU (1.2-Lipschitz, a few ulp).
    expect_close(run_node(node, 13, {&a, &b, &bias})[0], want, 1e-5, 1e-4);
  }
}

// Gemm's beta scales its row C into the kernel's bias at plan time; beta 0 drops C.
TEST(PackedGemm, GemmBetaScalesOrDropsTheBiasRow) {
  const Tensor a = random_floats({7, 256}, 14), b = random_floats({17, 256}, 15), c = random_floats({17}, 16);
  for (float beta : {0.5f, 0.f}) {
    Node gemm = make_node("Gemm", 3);
    gemm.attributes.set_int("transB", 1);
    gemm.attributes.set_float("beta", beta);
    std::vector<double> want(7 * 17);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 17; ++j) {
        double s = beta * c.data_as<float>()[j];
        for (int64_t d = 0; d < 256; ++d) s += double(a.data_as<float>()[i * 256 + d]) * b.data_as<float>()[j * 256 + d];
        want[i * 17 + j] = s;
      }
    // float32 sums of 256 products in [-1, 1].
    expect_close(run_node(gemm, 13, {&a, &b, &c})[0], want, 1e-5, 1e-4);
  }
}

}  // namespace
}  // namespace ember::test
