// MatMul, Gemm and their com.ember fused forms (bias, activation) on cuBLASLt.
//
// cuBLASLt is column-major; ember's tensors are row-major. A row-major [r, c] matrix
// is the column-major [c, r] one with the same bytes, so Y = op(A) op(B) is computed
// as Y^T = op(B)^T op(A)^T: cuBLASLt's "A" operand is our B, its "B" is our A, and its
// D (rows = N, cols = M, ld = N) is our Y. Its bias epilogue adds a vector of D's row
// count (our N) to every column, which is our row bias.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/dense_epilogue.h"
#include "ops/registry.h"

#include <ember/error.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ember {

namespace {

using cuda::check;

constexpr size_t kMaxWorkspace = size_t{32} << 20;  // the most one matmul may ask for
constexpr size_t kMaxCalls = 1024;                   // host-looped outer batches
constexpr uint32_t kAlignment = 16;                  // bytes we promise for every base pointer

// The largest power of two (at most 16) dividing `bytes`: the alignment of base + bytes
// for a 16-byte aligned base.
uint32_t alignment_of(int64_t bytes) {
  uint32_t a = kAlignment;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

// One row-major problem: Y[batch][m, n] = alpha * op(A)[m, k] op(B)[k, n] (+ ...).
// Stored A is [m, k] ([k, m] when trans_a), stored B is [k, n] ([n, k] when trans_b).
// `batch` matrices are one strided cuBLASLt call (a stride of 0 repeats the operand);
// `calls` are the element offsets of each call (several only when the batch dims
// broadcast in a way one stride cannot express).
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_y = 0;
  struct Call {
    int64_t a = 0, b = 0, y = 0;
  };
  std::vector<Call> calls{Call{}};
};

// The cuBLASLt part of a kernel: layouts, epilogue and algorithm fixed at plan time.
class LtMatmul {
 public:
  // C (when `c_full`) is a separate [m, n] matrix scaled by beta; else beta is 0.
  // `bias` asks for cuBLASLt's bias epilogue (a vector of n); `epilogue` is the
  // activation part (CUBLASLT_EPILOGUE_DEFAULT, _RELU or _GELU).
  bool plan(const cuda::StreamContext& ctx, DType dtype, const Problem& p, float alpha, float beta, bool c_full,
            bool bias, cublasLtEpilogue_t epilogue, size_t* workspace, std::string* why_not) {
    p_ = p;
    alpha_ = alpha;
    beta_ = c_full ? beta : 0.f;
    c_full_ = c_full;
    type_ = dtype == DType::Float16 ? CUDA_R_16F : CUDA_R_32F;
    esize_ = dtype == DType::Float16 ? 2 : 4;
    op_a_ = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our B
    op_b_ = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's B is our A
    epilogue_ = epilogue;
    if (bias) {
      epilogue_ = epilogue == CUBLASLT_EPILOGUE_RELU   ? CUBLASLT_EPILOGUE_RELU_BIAS
                  : epilogue == CUBLASLT_EPILOGUE_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                       : CUBLASLT_EPILOGUE_BIAS;
    }
    has_bias_ = bias;

    // Stored B: [k, n] is column-major n x k (ld n); [n, k] is column-major k x n (ld k).
    set_layout(&a_, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.stride_b);
    // Stored A: [m, k] is column-major k x m (ld k); [k, m] is column-major m x k (ld m).
    set_layout(&b_, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.stride_a);
    set_layout(&d_, p.n, p.m, p.n, p.stride_y);
    // C is read with D's layout (batch 1 whenever C is a separate matrix).

    uint32_t align_a = kAlignment, align_b = kAlignment, align_d = kAlignment;
    for (const Problem::Call& c : p.calls) {
      align_a = std::min(align_a, alignment_of(c.b * esize_));
      align_b = std::min(align_b, alignment_of(c.a * esize_));
      align_d = std::min(align_d, alignment_of(c.y * esize_));
    }

    cublasLtMatmulDescOpaque_t desc;
    // Not dereferenced by the heuristic, which reads the alignment off its value: a
    // bias in the arena is at least kAlignment-aligned (run() checks).
    init_desc(&desc, reinterpret_cast<const void*>(uintptr_t{kAlignment}));
    cublasLtMatmulPreferenceOpaque_t pref;
    check(cublasLtMatmulPreferenceInit(&pref), "cublasLtMatmulPreferenceInit");
    set_pref(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{kMaxWorkspace});
    set_pref(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
    set_pref(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
    set_pref(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c_full ? kAlignment : align_d);
    set_pref(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(ctx.blaslt, &desc, &a_, &b_, &d_, &d_, &pref, 1, &result, &found);
    if (status != CUBLAS_STATUS_SUCCESS || found < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
      *why_not = "cuBLASLt has no algorithm for this matmul (status " + std::to_string(static_cast<int>(status)) +
                 ", " + std::to_string(found) + " found)";
      return false;
    }
    algo_ = result.algo;
    workspace_ = result.workspaceSize;
    *workspace = std::max(*workspace, workspace_);
    return true;
  }

  // A, B, Y are the base pointers of our (row-major) operands; C the [m, n] matrix
  // when c_full; bias the [n] vector when planned with one.
  void run(const cuda::StreamContext& ctx, const void* a, const void* b, const void* c, const void* bias, void* y,
           void* workspace) const {
    check_aligned(a, "A");
    check_aligned(b, "B");
    check_aligned(y, "Y");
    if (c_full_) check_aligned(c, "C");
    if (has_bias_) check_aligned(bias, "the bias");
    cublasLtMatmulDescOpaque_t desc;  // on the stack: concurrent runs set their own bias pointer
    init_desc(&desc, has_bias_ ? bias : nullptr);
    // cublasLtMatmul only reads the layouts; the API takes them non-const.
    auto layout = [](const cublasLtMatrixLayoutOpaque_t& l) { return const_cast<cublasLtMatrixLayoutOpaque_t*>(&l); };
    const char* a_bytes = static_cast<const char*>(a);
    const char* b_bytes = static_cast<const char*>(b);
    char* y_bytes = static_cast<char*>(y);
    for (const Problem::Call& call : p_.calls) {
      void* d = y_bytes + call.y * esize_;
      const void* cp = c_full_ ? c : d;
      check(cublasLtMatmul(ctx.blaslt, &desc, &alpha_, b_bytes + call.b * esize_, layout(a_), a_bytes + call.a * esize_,
                           layout(b_), &beta_, cp, layout(d_), d, layout(d_), &algo_, workspace, workspace_, ctx.stream),
            "cublasLtMatmul");
    }
  }

 private:
  void set_layout(cublasLtMatrixLayoutOpaque_t* l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) const {
    check(cublasLtMatrixLayoutInit(l, type_, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
          "cublasLtMatrixLayoutInit");
    if (p_.batch > 1) {
      const int32_t count = static_cast<int32_t>(p_.batch);
      check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "setting the batch count");
      check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
            "setting the batch stride");
    }
  }

  template <class V>
  static void set_pref(cublasLtMatmulPreferenceOpaque_t* pref, cublasLtMatmulPreferenceAttributes_t attr, V value) {
    check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)), "cublasLtMatmulPreferenceSetAttribute");
  }

