// CPU kernels for CumSum and CumProd: running sums/products along the axis given by
// the (scalar) axis input, optionally exclusive (shifted by one, starting from the
// identity) and/or reversed. The axis is read at run time since it need not be a
// constant.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

namespace ember {

namespace {

struct Sum {
  template <class C> static C identity() { return C(0); }
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) return wrapping_add(a, b);
    else return a + b;
  }
};

struct Product {
  template <class C> static C identity() { return C(1); }
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) return wrapping_mul(a, b);
    else return a * b;
  }
};

int64_t read_axis(const Tensor& axis, int64_t rank) {
  const int64_t a = axis.dtype() == DType::Int32 ? *axis.data_as<int32_t>() : *axis.data_as<int64_t>();
  if (a < -rank || a >= rank)
    throw Error("CumSum/CumProd: axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a < 0 ? a + rank : a;
}

template <class T, class Op>
class CumulativeKernel final : public Kernel {
 public:
  CumulativeKernel(bool exclusive, bool reverse) : exclusive_(exclusive), reverse_(reverse) {}

  void run(const RunArgs& args) const override {
    using C = compute_t<T>;
    const Tensor& x = *args.inputs[0];
    const Shape& shape = x.shape();
    const int64_t rank = x.rank();
    if (rank == 0) throw Error("CumSum/CumProd: input must have rank 1 or more");
    const int64_t axis = read_axis(*args.inputs[1], rank);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
    const int64_t n = shape[axis];
    const T* in = x.data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    parallel_for(outer * inner, n, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        const int64_t base = (s / inner) * n * inner + s % inner;
        C acc = Op::template identity<C>();
        for (int64_t k = 0; k < n; ++k) {
          const int64_t at = base + (reverse_ ? n - 1 - k : k) * inner;
          const C v = C(in[at]);
          if (!exclusive_) acc = Op::apply(acc, v);
          out[at] = T(acc);
          if (exclusive_) acc = Op::apply(acc, v);
        }
      }
    });
  }

 private:
  bool exclusive_, reverse_;
};

using CumulativeTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

template <class Op>
std::unique_ptr<Kernel> make_cumulative(KernelInit& init, std::string* why_not) {
  const auto& attrs = init.node.attributes;
  const bool exclusive = attrs.get_int_or("exclusive", 0) != 0;
  const bool reverse = attrs.get_int_or("reverse", 0) != 0;
  const DType axis_type = init.inputs[1].dtype;
  if (axis_type != DType::Int32 && axis_type != DType::Int64) init.fail("axis must be int32 or int64");
  std::unique_ptr<Kernel> kernel;
  dispatch(CumulativeTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<CumulativeKernel<typename decltype(tag)::type, Op>>(exclusive, reverse);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("CumSum", "", 11, kMaxOpset, DeviceKind::Cpu, make_cumulative<Sum>);
EMBER_KERNEL("CumProd", "", 26, kMaxOpset, DeviceKind::Cpu, make_cumulative<Product>);

}  // namespace ember
