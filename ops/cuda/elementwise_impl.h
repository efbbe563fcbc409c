// The device side of the CUDA elementwise family, as the host code sees it: element
// types, the op lists (one X-macro per arity, shared by the host factories and the
// device dispatch so the two cannot disagree), the broadcast index passed to kernels
// by value, and the launchers. A plain C++ header: the .cu files define it.
//
// A new activation is one entry of the elementwise table (graph/elementwise_functions.h):
// launch_unary_function runs every function there.
#pragma once

#include "graph/elementwise_functions.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

// The element types the family handles (a DType subset, mapped in elementwise.h).
enum class EwType : int32_t { F32, F16, I32, I64, I8, U8, Bool, F64, BF16 };

constexpr uint32_t type_bit(EwType t) { return 1u << static_cast<int>(t); }
// Type sets an op accepts.
inline constexpr uint32_t kEwFloat = type_bit(EwType::F32) | type_bit(EwType::F16) | type_bit(EwType::BF16);
inline constexpr uint32_t kEwSigned = kEwFloat | type_bit(EwType::I32) | type_bit(EwType::I64);
inline constexpr uint32_t kEwBool = type_bit(EwType::Bool);

// Attribute values an op reads (which ones, per op, is written beside its functor).
struct EwParams {
  float alpha = 0.f, beta = 0.f;  // float attributes; Clip's bounds on floats
  int64_t lo = 0, hi = 0;         // Clip's bounds on integers; Mod: fmod in lo
};

// The unary ops of this family beyond the elementwise table's functions
// (graph/elementwise_functions.h): X(Name, accepted types, output is bool). Square and
// DivideBy serve other kernels (Pow by 2, Mean).
#define EMBER_CUDA_UNARY_OPS(X)                 \
  X(Clip, kEwSigned, false)                     \
  X(Identity, kEwSigned | kEwBool, false)       \
  X(Square, kEwFloat, false)                    \
  X(DivideBy, kEwFloat, false)                  \
  X(IsNaN, kEwFloat, true)                      \
  X(IsInf, kEwFloat, true)                      \
  X(Not, kEwBool, false)

// The types a table function takes here, by its table `types`.
inline constexpr uint32_t kEwTableFloat = kEwFloat;
inline constexpr uint32_t kEwTableSigned = kEwSigned;
inline constexpr uint32_t kEwTableNumeric = kEwSigned;  // unsigned integers run on the CPU

constexpr uint32_t accepted_types(ew::UnaryFunction f) {
  switch (f) {
#define EMBER_CUDA_TABLE_TYPES(Name, domain, since, types, ...) \
  case ew::UnaryFunction::Name: return kEwTable##types;
    EMBER_EW_UNARY_FUNCTIONS(EMBER_CUDA_TABLE_TYPES)
#undef EMBER_CUDA_TABLE_TYPES
  }
  return 0;
}

// Binary ops with numpy broadcasting: X(Name, accepted types, output is bool). Both
// inputs have one type, except Pow whose exponent may be any of kEwSigned.
#define EMBER_CUDA_BINARY_OPS(X)                \
  X(Add, kEwSigned, false)                      \
  X(Sub, kEwSigned, false)                      \
  X(Mul, kEwSigned, false)                      \
  X(Div, kEwSigned, false)                      \
  X(Max, kEwSigned, false)                      \
  X(Min, kEwSigned, false)                      \
  X(Mod, kEwSigned, false)                      \
  X(PRelu, kEwSigned, false)                    \
  X(Pow, kEwFloat, false)                       \
  X(Equal, kEwSigned | kEwBool, true)           \
  X(Less, kEwSigned, true)                      \
  X(LessOrEqual, kEwSigned, true)               \
  X(Greater, kEwSigned, true)                   \
  X(GreaterOrEqual, kEwSigned, true)            \
  X(And, kEwBool, false)                        \
  X(Or, kEwBool, false)                         \
  X(Xor, kEwBool, false)

#define EMBER_CUDA_OP_ENUM(name, types, bool_out) name,
enum class UnaryOp : int32_t { EMBER_CUDA_UNARY_OPS(EMBER_CUDA_OP_ENUM) };
enum class BinaryOp : int32_t { EMBER_CUDA_BINARY_OPS(EMBER_CUDA_OP_ENUM) };
#undef EMBER_CUDA_OP_ENUM

