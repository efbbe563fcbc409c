// MatMul, Gemm and their com.ember fused forms (bias, activation) on oneDNN's matmul.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/matrix_vector.h"
#include "ops/cpu/packed_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ember {

namespace {

using dnnl::memory;

// B's dims with K (dim -2) contiguous: column-major matrices. oneDNN 2.6's GEMM-based
// matmul (its only one on an AVX2 CPU) takes "any" B as row-major and then ran 2.5-3x
// slower than on the same B column-major (Zen 3, 2 threads: 197x768 times 768x3072 at
// 42 vs 126 GFLOP/s, 128x768x768 at 68 vs 128; its plain sgemm: 117 and 136).
memory::desc k_contiguous(const memory::desc& md) {
  const memory::dims dims = md.dims();
  const size_t r = dims.size();
  memory::dims strides(r);
  strides[r - 2] = 1;
  strides[r - 1] = dims[r - 2];
  memory::dim step = dims[r - 2] * dims[r - 1];
  for (size_t i = r - 2; i-- > 0;) {
    strides[i] = step;
    step *= dims[i];
  }
  return memory::desc(dims, md.data_type(), strides);
}

// One oneDNN matmul with its descriptors; weights reordered at plan time when constant.
// Under bf16 math the operands are converted into the workspace at run time (constant
// weights once, at plan time) and the product accumulates and lands in float32.
class DnnlMatMul {
 public:
  // `b_md` describes B as it lies in memory (possibly transposed via strides);
  // `b_constant`: B is input 1's value known at plan time, packed once.
  void build(const KernelInit& init, const memory::desc& a_md, const memory::desc& b_md,
             const memory::desc& bias_md, const memory::desc& c_md, const dnnl::primitive_attr& attr,
             bool b_constant) {
    bias_md_ = bias_md;
    c_md_ = c_md;
    // An empty product (M, N or a batch dim 0) has nothing to compute, and oneDNN's
    // primitive descriptor divides by zero on it (fuzzing: SIGFPE on a Gemm of A [0, 3]).
    empty_ = c_md.get_size() == 0;
    if (empty_) return;
    const memory::desc a_computed = computed_as(a_md, init.dense_math);
    const memory::desc b_computed = computed_as(b_md, init.dense_math);
    double flops = 2.0 * static_cast<double>(a_md.dims().back());
    for (memory::dim d : c_md.dims()) flops *= static_cast<double>(d);
    DnnlThreadScope threads(dnnl_threads_for(init.num_threads, flops));
    std::optional<dnnl::matmul::primitive_desc> pd;
    if (b_constant && reads_wide_panels(init, b_computed)) pd = on_wide_panels(a_computed, b_computed, bias_md, c_md, attr);
    if (!pd) {
      const dnnl::matmul::desc desc(a_computed, b_constant ? any_layout(b_computed) : b_computed, bias_md, c_md);
      pd.emplace(desc, attr, dnnl_engine());
      if (b_constant && std::string_view(pd->impl_info_str()).starts_with("gemm") && b_computed.dims().size() >= 2)
        pd.emplace(dnnl::matmul::desc(a_computed, k_contiguous(b_computed), bias_md, c_md), attr, dnnl_engine());
    }
    prim_ = dnnl::matmul(*pd);
    a_md_ = pd->src_desc();
    b_md_ = pd->weights_desc();
    // On the panels, the form is named (and made) as the own product names it, so the
    // two kernels share one copy of the weight.
    if (b_constant) b_ = packed_constant(init, 1, b_md, panels_ ? *panels_ : b_md_);
    scratch_md_ = pd->scratchpad_desc();
    to_a_ = DnnlReorder(a_md, a_md_);
    if (!b_constant) to_b_ = DnnlReorder(b_md, b_md_);
    WorkspaceLayout ws;
    ws.take(std::max({scratch_md_.get_size(), to_a_.scratchpad(), to_b_.scratchpad()}));
    a_at_ = to_a_ ? ws.take(a_md_.get_size()) : 0;
    b_at_ = to_b_ ? ws.take(b_md_.get_size()) : 0;
    workspace_bytes_ = ws.total();
  }