  void init_desc(cublasLtMatmulDescOpaque_t* desc, const void* bias) const {
    check(cublasLtMatmulDescInit(desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescInit");
    const int32_t op_a = op_a_, op_b = op_b_;
    const uint32_t epilogue = epilogue_;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)), "setting TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)), "setting TRANSB");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
          "setting the epilogue");
    if (has_bias_)
      check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
            "setting the bias pointer");
  }

  static void check_aligned(const void* p, const char* what) {
    if (reinterpret_cast<uintptr_t>(p) % kAlignment != 0)
      throw Error(std::string("cuBLASLt matmul: ") + what + " is not " + std::to_string(kAlignment) +
                  "-byte aligned (the algorithm was chosen for that)");
  }

  Problem p_;
  float alpha_ = 1.f, beta_ = 0.f;
  bool c_full_ = false, has_bias_ = false;
  cudaDataType_t type_ = CUDA_R_32F;
  int64_t esize_ = 4;
  cublasOperation_t op_a_ = CUBLAS_OP_N, op_b_ = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue_ = CUBLASLT_EPILOGUE_DEFAULT;
  cublasLtMatrixLayoutOpaque_t a_{}, b_{}, d_{};
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

// The activation cuBLASLt can apply itself (its GELU is the tanh approximation).
cublasLtEpilogue_t lt_activation(const cuda::Activation& act) {
  if (act.kind == cuda::FusedActivation::Relu) return CUBLASLT_EPILOGUE_RELU;
  if (act.kind == cuda::FusedActivation::GeluTanh) return CUBLASLT_EPILOGUE_GELU;
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// float32 or float16, every present input of the same type; else a reason.
bool same_float_inputs(const KernelInit& init, std::string* why_not) {
  const DType t = init.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float16) {
    *why_not = std::string(init.node.op_type) + " on CUDA takes float32 and float16, got " + dtype_name(t);
    return false;
  }
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != t) {
      *why_not = std::string("input ") + std::to_string(i) + " is " + dtype_name(init.inputs[i].dtype) +
                 ", input 0 is " + dtype_name(t) + " (mixed types are not supported on CUDA)";
      return false;
    }
  return true;
}

