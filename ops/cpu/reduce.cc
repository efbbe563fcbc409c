// CPU kernels for ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare.
//
// At plan time the input shape is collapsed into alternating runs of kept and reduced
// dimensions (size-1 dimensions dropped, neighbours of the same kind merged). Two loop
// shapes then cover every case with contiguous inner loops:
//  - innermost run reduced: each output folds contiguous runs of the input (ReduceMean
//    over the last axis, or over H*W as in GlobalAveragePool);
//  - innermost run kept: each output row folds whole input rows element-wise.
//
// float16 and bfloat16 accumulate in float32 and are rounded once, when the result is
// written.
#include <ember/core/float16.h>
#include "ops/cpu/parallel.h"
#include "graph/schemas/reduce.h"
#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

namespace ember {

namespace {

constexpr int kMaxDims = 16;
constexpr int64_t kChunk = 128;  // output columns folded together in the "kept" loop shape

// Accumulators: the element type for float32/float64, float32 for float16 and
// bfloat16, int64 for integers (wraps like numpy's sum).
template <class T>
constexpr bool kHalfWidth = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <class T>
using AccOf = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<kHalfWidth<T>, float, T>>;

// Each reduction is init / map (per element, `shift` used by LogSumExp) / combine /
// finish (given the element count). All static so loops inline and vectorize.
struct SumOp {
  template <class T, class A> static A init() { return A(0); }
  template <class T, class A> static A map(T x, A) { return A(x); }
  template <class A> static A combine(A a, A b) { return a + b; }
  template <class T, class A> static T finish(A a, int64_t) { return T(a); }
};
struct MeanOp : SumOp {
  template <class T, class A> static T finish(A a, int64_t n) {
    if constexpr (std::is_integral_v<T>) return n ? T(double(a) / double(n)) : T(0);
    else return T(a / A(n));  // 0/0 is NaN for an empty reduction, as numpy gives
  }
};
struct MaxOp {
  template <class T, class A> static A init() {  // A's infinity: float16 has no numeric_limits
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  template <class T, class A> static A map(T x, A) { return A(x); }
  template <class A> static A combine(A a, A b) { return a > b ? a : b; }
  template <class T, class A> static T finish(A a, int64_t) { return T(a); }
};
struct MinOp : MaxOp {
  template <class T, class A> static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<T>::max();
  }
  template <class A> static A combine(A a, A b) { return a < b ? a : b; }
};
struct ProdOp : SumOp {
  template <class T, class A> static A init() { return A(1); }
  template <class A> static A combine(A a, A b) { return a * b; }
};
struct L1Op : SumOp {
  template <class T, class A> static A map(T x, A) { return A(x) < 0 ? -A(x) : A(x); }
};
struct SumSquareOp : SumOp {
  template <class T, class A> static A map(T x, A) { return A(x) * A(x); }
};
struct L2Op : SumSquareOp {
  template <class T, class A> static T finish(A a, int64_t) { return T(std::sqrt(double(a))); }
};
struct LogSumOp : SumOp {
  template <class T, class A> static T finish(A a, int64_t) { return T(std::log(double(a))); }
};
// Second pass of LogSumExp: sum of exp(x - shift), shift being the first pass's max.
struct ExpSumOp : SumOp {
  template <class T, class A> static A map(T x, A shift) { return std::exp(A(x) - shift); }
};
struct LogSumExpOp {};  // marker: runs MaxOp, then ExpSumOp

// LogSumExp shifts by the max so exp cannot overflow; infinities do not shift (an
// infinite max would turn x - max into NaN), as the ONNX reference does.
template <class A>
A finite_or_zero(A m) {
  return std::isfinite(m) ? m : A(0);
}

struct Dims {
  int n = 0;
  std::array<int64_t, kMaxDims> size{}, stride{};
};

// The collapsed problem, computed once per node.
struct ReducePlan {
  Dims kept, reduced;        // outer-to-inner, input strides in elements
  bool inner_reduced = true; // which loop shape applies
  int64_t out_count = 1, reduce_count = 1;
};

bool build_plan(const Shape& shape, const std::vector<bool>& reduced_mask, ReducePlan* plan) {
  int64_t stride = 1;
  std::vector<int64_t> sizes, strides;
  std::vector<bool> kinds;
  std::vector<int64_t> elem_stride(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    elem_stride[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!kinds.empty() && kinds.back() == reduced_mask[d]) {
      sizes.back() *= shape[d];
      strides.back() = elem_stride[d];
    } else {
      sizes.push_back(shape[d]);
      strides.push_back(elem_stride[d]);
      kinds.push_back(reduced_mask[d]);
    }
  }
  if (sizes.size() > kMaxDims) return false;
  plan->inner_reduced = kinds.empty() || kinds.back();
  for (size_t i = 0; i < sizes.size(); ++i) {
    Dims& dims = kinds[i] ? plan->reduced : plan->kept;
    dims.size[dims.n] = sizes[i];
    dims.stride[dims.n] = strides[i];
    ++dims.n;
    (kinds[i] ? plan->reduce_count : plan->out_count) *= sizes[i];
  }
  return true;
}

// Input offset of kept-coordinate index `o` over the first `n` kept dims.
int64_t kept_offset(const Dims& dims, int n, int64_t o) {
  int64_t offset = 0;
  for (int d = n - 1; d >= 0; --d) {
    offset += (o % dims.size[d]) * dims.stride[d];
    o /= dims.size[d];
  }
  return offset;
}

// Calls fn(offset) for every coordinate of the first `n` dims of `dims`, in order.
template <class Fn>
void for_each_offset(const Dims& dims, int n, const Fn& fn) {
  std::array<int64_t, kMaxDims> index{};
  int64_t offset = 0;
  while (true) {
    fn(offset);
    int d = n - 1;
    for (; d >= 0; --d) {
      offset += dims.stride[d];
      if (++index[d] < dims.size[d]) break;
      offset -= dims.stride[d] * dims.size[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Folds a contiguous run with independent partial accumulators: floating-point
// reductions do not reassociate on their own, so this is what lets GCC vectorize.
template <class Op, class T, class A>
A fold_run(const T* x, int64_t n, A acc, A shift) {
  constexpr int kLanes = 16;
  if (n >= kLanes) {
    A lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = Op::template init<T, A>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j)
        lanes[j] = Op::combine(lanes[j], Op::template map<T, A>(x[i + j], shift));
    for (int j = 0; j < kLanes; ++j) acc = Op::combine(acc, lanes[j]);
    x += i;
    n -= i;
  }
  for (int64_t i = 0; i < n; ++i) acc = Op::combine(acc, Op::template map<T, A>(x[i], shift));
  return acc;
}

template <class Op, class T>
class ReduceKernel final : public Kernel {
  using A = AccOf<T>;

 public:
  explicit ReduceKernel(const ReducePlan& plan) : plan_(plan) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    if (plan_.out_count == 0) return;
    if (plan_.reduce_count == 0) {
      std::fill(y, y + plan_.out_count, empty_value());
    } else if (plan_.inner_reduced) {
      run_inner_reduced(x, y);
    } else {
      run_inner_kept(x, y);
    }
  }

 private:
  static constexpr bool kTwoPass = std::is_same_v<Op, LogSumExpOp>;

  template <class O> static A init() { return O::template init<T, A>(); }

  // What reducing zero elements gives: the op's identity through its finish step.
  T empty_value() const {
    if constexpr (kTwoPass) return T(-std::numeric_limits<A>::infinity());
    else return finish(init<Op>(), A(0));
  }

  T finish(A acc, A shift) const {
    if constexpr (kTwoPass) return T(std::log(acc) + shift);
    else return Op::template finish<T, A>(acc, plan_.reduce_count);
  }

  // Folds every run of the input that maps to the output at `base`.
  template <class O>
  A fold_output(const T* x, int64_t base, A shift) const {
    const Dims& r = plan_.reduced;
    const int outer = r.n > 0 ? r.n - 1 : 0;
    const int64_t run = r.n > 0 ? r.size[r.n - 1] : 1;
    A acc = init<O>();
    for_each_offset(r, outer, [&](int64_t off) { acc = fold_run<O>(x + base + off, run, acc, shift); });
    return acc;
  }

  void run_inner_reduced(const T* x, T* y) const {
    parallel_for(plan_.out_count, plan_.reduce_count, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const int64_t base = kept_offset(plan_.kept, plan_.kept.n, o);
        if constexpr (kTwoPass) {
          const A m = finite_or_zero(fold_output<MaxOp>(x, base, A(0)));
          y[o] = finish(fold_output<ExpSumOp>(x, base, m), m);
        } else {
          y[o] = finish(fold_output<Op>(x, base, A(0)), A(0));
        }
      }
    });
  }

  // Folds whole rows of `width` columns into acc[0..width), element-wise.
  template <class O>
  void fold_columns(const T* x, int64_t width, A* acc, const A* shift) const {
    for (int64_t j = 0; j < width; ++j) acc[j] = init<O>();
    for_each_offset(plan_.reduced, plan_.reduced.n, [&](int64_t off) {
      const T* row = x + off;
      for (int64_t j = 0; j < width; ++j)
        acc[j] = O::combine(acc[j], O::template map<T, A>(row[j], shift ? shift[j] : A(0)));
    });
  }

  void run_inner_kept(const T* x, T* y) const {
    const Dims& k = plan_.kept;
    const int64_t width = k.size[k.n - 1];
    const int64_t chunks = (width + kChunk - 1) / kChunk;
    const int64_t rows = plan_.out_count / width;
    parallel_for(rows * chunks, kChunk * plan_.reduce_count, [&](int64_t begin, int64_t end) {
      A acc[kChunk], shift[kChunk];
      for (int64_t item = begin; item < end; ++item) {
        const int64_t row = item / chunks, c0 = item % chunks * kChunk;
        const int64_t w = std::min(kChunk, width - c0);
        const T* in = x + kept_offset(k, k.n - 1, row) + c0;
        T* out = y + row * width + c0;
        if constexpr (kTwoPass) {
          fold_columns<MaxOp>(in, w, shift, nullptr);
          for (int64_t j = 0; j < w; ++j) shift[j] = finite_or_zero(shift[j]);
          fold_columns<ExpSumOp>(in, w, acc, shift);
          for (int64_t j = 0; j < w; ++j) out[j] = finish(acc[j], shift[j]);
        } else {
          fold_columns<Op>(in, w, acc, nullptr);
          for (int64_t j = 0; j < w; ++j) out[j] = finish(acc[j], A(0));
        }
      }
    });
  }

  ReducePlan plan_;
};

// Reduced dims of input 0; the axes input must be a plan-time constant.
std::vector<bool> plan_time_reduced_dims(const KernelInit& init) {
  const InferContext ctx = infer_context(init);
  if (!reduce_axes_known(ctx)) init.fail("axes must be known at plan time (a constant)");
  return reduced_dims(ctx);
}

template <class Op, bool kFloatOnly>
std::unique_ptr<Kernel> make_reduce(KernelInit& init, std::string* why_not) {
  ReducePlan plan;
  if (!build_plan(init.inputs[0].shape, plan_time_reduced_dims(init), &plan)) {
    *why_not = "more than 16 alternating kept/reduced dimensions";
    return nullptr;
  }
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<ReduceKernel<Op, float>>(plan);
    case DType::Float64: return std::make_unique<ReduceKernel<Op, double>>(plan);
    case DType::Float16: return std::make_unique<ReduceKernel<Op, Float16>>(plan);
    case DType::BFloat16: return std::make_unique<ReduceKernel<Op, BFloat16>>(plan);
    case DType::Int32:
      if constexpr (!kFloatOnly) return std::make_unique<ReduceKernel<Op, int32_t>>(plan);
      break;
    case DType::Int64:
      if constexpr (!kFloatOnly) return std::make_unique<ReduceKernel<Op, int64_t>>(plan);
      break;
    case DType::Bool:  // Max is any, Min is all (opset 20+)
      if constexpr (std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>)
        return std::make_unique<ReduceKernel<Op, bool>>(plan);
      break;
    default: break;
  }
  *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
  return nullptr;
}

// Whether the axes are an attribute or input 1 (by opset) is the schema's business
// (graph/schemas/reduce.h): one kernel for every opset.
#define EMBER_REDUCE(name, Op, float_only) \
  EMBER_KERNEL(name, "", 1, kMaxOpset, DeviceKind::Cpu, (make_reduce<Op, float_only>))

EMBER_REDUCE("ReduceSum", SumOp, false);
EMBER_REDUCE("ReduceMean", MeanOp, false);
EMBER_REDUCE("ReduceMax", MaxOp, false);
EMBER_REDUCE("ReduceMin", MinOp, false);
EMBER_REDUCE("ReduceProd", ProdOp, false);
EMBER_REDUCE("ReduceL1", L1Op, false);
EMBER_REDUCE("ReduceL2", L2Op, false);
EMBER_REDUCE("ReduceLogSum", LogSumOp, false);
EMBER_REDUCE("ReduceSumSquare", SumSquareOp, false);
// Integer inputs make no sense for exp/log and were dropped from the spec in opset 28.
EMBER_REDUCE("ReduceLogSumExp", LogSumExpOp, true);

}  // namespace

}  // namespace ember