  size_t workspace_bytes() const { return workspace_bytes_; }

  // Whether oneDNN reads this constant B from the AVX-512 product's panels (groups of 48
  // columns, each group's K rows in turn: oneDNN's BA16a48b where K is a multiple of 16)
  // rather than a form of its own: B of a depth the own product takes. The own product takes a weight's products of up to
  // 256 rows and oneDNN the larger (PackedGemm::runs_faster); a session that sees both
  // then holds the weight once, not twice.
  static bool reads_wide_panels(const KernelInit& init, const memory::desc& b) {
    const memory::dims dims = b.dims();
    return PackedGemm::enabled() && cpu_isa() == CpuIsa::Avx512 && init.dense_math == DenseMath::Float32 &&
           dims.size() == 2 && dims[0] % 16 == 0 && PackedGemm::runs_faster(1, dims[0]) && dims[1] > 0 &&
           b.data_type() == memory::data_type::f32 && panels_serve_columns(dims[1]);
  }

  // Whether oneDNN ran N columns as fast on the panels as on its own BA16a64b, at batch
  // 8 (tools/bench.py, alternated): where they fill the groups of 48 to within 1%
  // (oneDNN computes the padded columns too: a Llama-style builder's 512 and 1408, 3%
  // and 2% of padding, ran 2.5-3% slower), and no wider than kWidestPanels (GPT-2's
  // 50,257-column vocabulary projection made the model 3-4% slower; its other weights
  // on the panels, 1-3% faster).
  static constexpr int64_t kWidestPanels = 8192;
  static bool panels_serve_columns(int64_t n) {
    const int64_t columns = PackedGemm::panel_columns(CpuIsa::Avx512);
    const int64_t padded = (n + columns - 1) / columns * columns;
    return (padded - n) * 100 <= n && n <= kWidestPanels;
  }

  // oneDNN's matmul on B as panels, if it takes them with its brgemm kernels.
  std::optional<dnnl::matmul::primitive_desc> on_wide_panels(const memory::desc& a, const memory::desc& b,
                                                             const memory::desc& bias, const memory::desc& c,
                                                             const dnnl::primitive_attr& attr) {
    const memory::dims dims = b.dims();
    const int64_t columns = PackedGemm::panel_columns(CpuIsa::Avx512);
    if (columns != 48) return std::nullopt;  // BA16a48b's groups
    const memory::desc blocked(dims, memory::data_type::f32, memory::format_tag::BA16a48b);
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, blocked, bias, c), attr, dnnl_engine());
      if (!std::string_view(pd.impl_info_str()).starts_with("brg")) return std::nullopt;
      panels_ = gemm_panels_desc(dims[0], dims[1], columns);
      return pd;
    } catch (const dnnl::error&) {
      return std::nullopt;  // no implementation takes B so
    }
  }

  void run(const void* a, const void* b, const void* bias, void* c, void* workspace) const {
    if (empty_) return;
    char* ws = static_cast<char*>(workspace);
    if (to_a_) to_a_.run(a, ws + a_at_, ws), a = ws + a_at_;
    if (to_b_) to_b_.run(b, ws + b_at_, ws), b = ws + b_at_;
    dnnl_execute(prim_, handles_, {{DNNL_ARG_SRC, &a_md_, a},
                         {DNNL_ARG_WEIGHTS, &b_md_, b_ ? b_.get_data_handle() : b},
                         {DNNL_ARG_BIAS, bias ? &bias_md_ : nullptr, bias},
                         {DNNL_ARG_DST, &c_md_, c},
                         {DNNL_ARG_SCRATCHPAD, &scratch_md_, workspace}});
  }

 private:
  dnnl::matmul prim_;
  mutable DnnlHandles handles_;
  memory::desc a_md_, b_md_, bias_md_, c_md_, scratch_md_;
  std::optional<memory::desc> panels_;  // B's form when oneDNN reads the own product's panels
  memory b_;
  DnnlReorder to_a_, to_b_;
  size_t a_at_ = 0, b_at_ = 0, workspace_bytes_ = 0;
  bool empty_ = false;
};