// The batch layout of MatMul's broadcast batch dims: the longest run of inner batch
// dims over which each operand is either repeated (stride 0) or contiguous becomes
// one strided call; the outer dims are looped on the host.
bool batch_problem(const Shape& a_in, const Shape& b_in, Problem* p, std::string* why_not) {
  Shape a = a_in, b = b_in;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  p->m = a[a.size() - 2];
  p->k = a.back();
  p->n = b.back();
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const int64_t mk = p->m * p->k, kn = p->k * p->n, mn = p->m * p->n;
  if (shape_numel(bb) == 1) {  // B is one matrix: A's batch folds into M
    p->m *= shape_numel(ab);
    return true;
  }
  // Batch dims right-aligned, with each operand's own row-major batch strides.
  const size_t rank = std::max(ab.size(), bb.size());
  std::vector<int64_t> ad(rank, 1), bd(rank, 1), yd(rank), as(rank, 0), bs(rank, 0);
  std::copy(ab.begin(), ab.end(), ad.begin() + (rank - ab.size()));
  std::copy(bb.begin(), bb.end(), bd.begin() + (rank - bb.size()));
  int64_t sa = mk, sb = kn;
  for (size_t i = rank; i-- > 0;) {
    yd[i] = std::max(ad[i], bd[i]);
    as[i] = ad[i] == 1 ? 0 : sa;
    bs[i] = bd[i] == 1 ? 0 : sb;
    sa *= ad[i];
    sb *= bd[i];
  }
  // Inner run: a dim joins while each operand stays repeated, or stays contiguous
  // (its stride equals the matrix size times the run's count so far).
  size_t inner_begin = rank;
  int64_t count = 1;
  int a_mode = -1, b_mode = -1;  // -1 unset, 0 repeated, 1 contiguous
  for (size_t i = rank; i-- > 0;) {
    if (yd[i] == 1) {
      inner_begin = i;
      continue;
    }
    const int am = as[i] == 0 ? 0 : 1, bm = bs[i] == 0 ? 0 : 1;
    if ((a_mode >= 0 && am != a_mode) || (b_mode >= 0 && bm != b_mode)) break;
    if ((am == 1 && as[i] != mk * count) || (bm == 1 && bs[i] != kn * count)) break;
    a_mode = am;
    b_mode = bm;
    count *= yd[i];
    inner_begin = i;
  }
  p->batch = count;
  p->stride_a = a_mode == 1 ? mk : 0;
  p->stride_b = b_mode == 1 ? kn : 0;
  p->stride_y = mn;
  // Outer dims: one call per index, offsets precomputed.
  int64_t outer = 1;
  for (size_t i = 0; i < inner_begin; ++i) outer *= yd[i];
  if (outer > static_cast<int64_t>(kMaxCalls)) {
    *why_not = "the batch dims broadcast into " + std::to_string(outer) + " separate matmuls (at most " +
               std::to_string(kMaxCalls) + ")";
    return false;
  }
  if (count > INT32_MAX) {
    *why_not = "more than 2^31 batched matrices";
    return false;
  }
  p->calls.clear();
  std::vector<int64_t> idx(inner_begin, 0);
  for (int64_t o = 0; o < outer; ++o) {
    Problem::Call c;
    for (size_t i = 0; i < inner_begin; ++i) {
      c.a += idx[i] * as[i];
      c.b += idx[i] * bs[i];
    }
    c.y = o * count * mn;
    p->calls.push_back(c);
    for (size_t i = inner_begin; i-- > 0;) {  // next multi-index, last dim fastest
      if (++idx[i] < yd[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

// MatMul and FusedMatMul (A, B, optional bias [N]).
class MatMulKernel final : public Kernel {
 public:
  bool plan(KernelInit& init, const cuda::Activation& act, const Problem& p, std::string* why_not) {
    half_ = init.inputs[0].dtype == DType::Float16;
    numel_ = shape_numel(init.outputs[0].shape);
    if (numel_ == 0) return true;  // nothing to compute
    const bool has_bias = init.inputs.size() > 2 && init.inputs[2].present();
    const cublasLtEpilogue_t lt_act = lt_activation(act);
    // cuBLASLt fuses the bias and Relu/GeluTanh; any other activation is our pass.
    lt_bias_ = has_bias;
    if (lt_act == CUBLASLT_EPILOGUE_DEFAULT && act.kind != cuda::FusedActivation::None) {
      epilogue_.act = act;
    }
    return lt_.plan(cuda::stream_context(init), init.inputs[0].dtype, p, 1.f, 0.f, false, lt_bias_, lt_act,
                    &init.workspace_bytes, why_not);
  }

  void run(const RunArgs& args) const override {
    if (numel_ == 0) return;
    const cuda::StreamContext& ctx = cuda::stream_context(args);
    void* y = args.outputs[0]->data();
    const void* bias = lt_bias_ ? args.inputs[2]->data() : nullptr;
    lt_.run(ctx, args.inputs[0]->data(), args.inputs[1]->data(), nullptr, bias, y, args.workspace);
    if (cuda::epilogue_needed(epilogue_)) {
      cuda::EpilogueArgs e = epilogue_;
      e.y = y;
      e.n = numel_;
      cuda::launch_epilogue(half_, e, ctx.stream);
      cuda::check_launch("MatMul activation");
    }
  }

 private:
  LtMatmul lt_;
  cuda::EpilogueArgs epilogue_;
  bool half_ = false, lt_bias_ = false;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_matmul(KernelInit& init, std::string* why_not) {
  if (!same_float_inputs(init, why_not)) return nullptr;
  cuda::Activation act;
  if (!cuda::parse_activation(init, &act, why_not)) return nullptr;
  Problem p;
  if (!batch_problem(init.inputs[0].shape, init.inputs[1].shape, &p, why_not)) return nullptr;
  if (p.k == 0 && shape_numel(init.outputs[0].shape) > 0) {
    *why_not = "an empty inner dimension (K = 0)";
    return nullptr;
  }
  auto kernel = std::make_unique<MatMulKernel>();
  if (!kernel->plan(init, act, p, why_not)) return nullptr;
  return kernel;
}

// Gemm and FusedGemm: Y = act(alpha * op(A) op(B) + beta * C), C broadcasting to
// [M, N]. A full C is cuBLASLt's C; a row vector with beta = 1 is its bias; any other
// C (a scalar, a column, a row with beta != 1) is added by our epilogue pass.
class GemmKernel final : public Kernel {
 public:
  bool plan(KernelInit& init, const cuda::Activation& act, std::string* why_not) {
    const auto& at = init.node.attributes;
    Problem p;
    p.trans_a = at.get_int_or("transA", 0) != 0;
    p.trans_b = at.get_int_or("transB", 0) != 0;
    const float alpha = at.get_float_or("alpha", 1.f), beta = at.get_float_or("beta", 1.f);
    const Shape& a = init.inputs[0].shape;
    p.m = init.outputs[0].shape[0];
    p.n = init.outputs[0].shape[1];
    p.k = p.trans_a ? a[0] : a[1];
    half_ = init.inputs[0].dtype == DType::Float16;
    numel_ = p.m * p.n;
    if (numel_ == 0) return true;
    if (p.k == 0) {
      *why_not = "an empty inner dimension (K = 0)";
      return false;
    }
    const bool has_c = init.inputs.size() > 2 && init.inputs[2].present() && beta != 0.f;
    Shape cs;
    if (has_c) {
      const Shape& c = init.inputs[2].shape;
      cs = c.size() == 2 ? c : Shape{1, c.empty() ? 1 : c[0]};  // [] and [x] are rows
    }
    const bool full_c = has_c && cs[0] == p.m && cs[1] == p.n && (p.m > 1 || p.n == 1);
    const bool row_c = has_c && !full_c && cs[0] == 1 && cs[1] == p.n && p.n > 1;
    c_full_ = full_c;
    lt_bias_ = row_c && beta == 1.f;
    cublasLtEpilogue_t lt_act = lt_activation(act);
    if (has_c && !c_full_ && !lt_bias_) {  // our pass adds beta * C, then the activation
      add_c_ = true;  // epilogue_.add is set per run
      epilogue_.add_scale = beta;
      epilogue_.add_cols = p.n;
      epilogue_.add_row_stride = cs[0] == 1 ? 0 : cs[1];
      epilogue_.add_col_stride = cs[1] == 1 ? 0 : 1;
      lt_act = CUBLASLT_EPILOGUE_DEFAULT;
    }
    if (lt_act == CUBLASLT_EPILOGUE_DEFAULT) epilogue_.act = act;
    return lt_.plan(cuda::stream_context(init), init.inputs[0].dtype, p, alpha, beta, c_full_, lt_bias_, lt_act,
                    &init.workspace_bytes, why_not);
  }

  void run(const RunArgs& args) const override {
    if (numel_ == 0) return;
    const cuda::StreamContext& ctx = cuda::stream_context(args);
    void* y = args.outputs[0]->data();
    const void* c = args.inputs.size() > 2 && args.inputs[2] ? args.inputs[2]->data() : nullptr;
    lt_.run(ctx, args.inputs[0]->data(), args.inputs[1]->data(), c_full_ ? c : nullptr, lt_bias_ ? c : nullptr, y,
            args.workspace);
    if (add_c_ || cuda::epilogue_needed(epilogue_)) {
      cuda::EpilogueArgs e = epilogue_;
      e.y = y;
      e.n = numel_;
      if (add_c_) e.add = c;
      cuda::launch_epilogue(half_, e, ctx.stream);
      cuda::check_launch("Gemm epilogue");
    }
  }

 private:
  LtMatmul lt_;
  cuda::EpilogueArgs epilogue_;
  bool half_ = false, c_full_ = false, lt_bias_ = false, add_c_ = false;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_gemm(KernelInit& init, std::string* why_not) {
  if (!same_float_inputs(init, why_not)) return nullptr;
  cuda::Activation act;
  if (!cuda::parse_activation(init, &act, why_not)) return nullptr;
  auto kernel = std::make_unique<GemmKernel>();
  if (!kernel->plan(init, act, why_not)) return nullptr;
  return kernel;
}

}  // namespace

EMBER_KERNEL("MatMul", "", 1, kMaxOpset, DeviceKind::Cuda, make_matmul);
EMBER_KERNEL("FusedMatMul", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_matmul);
EMBER_KERNEL("Gemm", "", 1, kMaxOpset, DeviceKind::Cuda, make_gemm);
EMBER_KERNEL("FusedGemm", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_gemm);

}  // namespace ember
