// The host-side plan of a CUDA matmul, apart from cuBLASLt so tests can check it
// without a GPU: how MatMul's broadcast batch dims become strided batched calls, and
// how a row-major problem maps onto cuBLASLt's column-major operands.
//
// A row-major [r, c] matrix is the column-major [c, r] one with the same bytes, so
// Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T: cuBLASLt's "A" operand is our
// B, its "B" is our A, and its D (rows = N, cols = M, ld = N) is our Y. Its bias
// epilogue adds a vector of D's row count (our N) to every column: our row bias.
#pragma once

#include <ember/core/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cuda {

// Y[batch][m, n] = op(A)[m, k] op(B)[k, n], row-major. Stored A is [m, k] ([k, m] when
// trans_a), stored B is [k, n] ([n, k] when trans_b). `batch` matrices are one strided
// call (a stride of 0 repeats the operand); `calls` hold the element offsets of each
// call (several only when the batch dims broadcast in a way one stride cannot express).
struct MatmulProblem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_y = 0;
  struct Call {
    int64_t a = 0, b = 0, y = 0;
  };
  std::vector<Call> calls{Call{}};
};

inline constexpr size_t kMaxMatmulCalls = 1024;

// MatMul's numpy semantics (1-D operands, broadcast batch dims) as a problem: a B with
// one matrix folds A's batch into M; otherwise the longest run of inner batch dims over
// which each operand is repeated or contiguous is one strided call, and the outer dims
// are calls. False with a reason past kMaxMatmulCalls calls.
bool matmul_batch_problem(const Shape& a_shape, const Shape& b_shape, MatmulProblem* p, std::string* why_not);

// One cuBLASLt matrix layout (column-major, as stored) and whether its op transposes it.
struct LtOperand {
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
  bool transpose = false;
};

struct LtMapping {
  LtOperand a, b, d;  // cuBLASLt's A (our B), B (our A), and D = C (our Y)
};

LtMapping lt_mapping(const MatmulProblem& p);

// How Gemm adds beta * C (C broadcasting to [m, n]): a full C is cuBLASLt's C matrix;
// a row [n] with beta = 1 is its bias epilogue; anything else (a scalar, a column, a
// row with beta != 1) is our epilogue pass, reading C[(i / n) * row_stride + (i % n) *
// col_stride] for element i of Y.
struct GemmC {
  enum Kind { None, Full, Bias, Add } kind = None;
  int64_t row_stride = 0, col_stride = 0;  // Add only
};

GemmC gemm_c(int64_t m, int64_t n, bool has_c, const Shape& c_shape, float beta);

}  // namespace ember::cuda