bool float_inputs(const KernelInit& init, std::string* why_not) {
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !(*why_not = float32_only(init, i)).empty()) return false;
  return true;
}

// A MatMul operand or result as oneDNN reads it: dims and element strides.
struct StridedDims {
  Shape dims, strides;
  memory::desc desc(memory::data_type type = memory::data_type::f32) const {
    return {to_dnnl_dims(dims), type, to_dnnl_dims(strides)};
  }
};

// A tensor stored row-major in `stored` shape, read as Transpose(tensor, perm) (a
// FusedMatMul's perm_a / perm_b; empty: as stored).
StridedDims read_through(const Shape& stored, const std::vector<int64_t>& perm) {
  const Shape strides = contiguous_strides(stored);
  if (perm.empty()) return {stored, strides};
  StridedDims v;
  for (int64_t p : perm) v.dims.push_back(stored[p]), v.strides.push_back(strides[p]);
  return v;
}

// A product of dims `product` written as Transpose(product, perm) in row-major memory
// (perm_y; empty: as it is).
StridedDims written_through(const Shape& product, const std::vector<int64_t>& perm) {
  if (perm.empty()) return {product, contiguous_strides(product)};
  Shape stored;
  for (int64_t p : perm) stored.push_back(product[p]);
  const Shape stored_strides = contiguous_strides(stored);
  StridedDims v{product, Shape(product.size())};
  for (size_t j = 0; j < perm.size(); ++j) v.strides[perm[j]] = stored_strides[j];
  return v;
}

// B as a MatMul reads it: stored dims through perm_b, a 1-D B as one column.
StridedDims matmul_b(const KernelInit& init) {
  StridedDims b = read_through(init.inputs[1].shape, init.node.attributes.get_ints_or("perm_b", {}));
  if (b.dims.size() == 1) b = {{b.dims[0], 1}, {1, 1}};
  return b;
}

// Leading unit dims up to `rank` (their stride is never stepped).
void pad_rank(StridedDims& v, size_t rank) {
  const int64_t outer = v.dims.empty() ? 1 : v.dims[0] * v.strides[0];
  v.dims.insert(v.dims.begin(), rank - v.dims.size(), 1);
  v.strides.insert(v.strides.begin(), rank - v.strides.size(), outer);
}

// MatMul with numpy semantics: 1-D operands gain a unit dim that the output drops;
// batch dims broadcast. A 2-D B folds a row-major A's batch into M: one large GEMM.
// FusedMatMul's perm_a / perm_b / perm_y (transposes folded in by
// graph/passes/fold_matmul_transposes.cc) become strides. bfloat16 operands go to
// oneDNN as they are: it accumulates in float32 and rounds the result once to bfloat16.
class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(KernelInit& init, const ew::Activation& act) : activation_(act) {
    const memory::data_type type =
        init.inputs[0].dtype == DType::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
    const auto& at = init.node.attributes;
    const std::vector<int64_t> perm_y = at.get_ints_or("perm_y", {});
    StridedDims a = read_through(init.inputs[0].shape, at.get_ints_or("perm_a", {}));
    StridedDims b = matmul_b(init);
    if (a.dims.size() == 1) a = {{1, a.dims[0]}, {a.dims[0], 1}};
    const int64_t k = a.dims.back(), n = b.dims.back();
    const bool a_row_major = a.strides == contiguous_strides(a.dims);
    if (b.dims.size() == 2 && a_row_major && perm_y.empty()) {
      const int64_t rows = shape_numel(Shape(a.dims.begin(), a.dims.end() - 1));  // not numel / k: k may be 0
      a = read_through({rows, k}, {});
    } else {
      const size_t rank = std::max(a.dims.size(), b.dims.size());
      pad_rank(a, rank);
      pad_rank(b, rank);
    }
    Shape c(a.dims.begin(), a.dims.end() - 2);
    for (size_t i = 0; i < c.size(); ++i) c[i] = std::max(a.dims[i], b.dims[i]);
    c.insert(c.end(), {a.dims[a.dims.size() - 2], n});
    has_bias_ = init.inputs.size() > 2 && init.inputs[2].present();
    Shape bias(c.size(), 1);
    bias.back() = n;
    dnnl::post_ops ops;
    activation_.append_to(ops);
    mm_.build(init, a.desc(type), b.desc(type), has_bias_ ? plain_f32_desc(bias) : memory::desc(),
              written_through(c, perm_y).desc(type), make_dnnl_attr(ops),
              b.dims.size() == 2 && init.values[1]);
    init.workspace_bytes = mm_.workspace_bytes();
  }

  void run(const RunArgs& args) const override {
    mm_.run(args.inputs[0]->data(), args.inputs[1]->data(), has_bias_ ? args.inputs[2]->data() : nullptr,
            args.outputs[0]->data(), args.workspace);
    activation_.apply_after(args.outputs[0]->data_as<float>(), args.outputs[0]->numel());
  }

 private:
  FusedActivation activation_;
  DnnlMatMul mm_;
  bool has_bias_ = false;
};

