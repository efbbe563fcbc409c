// The CPU elementwise driver. An elementwise op is a scalar functor; this header
// brings the rest: dtype dispatch, a broadcasting plan made when the kernel is built,
// threading, and inner loops over contiguous spans that GCC vectorizes for float.
//
// Functors take and return the "compute type" of the element type (float for
// float16/bfloat16, the type itself otherwise); the driver converts on load/store.
#pragma once

#include <ember/core/element_types.h>
#include <ember/core/float16.h>
#include "ops/cpu/parallel.h"
#include "ops/broadcast_plan.h"
#include "ops/kernel.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>

namespace ember {

// Calls body(in_offsets, out_offset, length) for the contiguous spans of output
// elements [begin, end); in_offsets[k] is input k's element offset at the span start.
template <class Body>
void for_each_span(const BroadcastPlan& p, int64_t begin, int64_t end, const Body& body) {
  const int64_t inner = p.inner();
  const int outer_rank = p.rank - 1;
  int64_t idx[kMaxBroadcastDims];
  int64_t off[kMaxBroadcastInputs] = {};
  int64_t row = begin / inner, col = begin % inner;
  for (int d = outer_rank - 1; d >= 0; --d) {
    idx[d] = row % p.dims[d];
    row /= p.dims[d];
    for (int k = 0; k < p.num_inputs; ++k) off[k] += idx[d] * p.strides[k][d];
  }
  for (int64_t pos = begin; pos < end; col = 0) {
    const int64_t len = std::min(inner - col, end - pos);
    int64_t at[kMaxBroadcastInputs];
    for (int k = 0; k < p.num_inputs; ++k) at[k] = off[k] + col * p.strides[k][outer_rank];
    body(at, pos, len);
    pos += len;
    for (int d = outer_rank - 1; d >= 0; --d) {  // odometer step to the next row
      for (int k = 0; k < p.num_inputs; ++k) off[k] += p.strides[k][d];
      if (++idx[d] < p.dims[d]) break;
      for (int k = 0; k < p.num_inputs; ++k) off[k] -= p.strides[k][d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// Runs for_each_span over the whole output, in parallel.
template <class Body>
void for_each_span_parallel(const BroadcastPlan& p, int64_t cost_per_item, const Body& body) {
  parallel_for(p.numel, cost_per_item,
               [&](int64_t begin, int64_t end) { for_each_span(p, begin, end, body); });
}

// ---- Loops --------------------------------------------------------------------------

// y[i] = f(x[i]) over contiguous memory (y may be x).
template <class In, class Out, class F>
void unary_map(const In* x, Out* y, int64_t n, const F& f, int64_t cost_per_item = 1) {
  using C = compute_t<In>;
  parallel_for(n, cost_per_item, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = Out(f(C(x[i])));
  });
}

// out = f(a, b) with a, b broadcast as the plan says (out may be a or b when that
// input is not broadcast).
template <class A, class B, class Out, class F>
void binary_map(const BroadcastPlan& p, const A* a, const B* b, Out* out, const F& f,
                int64_t cost_per_item = 1) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  const bool full_a = p.inner_contiguous(0), full_b = p.inner_contiguous(1);
  // Rows against one row repeated (a channels-last tensor times a per-channel scale,
  // squeeze-excite's Mul: [N, HW, C] * [N, 1, C]; blocked, [N C/b, HW, b] * [N C/b, 1, b]):
  // a loop over rows. Walked as spans, a row of 32 channels cost more to step to than to
  // multiply (2.6x ONNX Runtime on EfficientNet's first).
  const int mid = p.rank - 2;  // the dim one input repeats
  if ((p.rank == 2 || p.rank == 3) && full_a && full_b && (p.strides[0][mid] == 0) != (p.strides[1][mid] == 0)) {
    const int64_t rows = p.dims[mid], inner = p.inner(), outer = p.rank == 3 ? p.dims[0] : 1;
    const int64_t outer_a = p.rank == 3 ? p.strides[0][0] : 0, outer_b = p.rank == 3 ? p.strides[1][0] : 0;
    const int64_t step_a = p.strides[0][mid], step_b = p.strides[1][mid];
    // A row length known when compiled (a block of 8 or 16 channels) is one vector op.
    auto rows_of = [&](auto width) {
      const int64_t n = width() ? width() : inner;
      parallel_for(outer * rows, n * std::max<int64_t>(cost_per_item, 1), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin / rows, m = begin % rows, r = begin; r < end; ++o, m = 0) {
          const A* x = a + o * outer_a;
          const B* y = b + o * outer_b;
          for (; m < rows && r < end; ++m, ++r) {
            const A* xr = x + m * step_a;
            const B* yr = y + m * step_b;
            Out* z = out + r * n;
            for (int64_t i = 0; i < (width() ? width() : n); ++i) z[i] = Out(f(CA(xr[i]), CB(yr[i])));
          }
        }
      });
    };
    if (inner == 8) rows_of([] { return int64_t{8}; });
    else if (inner == 16) rows_of([] { return int64_t{16}; });
    else rows_of([] { return int64_t{0}; });
    return;
  }
  for_each_span_parallel(p, cost_per_item, [&](const int64_t* at, int64_t o, int64_t n) {
    const A* x = a + at[0];
    const B* y = b + at[1];
    Out* z = out + o;
    if (full_a && full_b) {
      for (int64_t i = 0; i < n; ++i) z[i] = Out(f(CA(x[i]), CB(y[i])));
    } else if (full_a) {
      const CB yv = CB(*y);
      for (int64_t i = 0; i < n; ++i) z[i] = Out(f(CA(x[i]), yv));
    } else if (full_b) {
      const CA xv = CA(*x);
      for (int64_t i = 0; i < n; ++i) z[i] = Out(f(xv, CB(y[i])));
    } else {  // both repeat along the span: out is wider than a and b (Sum's first step)
      const Out v = Out(f(CA(*x), CB(*y)));
      for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  });
}

// ---- Kernels ------------------------------------------------------------------------

template <class In, class Out, class F>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(F f, int64_t cost) : f_(f), cost_(cost) {}
  void run(const RunArgs& args) const override {
    unary_map(args.inputs[0]->data_as<In>(), args.outputs[0]->data_as<Out>(),
              args.outputs[0]->numel(), f_, cost_);
  }

 private:
  F f_;
  int64_t cost_;
};

template <class A, class B, class Out, class F>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const BroadcastPlan& plan, F f, int64_t cost) : plan_(plan), f_(f), cost_(cost) {}
  void run(const RunArgs& args) const override {
    binary_map(plan_, args.inputs[0]->data_as<A>(), args.inputs[1]->data_as<B>(),
               args.outputs[0]->data_as<Out>(), f_, cost_);
  }

 private:
  BroadcastPlan plan_;
  F f_;
  int64_t cost_;
};

