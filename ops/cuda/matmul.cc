// MatMul, Gemm and their com.ember fused forms (bias, activation) on cuBLASLt. The
// batch layout and the row-major to column-major mapping are in matmul_plan.h; the
// algorithm is cuBLASLt's heuristic pick, or the fastest of its candidates timed at
// plan time on request (matmul_algorithm.h).
#include "graph/elementwise_table.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/dense_epilogue_impl.h"
#include "ops/cuda/matmul_algorithm.h"
#include "ops/cuda/matmul_plan.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

namespace ember {

namespace {

using cuda::check;

constexpr size_t kMaxWorkspace = size_t{32} << 20;  // the most one matmul may ask for
constexpr uint32_t kAlignment = 16;                  // bytes we promise for every base pointer
constexpr int kCandidates = 8;                       // heuristic results timed at plan time

// The largest power of two (at most 16) dividing `bytes`: the alignment of base + bytes
// for a 16-byte aligned base.
uint32_t alignment_of(int64_t bytes) {
  uint32_t a = kAlignment;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

using Problem = cuda::MatmulProblem;

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
    type_ = dtype == DType::Float16 ? CUDA_R_16F : dtype == DType::BFloat16 ? CUDA_R_16BF : CUDA_R_32F;
    esize_ = dtype == DType::Float32 ? 4 : 2;
    epilogue_ = epilogue;
    if (bias) {
      epilogue_ = epilogue == CUBLASLT_EPILOGUE_RELU   ? CUBLASLT_EPILOGUE_RELU_BIAS
                  : epilogue == CUBLASLT_EPILOGUE_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                       : CUBLASLT_EPILOGUE_BIAS;
    }
    has_bias_ = bias;

    const cuda::LtMapping map = cuda::lt_mapping(p);
    op_a_ = map.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    op_b_ = map.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_layout(&a_, map.a);
    set_layout(&b_, map.b);
    set_layout(&d_, map.d);  // C is read with D's layout (batch 1 whenever C is a separate matrix)

    // The alignment of every matrix start: each call's offset and, in a strided batch,
    // each matrix's (base + i * stride), so the stride counts too.
    uint32_t align_a = kAlignment, align_b = kAlignment, align_d = kAlignment;
    if (p.batch > 1) {
      align_a = alignment_of(map.a.batch_stride * esize_);
      align_b = alignment_of(map.b.batch_stride * esize_);
      align_d = alignment_of(map.d.batch_stride * esize_);
    }
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
    // Split-K partial sums must stay float32: the INPLACE and OUTPUT_TYPE schemes reduce
    // them in D's type, i.e. in half for float16 or bfloat16 (float32 D is float32 either
    // way).
    if (dtype != DType::Float32)
      set_pref(&pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
               uint32_t{CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE});
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(ctx.blaslt, &desc, &a_, &b_, &d_, &d_, &pref, kCandidates, results, &found);
    std::vector<cuda::LtAlgorithm> candidates;
    for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS) candidates.push_back({results[i].algo, results[i].workspaceSize});
    if (candidates.empty()) {
      *why_not = "cuBLASLt has no algorithm for this matmul (status " + std::to_string(static_cast<int>(status)) +
                 ", " + std::to_string(found) + " found)";
      return false;
    }
    const cuda::LtAlgorithm chosen = choose_algorithm(ctx, map, align_a, align_b, align_d, candidates);
    algo_ = chosen.algo;
    workspace_ = chosen.workspace;
    // Slack to raise the arena's 64-byte aligned pointer to 256 bytes in run().
    *workspace = std::max(*workspace, workspace_ ? workspace_ + 256 : 0);
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
    void* scratch = workspace_ ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(workspace) + 255) / 256 * 256)
                               : nullptr;
    const char* a_bytes = static_cast<const char*>(a);
    const char* b_bytes = static_cast<const char*>(b);
    char* y_bytes = static_cast<char*>(y);
    for (const Problem::Call& call : p_.calls) {
      void* d = y_bytes + call.y * esize_;
      const void* cp = c_full_ ? c : d;
      check(cublasLtMatmul(ctx.blaslt, &desc, &alpha_, b_bytes + call.b * esize_, layout(a_), a_bytes + call.a * esize_,
                           layout(b_), &beta_, cp, layout(d_), d, layout(d_), &algo_, scratch, workspace_, ctx.stream),
            "cublasLtMatmul");
    }
  }

 private:
  // The heuristic's candidates timed on scratch operands (matmul_algorithm.h), or its
  // first when timing is off, the operands too large to allocate twice, or none fits.
  cuda::LtAlgorithm choose_algorithm(const cuda::StreamContext& ctx, const cuda::LtMapping& map, uint32_t align_a,
                                     uint32_t align_b, uint32_t align_d,
                                     const std::vector<cuda::LtAlgorithm>& candidates) const {
    if (candidates.size() < 2 || !cuda::lt_timing_enabled()) return candidates.front();
    std::ostringstream problem;
    problem << ctx.device << ' ' << type_ << ' ' << epilogue_ << ' ' << op_a_ << op_b_ << ' ' << p_.batch << ' '
            << align_a << ',' << align_b << ',' << align_d << (c_full_ ? " c" : "") << (beta_ != 0.f ? " beta" : "");
    for (const cuda::LtOperand* o : {&map.a, &map.b, &map.d})
      problem << ' ' << o->rows << 'x' << o->cols << '/' << o->ld << '/' << o->batch_stride;
    const std::string key = problem.str();
    if (auto cached = cuda::cached_lt_algorithm(key)) return *cached;

    // Scratch A, B, D (also C) and bias, zeroed: the values do not change the speed.
    auto bytes = [&](const cuda::LtOperand& o) {
      const int64_t last = (p_.batch - 1) * o.batch_stride + (o.cols - 1) * o.ld + o.rows;
      return (static_cast<size_t>(std::max<int64_t>(last, 0)) * esize_ + 255) / 256 * 256;
    };
    const size_t a_bytes = bytes(map.a), b_bytes = bytes(map.b), d_bytes = bytes(map.d);
    const size_t bias_bytes = has_bias_ ? (static_cast<size_t>(map.d.rows) * esize_ + 255) / 256 * 256 : 0;
    const size_t total = a_bytes + b_bytes + d_bytes + bias_bytes;
    constexpr size_t kMaxScratch = size_t{1} << 30;
    void* scratch = nullptr;
    if (total > kMaxScratch || cudaMalloc(&scratch, total) != cudaSuccess) {
      cudaGetLastError();
      return candidates.front();
    }
    char* base = static_cast<char*>(scratch);
    const void* a = base;
    const void* b = base + a_bytes;
    void* d = base + a_bytes + b_bytes;
    const void* bias = has_bias_ ? base + a_bytes + b_bytes + d_bytes : nullptr;
    cudaMemsetAsync(scratch, 0, total, ctx.stream);
    cublasLtMatmulDescOpaque_t desc;
    init_desc(&desc, bias);
    auto layout = [](const cublasLtMatrixLayoutOpaque_t& l) { return const_cast<cublasLtMatrixLayoutOpaque_t*>(&l); };
    const cuda::LtAlgorithm best = cuda::fastest_lt_algorithm(
        key, candidates, ctx.stream, [&](const cuda::LtAlgorithm& c, void* workspace) {
          return cublasLtMatmul(ctx.blaslt, &desc, &alpha_, a, layout(a_), b, layout(b_), &beta_, d, layout(d_), d,
                                layout(d_), &c.algo, workspace, c.workspace, ctx.stream);
        });
    cudaStreamSynchronize(ctx.stream);
    cudaFree(scratch);
    cudaGetLastError();
    return best;
  }

  void set_layout(cublasLtMatrixLayoutOpaque_t* l, const cuda::LtOperand& o) const {
    check(cublasLtMatrixLayoutInit(l, type_, static_cast<uint64_t>(o.rows), static_cast<uint64_t>(o.cols), o.ld),
          "cublasLtMatrixLayoutInit");
    const int64_t stride = o.batch_stride;
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

// The activation cuBLASLt can apply itself (its GELU is the tanh approximation). Its
// GELU is left to float16 and bfloat16: cuBLASLt does not document that epilogue's accuracy, and
// CUTLASS's GELU_taylor epilogue evaluates tanh with tanh.approx.f32 (~2^-11 relative
// error), well past float32's tolerance; for float32 our epilogue pass (tanhf) runs it.
// In float16 it runs the erf GELU too: the two forms differ by at most 4.8e-4 (at
// x = 2.70), under half a float16 ulp of the output wherever |y| >= 0.25, and below
// 5.5e-5 where |y| < 0.0625; BERT and ViT match ONNX Runtime's float32 as closely
// either way, and fusing it took BERT-base at batch 64 from 4.84 to 4.08 ms (H100,
// 2026-11-26), GEMM + bias then our GELU pass being the slower. bfloat16's ulp is 8
// times float16's, so the same holds there with more room.
cublasLtEpilogue_t lt_activation(const cuda::Activation& act, DType dtype) {
  if (act.is(ew::UnaryFunction::Relu)) return CUBLASLT_EPILOGUE_RELU;
  const bool gelu = act.is(ew::UnaryFunction::GeluTanh) || act.is(ew::UnaryFunction::Gelu);
  if (gelu && dtype != DType::Float32) return CUBLASLT_EPILOGUE_GELU;
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// float32, float16 or bfloat16, every present input of the same type; else a reason.
bool same_float_inputs(const KernelInit& init, std::string* why_not) {
  const DType t = init.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16) {
    *why_not = std::string(init.node.op_type) + " on CUDA takes float32, float16 and bfloat16, got " + dtype_name(t);
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

// MatMul and FusedMatMul (A, B, optional bias [N]).
class MatMulKernel final : public Kernel {
 public:
  bool plan(KernelInit& init, const cuda::Activation& act, const Problem& p, std::string* why_not) {
    cuda::float_storage(init.inputs[0].dtype, &storage_);
    numel_ = shape_numel(init.outputs[0].shape);
    if (numel_ == 0) return true;  // nothing to compute
    const bool has_bias = init.inputs.size() > 2 && init.inputs[2].present();
    const cublasLtEpilogue_t lt_act = lt_activation(act, init.inputs[0].dtype);
    // cuBLASLt fuses the bias and Relu (either GELU in float16); any other activation is our pass.
    lt_bias_ = has_bias;
    if (lt_act == CUBLASLT_EPILOGUE_DEFAULT && act.kind != cuda::Activation::Kind::None) {
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
      cuda::launch_epilogue(storage_, e, ctx.stream);
      cuda::check_launch("MatMul activation");
    }
  }

 private:
  LtMatmul lt_;
  cuda::EpilogueArgs epilogue_;
  cuda::FloatStorage storage_ = cuda::FloatStorage::Float32;
  bool lt_bias_ = false;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_matmul(KernelInit& init, std::string* why_not) {
  for (const char* perm : {"perm_a", "perm_b", "perm_y"})
    if (init.node.attributes.has(perm)) {
      *why_not = std::string("strided operands (") + perm + ") are read by the CPU kernel only";
      return nullptr;
    }
  if (!same_float_inputs(init, why_not)) return nullptr;
  cuda::Activation act;
  if (!fused_activation_of(init.node, &act, why_not)) return nullptr;
  Problem p;
  if (!cuda::matmul_batch_problem(init.inputs[0].shape, init.inputs[1].shape, &p, why_not)) return nullptr;
  if (p.k == 0 && shape_numel(init.outputs[0].shape) > 0) {
    *why_not = "an empty inner dimension (K = 0)";
    return nullptr;
  }
  auto kernel = std::make_unique<MatMulKernel>();
  if (!kernel->plan(init, act, p, why_not)) return nullptr;
  return kernel;
}

// Gemm and FusedGemm: Y = act(alpha * op(A) op(B) + beta * C), C broadcasting to
// [M, N] (cuda::gemm_c says who adds it).
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
    cuda::float_storage(init.inputs[0].dtype, &storage_);
    numel_ = p.m * p.n;
    if (numel_ == 0) return true;
    if (p.k == 0) {
      *why_not = "an empty inner dimension (K = 0)";
      return false;
    }
    const bool has_c = init.inputs.size() > 2 && init.inputs[2].present();
    const cuda::GemmC c = cuda::gemm_c(p.m, p.n, has_c, has_c ? init.inputs[2].shape : Shape{}, beta);
    c_full_ = c.kind == cuda::GemmC::Full;
    lt_bias_ = c.kind == cuda::GemmC::Bias;
    cublasLtEpilogue_t lt_act = lt_activation(act, init.inputs[0].dtype);
    if (c.kind == cuda::GemmC::Add) {  // our pass adds beta * C, then the activation
      add_c_ = true;                   // epilogue_.add is set per run
      epilogue_.add_scale = beta;
      epilogue_.add_cols = p.n;
      epilogue_.add_row_stride = c.row_stride;
      epilogue_.add_col_stride = c.col_stride;
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
      cuda::launch_epilogue(storage_, e, ctx.stream);
      cuda::check_launch("Gemm epilogue");
    }
  }

 private:
  LtMatmul lt_;
  cuda::EpilogueArgs epilogue_;
  cuda::FloatStorage storage_ = cuda::FloatStorage::Float32;
  bool c_full_ = false, lt_bias_ = false, add_c_ = false;
  int64_t numel_ = 0;
};

std::unique_ptr<Kernel> make_gemm(KernelInit& init, std::string* why_not) {
  if (!same_float_inputs(init, why_not)) return nullptr;
  cuda::Activation act;
  if (!fused_activation_of(init.node, &act, why_not)) return nullptr;
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