// A bfloat16 product runs with bfloat16 A and B and without a fused bias or activation
// (those run float32 epilogues; such a FusedMatMul runs its decomposition instead).
bool plain_bf16_matmul(const KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != init.inputs[1].dtype) {
    *why_not = "bfloat16 mixed with another dtype is not supported";
    return false;
  }
  if (init.inputs.size() > 2 || !init.node.attributes.get_string_or("activation", "").empty()) {
    *why_not = "a bfloat16 FusedMatMul with a bias or an activation is not supported";
    return false;
  }
  return true;
}

// One row of A (every other dim of A 1, so no perm reorders its values) times a 2-D
// constant B: the matrix-vector kernel, with B as `*b_desc`.
bool matmul_is_matrix_vector(const KernelInit& init, memory::desc* b_desc) {
  const StridedDims b = matmul_b(init);
  if (b.dims.size() != 2 || shape_numel(init.inputs[0].shape) != b.dims[0]) return false;
  const bool bias = init.inputs.size() > 2 && init.inputs[2].present();
  if (bias && shape_numel(init.inputs[2].shape) != b.dims[1]) return false;  // the kernel reads n biases
  *b_desc = b.desc(memory::data_type::f32);
  return matrix_vector_applies(init, 1, b.dims[0], b.dims[1]);
}

// A product ember's own kernel runs (ops/cpu/packed_gemm.h): A [m, k] read row-major
// times a constant B [k, n] as `b` lays it out, plus a bias row: input 2 as it is, or
// `scaled_bias` (Gemm's beta * C) where given.
struct PackedProduct {
  int64_t m = 0, k = 0, n = 0;
  memory::desc b;
  bool bias = false;
  std::vector<float> scaled_bias;
};

// Whether ember's own product runs `init` (float32 inputs, as the factories checked)
// rather than oneDNN's: float32 math on an AVX2 or AVX-512 CPU (where oneDNN 2.6's matmul
// is its GEMM fallback, or brgemm kernels that wait on B coming from memory), a constant
// B, a product with something in it, and a shape it runs faster at
// (PackedGemm::runs_faster). K below 256 runs on oneDNN, with a packed form of B of its
// own, and single rows of it on the matrix-vector kernel. On AVX2 a weight's depth is
// the same in every plan, so a weight of 256 or more has the panels alone, whatever the
// rows; on AVX-512 oneDNN's matmul reads the same panels for the products of more than
// 256 rows where their columns fill the groups of 48 (DnnlMatMul::reads_wide_panels),
// and a weight whose columns do not (a Llama-style 512 or 1408) is packed twice in a
// session whose plans see both: the panels and oneDNN's form.
// EMBER_CPU_GEMM=onednn leaves every product to oneDNN (PackedGemm::enabled).
bool packed_product_applies(const KernelInit& init, const PackedProduct& p) {
  return PackedGemm::enabled() && cpu_isa() != CpuIsa::Scalar && init.dense_math == DenseMath::Float32 &&
         init.values[1] != nullptr && p.m > 0 && p.k > 0 && p.n > 0 && PackedGemm::runs_faster(p.m, p.k);
}