inline std::string unsupported_dtype(const KernelInit& init, DType dtype) {
  return init.node.op_type + " on " + dtype_name(dtype) + " is not supported";
}

// A kernel computing f(x) elementwise for x's dtype among `types`; the output is
// the same type, or bool when `BoolOut`.
template <bool BoolOut = false, class... Ts, class F>
std::unique_ptr<Kernel> make_unary(KernelInit& init, std::string* why_not, TypeList<Ts...> types,
                                   F f, int64_t cost = 1) {
  std::unique_ptr<Kernel> kernel;
  const DType dtype = init.inputs[0].dtype;
  dispatch(types, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<BoolOut, bool, T>;
    kernel = std::make_unique<UnaryKernel<T, Out, F>>(f, cost);
  });
  if (!kernel) *why_not = unsupported_dtype(init, dtype);
  return kernel;
}

// A kernel computing f(a, b) with numpy broadcasting, a and b of the same dtype among
// `types`; the output is that type, or bool when `BoolOut`.
template <bool BoolOut = false, class... Ts, class F>
std::unique_ptr<Kernel> make_binary(KernelInit& init, std::string* why_not, TypeList<Ts...> types,
                                    F f, int64_t cost = 1) {
  const DType dtype = init.inputs[0].dtype;
  if (init.inputs[1].dtype != dtype) {
    *why_not = init.node.op_type + " needs equal input dtypes";
    return nullptr;
  }
  BroadcastPlan plan;
  if (!make_broadcast_plan(init.outputs[0].shape, {&init.inputs[0].shape, &init.inputs[1].shape},
                           &plan, why_not))
    return nullptr;
  std::unique_ptr<Kernel> kernel;
  dispatch(types, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<BoolOut, bool, T>;
    kernel = std::make_unique<BinaryKernel<T, T, Out, F>>(plan, f, cost);
  });
  if (!kernel) *why_not = unsupported_dtype(init, dtype);
  return kernel;
}

// ---- Integer arithmetic without undefined behaviour ---------------------------------

// Integer ops wrap around (two's complement) rather than overflow into UB; small types
// are widened to unsigned int so that, e.g., uint16 * uint16 cannot overflow int.
template <class T> using wrap_t = std::make_unsigned_t<std::common_type_t<T, unsigned>>;
template <class T> T wrapping_add(T a, T b) { return T(wrap_t<T>(a) + wrap_t<T>(b)); }
template <class T> T wrapping_sub(T a, T b) { return T(wrap_t<T>(a) - wrap_t<T>(b)); }
template <class T> T wrapping_mul(T a, T b) { return T(wrap_t<T>(a) * wrap_t<T>(b)); }
template <class T> T wrapping_neg(T a) { return T(wrap_t<T>(0) - wrap_t<T>(a)); }

}  // namespace ember
