// CPU kernels for the ops whose output shape depends on the input data: NonZero,
// Compress and Unique. Their schemas count from the input values (see
// graph/schemas/data_dependent.h); the kernels fill the outputs sized by those counts.
#include "graph/schemas/data_dependent.h"
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

template <class T>
void run_nonzero(const RunArgs& args) {
  const Tensor& x = *args.inputs[0];
  const T* p = x.data_as<T>();
  int64_t* out = args.outputs[0]->data_as<int64_t>();
  const int64_t count = args.outputs[0]->shape()[1], rank = x.rank();
  int64_t column = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (!convert<bool>(p[i])) continue;
    for (int64_t d = rank - 1, rest = i; d >= 0; --d) {
      out[d * count + column] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
    if (rank == 0) out[column] = 0;  // a scalar is seen as one element of a 1-D tensor
    ++column;
  }
}

std::unique_ptr<Kernel> make_nonzero(KernelInit& init, std::string* why_not) {
  std::unique_ptr<Kernel> kernel;
  dispatch(AllTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<FunctionKernel>(&run_nonzero<typename decltype(tag)::type>);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

// Compress copies the slices j < len(condition) with condition[j] true.
class CompressKernel final : public Kernel {
 public:
  CompressKernel(SliceView v, size_t elem) : v_(v), elem_(elem) {}

  void run(const RunArgs& args) const override {
    const auto* in = static_cast<const char*>(args.inputs[0]->data());
    const bool* cond = args.inputs[1]->data_as<bool>();
    const int64_t n = std::min(v_.slices, args.inputs[1]->numel());
    auto* out = static_cast<char*>(args.outputs[0]->data());
    const int64_t kept = std::count(cond, cond + n, true);
    const size_t row = v_.inner * elem_;
    for (int64_t o = 0; o < v_.outer; ++o)
      for (int64_t j = 0, k = 0; j < n; ++j)
        if (cond[j]) std::memcpy(out + (o * kept + k++) * row, in + (o * v_.slices + j) * row, row);
  }

 private:
  SliceView v_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_compress(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (elem == 0 || init.inputs[0].dtype == DType::String) {
    *why_not = unsupported_dtype(init, init.inputs[0].dtype);
    return nullptr;
  }
  const bool has_axis = init.node.attributes.has("axis");
  int64_t axis = has_axis ? init.node.attributes.get_int("axis") : 0;
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  return std::make_unique<CompressKernel>(unique_view(s, has_axis, axis), elem);
}

template <class T>
class UniqueKernel final : public Kernel {
 public:
  UniqueKernel(SliceView v, bool sorted) : v_(v), sorted_(sorted) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    auto* b = static_cast<int64_t*>(args.workspace);
    const int64_t n = v_.slices;
    const UniqueScratch s{b, b + n, b + 2 * n, b + 3 * n, b + 4 * n, b + 5 * n};
    const int64_t groups = group_unique_slices(x, v_, sorted_, s);
    T* y = args.outputs[0]->data_as<T>();
    for (int64_t o = 0; o < v_.outer; ++o)
      for (int64_t u = 0; u < groups; ++u)
        std::copy_n(x + (o * n + s.first[u]) * v_.inner, v_.inner, y + (o * groups + u) * v_.inner);
    write(args, 1, s.first, groups);
    write(args, 2, s.inverse, n);
    write(args, 3, s.count, groups);
  }

  static size_t workspace_bytes(const SliceView& v) { return sizeof(int64_t) * UniqueScratch::kArrays * v.slices; }

 private:
  static void write(const RunArgs& args, size_t output, const int64_t* from, int64_t n) {
    if (output < args.outputs.size() && args.outputs[output])
      std::copy_n(from, n, args.outputs[output]->data_as<int64_t>());
  }

  SliceView v_;
  bool sorted_;
};

std::unique_ptr<Kernel> make_unique(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const bool has_axis = init.node.attributes.has("axis");
  int64_t axis = has_axis ? init.node.attributes.get_int("axis") : 0;
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  const SliceView v = unique_view(s, has_axis, axis);
  const bool sorted = init.node.attributes.get_int_or("sorted", 1) != 0;
  std::unique_ptr<Kernel> kernel;
  dispatch(AllTypes{}, init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    init.workspace_bytes = UniqueKernel<T>::workspace_bytes(v);
    kernel = std::make_unique<UniqueKernel<T>>(v, sorted);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("NonZero", "", 9, kMaxOpset, DeviceKind::Cpu, make_nonzero);
EMBER_KERNEL("Compress", "", 9, kMaxOpset, DeviceKind::Cpu, make_compress);
EMBER_KERNEL("Unique", "", 11, kMaxOpset, DeviceKind::Cpu, make_unique);

}  // namespace ember