// Y = act(A B + bias) on ember's own product, B packed into panels once per session
// weight (and given back by the session where every reader packs it).
class PackedMatMulKernel final : public Kernel {
 public:
  PackedMatMulKernel(KernelInit& init, const ew::Activation& act, PackedProduct product)
      : gemm_(product.m, product.k, product.n, product.n, act), scaled_bias_(std::move(product.scaled_bias)),
        has_bias_(product.bias) {
    panels_ = packed_constant(init, 1, product.b, gemm_.panels_desc());
    init.workspace_bytes = gemm_.workspace_bytes();
  }

  const char* variant() const override { return gemm_.name(); }

  void run(const RunArgs& args) const override {
    const float* bias = !has_bias_ ? nullptr : scaled_bias_.empty() ? args.inputs[2]->data_as<float>() : scaled_bias_.data();
    gemm_.run(args.inputs[0]->data_as<float>(), static_cast<const float*>(panels_.get_data_handle()), bias,
              args.outputs[0]->data_as<float>(), args.workspace);
  }

 private:
  PackedGemm gemm_;
  memory panels_;
  std::vector<float> scaled_bias_;
  bool has_bias_;
};

// A MatMul or FusedMatMul that ember's own product runs: B 2-D (after perm_b), A row-major
// (no perm_a but the identity), no perm_y, a bias of n values.
bool matmul_is_packed_product(const KernelInit& init, PackedProduct* p) {
  const auto& at = init.node.attributes;
  const std::vector<int64_t> perm_a = at.get_ints_or("perm_a", {});
  for (size_t i = 0; i < perm_a.size(); ++i)
    if (perm_a[i] != static_cast<int64_t>(i)) return false;
  if (!at.get_ints_or("perm_y", {}).empty() || init.inputs[0].shape.empty()) return false;
  const StridedDims b = matmul_b(init);
  if (b.dims.size() != 2) return false;
  p->k = b.dims[0];
  p->n = b.dims[1];
  const Shape& a = init.inputs[0].shape;
  if (a.back() != p->k) return false;
  p->m = a.size() == 1 ? 1 : shape_numel(Shape(a.begin(), a.end() - 1));
  p->b = b.desc();
  p->bias = init.inputs.size() > 2 && init.inputs[2].present();
  return (!p->bias || shape_numel(init.inputs[2].shape) == p->n) && packed_product_applies(init, *p);
}

std::unique_ptr<Kernel> make_matmul(KernelInit& init, std::string* why_not) {
  const bool bf16 = init.inputs[0].dtype == DType::BFloat16 || init.inputs[1].dtype == DType::BFloat16;
  if (bf16 ? !plain_bf16_matmul(init, why_not) : !float_inputs(init, why_not)) return nullptr;
  const Shape& a = init.inputs[0].shape;
  init.flops = 2.0 * static_cast<double>(shape_numel(init.outputs[0].shape)) * static_cast<double>(a.empty() ? 1 : a.back());
  if (std::max(init.inputs[0].shape.size(), init.inputs[1].shape.size()) > 12) {
    *why_not = "oneDNN matmul supports rank 12 at most";
    return nullptr;
  }
  // The own product first: it runs single rows too, so its weights keep one packed form.
  if (PackedProduct product; !bf16 && matmul_is_packed_product(init, &product))
    return with_fused_activation<PackedMatMulKernel>(init, why_not, std::move(product));
  memory::desc b_desc;
  if (matmul_is_matrix_vector(init, &b_desc)) return make_matrix_vector_kernel(init, b_desc, why_not);
  return with_fused_activation<MatMulKernel>(init, why_not);
}