#define EMBER_CUDA_OP_TYPES(name, types, bool_out) \
  case Op::name: return types;
// The types `op` accepts for its (first) input.
constexpr uint32_t accepted_types(UnaryOp op) {
  using Op = UnaryOp;
  switch (op) { EMBER_CUDA_UNARY_OPS(EMBER_CUDA_OP_TYPES) }
  return 0;
}
constexpr uint32_t accepted_types(BinaryOp op) {
  using Op = BinaryOp;
  switch (op) { EMBER_CUDA_BINARY_OPS(EMBER_CUDA_OP_TYPES) }
  return 0;
}
#undef EMBER_CUDA_OP_TYPES

// ---- Broadcast index ------------------------------------------------------------------

inline constexpr int kEwMaxRank = 8;
inline constexpr int kEwMaxInputs = 3;

// n / divisor for 0 <= n < 2^31 and 1 <= divisor < 2^31 as a multiply-high, add and
// shift (the round-up method PyTorch's IntDivider uses): t = (n * mul) >> 32,
// n / divisor = (t + n) >> shift. t <= n, so t + n < 2^32 does not wrap.
struct FastDiv {
  uint32_t divisor = 1, mul = 1, shift = 0;
};

inline FastDiv make_fast_div(uint32_t divisor) {
  FastDiv f;
  f.divisor = divisor;
  while (f.shift < 32 && (uint64_t{1} << f.shift) < divisor) ++f.shift;  // 2^shift >= divisor
  const uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - divisor)) / divisor + 1;
  f.mul = static_cast<uint32_t>(magic);  // < 2^32 as 2^(shift-1) < divisor (see the tests)
  return f;
}

// The host mirror of the device division, for tests.
inline uint32_t fast_div_host(const FastDiv& f, uint32_t n) {
  const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * f.mul) >> 32);
  return (t + n) >> f.shift;
}

// The output shape (size-1 dims dropped, alike dims merged; dims[0] outermost) and
// each input's element stride per dim, 0 where it broadcasts. Made at plan time.
struct BroadcastIndex {
  int32_t rank = 1;
  int32_t num_inputs = 0;
  int64_t numel = 0;
  bool index32 = false;  // numel < 2^31: kernels index with uint32 and `div`
  int64_t dims[kEwMaxRank] = {1};
  int64_t strides[kEwMaxInputs][kEwMaxRank] = {};
  FastDiv div[kEwMaxRank] = {};

  // Input k is read at the output's index (no broadcast): rank 1, stride 1.
  bool flat(int k) const { return rank == 1 && strides[k][0] == 1; }
  // Input k is one element read everywhere.
  bool scalar(int k) const {
    for (int d = 0; d < rank; ++d)
      if (strides[k][d] != 0) return false;
    return true;
  }
};

// ---- Launchers (asynchronous on `stream`; nothing is launched for n == 0) --------------

// y = f(x) over n contiguous elements of `type`, for a function of the elementwise
// table. The caller has checked `type` against accepted_types(f).
void launch_unary_function(ew::UnaryFunction f, EwType type, const ew::Params& params, const void* x, void* y,
                           int64_t n, cudaStream_t stream);

// y = op(x) over n contiguous elements; x has `type`, y too (bool for the bool-output
// ops). The caller has checked `type` against accepted_types(op).
void launch_unary(UnaryOp op, EwType type, const EwParams& params, const void* x, void* y, int64_t n,
                  cudaStream_t stream);

// out = op(a, b) broadcast as `index` says (num_inputs 2); `a_type` is both inputs'
// type but for Pow, whose exponent has `b_type`. out may be a when a is flat.
void launch_binary(BinaryOp op, EwType a_type, EwType b_type, const EwParams& params, const void* a,
                   const void* b, void* out, const BroadcastIndex& index, cudaStream_t stream);

// out = cond ? x : y broadcast as `index` says (num_inputs 3), elements of
// `element_bytes` (1, 2, 4 or 8) bytes.
void launch_where(int element_bytes, const void* cond, const void* x, const void* y, void* out,
                  const BroadcastIndex& index, cudaStream_t stream);

// y = Cast(x) as ONNX defines it (float -> integer truncates toward zero, -> bool is
// "!= 0") over n elements.
void launch_cast(EwType from, EwType to, const void* x, void* y, int64_t n, cudaStream_t stream);

}  // namespace ember::cuda