// Whether Gemm's C is a row of its N output columns ([N] or [1, N]): added to every row of
// Y, a bias.
bool gemm_c_is_row(const Shape& c, int64_t n) {
  return shape_numel(c) == n && (c.size() == 1 || (c.size() == 2 && c[0] == 1));
}

// Gemm's B [k, n] as stored: row-major, or column-major under transB.
memory::desc gemm_b_desc(const KernelInit& init, int64_t k, int64_t n) {
  const bool tb = init.node.attributes.get_int_or("transB", 0) != 0;
  return memory::desc({k, n}, memory::data_type::f32, tb ? memory::dims{1, k} : memory::dims{n, 1});
}

// beta * C's row, at plan time.
std::vector<float> scaled_row(const Tensor& c, float beta, int64_t n) {
  std::vector<float> row(n);
  for (int64_t j = 0; j < n; ++j) row[j] = beta * c.data_as<float>()[j];
  return row;
}

// Gemm: Y = act(alpha * op(A) op(B) + beta * C). A row vector C ([N], [1, N]) with
// alpha = 1 becomes the matmul's bias (scaled by beta at plan time when constant);
// any other C is broadcast into Y first and added by a sum post-op.
class GemmKernel final : public Kernel {
 public:
  GemmKernel(KernelInit& init, const ew::Activation& act) : activation_(act) {
    const auto& at = init.node.attributes;
    const bool ta = at.get_int_or("transA", 0) != 0;
    const float alpha = at.get_float_or("alpha", 1.f);
    beta_ = at.get_float_or("beta", 1.f);
    const Shape& a = init.inputs[0].shape;
    m_ = init.outputs[0].shape[0];
    n_ = init.outputs[0].shape[1];
    const int64_t k = ta ? a[0] : a[1];
    const memory::desc a_md({m_, k}, memory::data_type::f32, ta ? memory::dims{1, m_} : memory::dims{k, 1});
    const memory::desc b_md = gemm_b_desc(init, k, n_);

    const bool has_c = init.inputs.size() > 2 && init.inputs[2].present() && beta_ != 0.f;
    if (has_c) c_shape_ = init.inputs[2].shape;
    const bool row_c = has_c && n_ > 1 && gemm_c_is_row(c_shape_, n_);
    const Tensor* c_value = has_c ? init.values[2] : nullptr;
    use_bias_ = row_c && alpha == 1.f && (beta_ == 1.f || c_value);
    fill_c_ = has_c && !use_bias_;
    if (use_bias_ && beta_ != 1.f) scaled_bias_ = scaled_row(*c_value, beta_, n_);

    dnnl::post_ops ops;
    if (fill_c_) ops.append_sum(1.f);
    activation_.append_to(ops);
    dnnl::primitive_attr attr = make_dnnl_attr(ops);
    if (alpha != 1.f) attr.set_output_scales(0, {alpha});
    mm_.build(init, a_md, b_md, use_bias_ ? plain_f32_desc({1, n_}) : memory::desc(), plain_f32_desc({m_, n_}),
              attr, init.values[1] != nullptr);
    init.workspace_bytes = mm_.workspace_bytes();
  }

  void run(const RunArgs& args) const override {
    float* y = args.outputs[0]->data_as<float>();
    if (fill_c_) fill_with_c(args.inputs[2]->data_as<float>(), y);
    const void* bias = !use_bias_ ? nullptr
                       : scaled_bias_.empty() ? args.inputs[2]->data()
                                              : static_cast<const void*>(scaled_bias_.data());
    mm_.run(args.inputs[0]->data(), args.inputs[1]->data(), bias, y, args.workspace);
    activation_.apply_after(y, args.outputs[0]->numel());
  }

 private:
  // y[i, j] = beta * C broadcast from [], [1], [N], [1, N], [M, 1] or [M, N].
  void fill_with_c(const float* c, float* y) const {
    const Shape cs = c_shape_.size() == 2 ? c_shape_ : Shape{1, c_shape_.empty() ? 1 : c_shape_[0]};
    const int64_t row_step = cs[0] == 1 ? 0 : cs[1], col_step = cs[1] == 1 ? 0 : 1;
    parallel_for(m_, n_, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] = beta_ * c[i * row_step + j * col_step];
    });
  }

  FusedActivation activation_;
  DnnlMatMul mm_;
  int64_t m_ = 0, n_ = 0;
  float beta_ = 1.f;
  Shape c_shape_;
  bool use_bias_ = false, fill_c_ = false;
  std::vector<float> scaled_bias_;
};

// One row of A times constant B with alpha 1 and C, if any, a bias row added as it is
// (a batch-1 classifier head): the matrix-vector kernel, with B as `*b_desc`.
bool gemm_is_matrix_vector(const KernelInit& init, memory::desc* b_desc) {
  const auto& at = init.node.attributes;
  const int64_t m = init.outputs[0].shape[0], n = init.outputs[0].shape[1];
  const int64_t k = shape_numel(init.inputs[0].shape) / std::max<int64_t>(m, 1);
  *b_desc = gemm_b_desc(init, k, n);
  if (at.get_float_or("alpha", 1.f) != 1.f || !matrix_vector_applies(init, m, k, n)) return false;
  if (init.inputs.size() < 3 || !init.inputs[2].present()) return true;
  return at.get_float_or("beta", 1.f) == 1.f && gemm_c_is_row(init.inputs[2].shape, n);
}

// A Gemm that ember's own product runs: alpha 1, A not transposed, and C absent, or a
// row of n values added as it is, or scaled by beta when constant.
bool gemm_is_packed_product(const KernelInit& init, PackedProduct* p) {
  const auto& at = init.node.attributes;
  if (at.get_float_or("alpha", 1.f) != 1.f || at.get_int_or("transA", 0) != 0) return false;
  p->m = init.outputs[0].shape[0];
  p->n = init.outputs[0].shape[1];
  p->k = init.inputs[0].shape[1];
  p->b = gemm_b_desc(init, p->k, p->n);
  if (!packed_product_applies(init, *p)) return false;
  const float beta = at.get_float_or("beta", 1.f);
  p->bias = init.inputs.size() > 2 && init.inputs[2].present() && beta != 0.f;
  if (p->bias) {
    if (!gemm_c_is_row(init.inputs[2].shape, p->n) || (beta != 1.f && init.values[2] == nullptr)) return false;
    if (beta != 1.f) p->scaled_bias = scaled_row(*init.values[2], beta, p->n);
  }
  return true;
}

std::unique_ptr<Kernel> make_gemm(KernelInit& init, std::string* why_not) {
  if (!float_inputs(init, why_not)) return nullptr;
  const Shape& a = init.inputs[0].shape;
  if (a.size() == 2) {
    const int64_t k = init.node.attributes.get_int_or("transA", 0) ? a[0] : a[1];
    init.flops = 2.0 * static_cast<double>(shape_numel(init.outputs[0].shape)) * static_cast<double>(k);
  }
  if (PackedProduct product; gemm_is_packed_product(init, &product))  // first, as for MatMul
    return with_fused_activation<PackedMatMulKernel>(init, why_not, std::move(product));
  memory::desc b_desc;
  if (gemm_is_matrix_vector(init, &b_desc)) return make_matrix_vector_kernel(init, b_desc, why_not);
  return with_fused_activation<GemmKernel>(init, why_not);
}

}  // namespace

EMBER_KERNEL("MatMul", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_matmul>);
EMBER_KERNEL("FusedMatMul", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_matmul>);
EMBER_KERNEL("Gemm", "", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_gemm>);
EMBER_KERNEL("FusedGemm", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, dense_factory<make_gemm>);

}  // namespace ember
