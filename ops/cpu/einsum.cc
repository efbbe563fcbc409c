// CPU kernel for Einsum: a plain loop nest. Each output element sums, over every
// combination of the summed labels, the product of the operands' elements there. An
// operand's stride for a label is the sum of its axes' strides carrying that label (a
// diagonal when repeated) and 0 where an ellipsis dim of size 1 broadcasts.
#include "graph/schemas/einsum_equation.h"
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <array>

namespace ember {

namespace {

constexpr int kMaxOperands = 8;
constexpr int kMaxLabels = 64;

struct EinsumLoops {
  int operands = 0;
  std::vector<int64_t> out_dims, sum_dims;              // per output / summed label
  std::vector<std::array<int64_t, kMaxOperands>> out_strides, sum_strides;  // per label, per operand
  int64_t sum_count = 1;
};

template <class T>
class EinsumKernel final : public Kernel {
  // Accumulate floats in double; integers wrap around in their own type.
  using Acc = std::conditional_t<is_float_v<T>, double, T>;

 public:
  explicit EinsumKernel(EinsumLoops loops) : l_(std::move(loops)) {}

  void run(const RunArgs& args) const override {
    std::array<const T*, kMaxOperands> in{};
    for (int k = 0; k < l_.operands; ++k) in[k] = args.inputs[k]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const int64_t n_out = args.outputs[0]->numel();
    parallel_for(n_out, l_.sum_count * l_.operands, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) out[o] = convert<T>(sum_at(in, o));
    });
  }

 private:
  Acc sum_at(const std::array<const T*, kMaxOperands>& in, int64_t o) const {
    std::array<int64_t, kMaxOperands> off{};
    for (int64_t d = static_cast<int64_t>(l_.out_dims.size()) - 1, rest = o; d >= 0; --d) {
      const int64_t i = rest % l_.out_dims[d];
      rest /= l_.out_dims[d];
      for (int k = 0; k < l_.operands; ++k) off[k] += i * l_.out_strides[d][k];
    }
    const int64_t sums = static_cast<int64_t>(l_.sum_dims.size());
    std::array<int64_t, kMaxLabels> idx{};
    Acc acc = Acc(0);
    for (int64_t step = 0; step < l_.sum_count; ++step) {
      Acc prod = Acc(compute_t<T>(in[0][off[0]]));
      for (int k = 1; k < l_.operands; ++k) prod = mul(prod, Acc(compute_t<T>(in[k][off[k]])));
      acc = add(acc, prod);
      for (int64_t d = sums - 1; d >= 0; --d) {  // odometer over the summed labels
        for (int k = 0; k < l_.operands; ++k) off[k] += l_.sum_strides[d][k];
        if (++idx[d] < l_.sum_dims[d]) break;
        for (int k = 0; k < l_.operands; ++k) off[k] -= l_.sum_strides[d][k] * l_.sum_dims[d];
        idx[d] = 0;
      }
    }
    return acc;
  }

  static Acc add(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) return wrapping_add(a, b);
    else return a + b;
  }
  static Acc mul(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) return wrapping_mul(a, b);
    else return a * b;
  }

  EinsumLoops l_;
};

EinsumLoops einsum_loops(const KernelInit& init, const EinsumSpec& spec) {
  const int64_t labels = static_cast<int64_t>(spec.label_dims.size());
  std::vector<std::array<int64_t, kMaxOperands>> strides(labels, std::array<int64_t, kMaxOperands>{});
  for (size_t k = 0; k < spec.input_labels.size(); ++k) {
    const Shape& shape = init.inputs[k].shape;
    const std::vector<int64_t> axis_strides = contiguous_strides(shape);
    for (size_t a = 0; a < shape.size(); ++a) {
      const int64_t label = spec.input_labels[k][a];
      if (shape[a] == 1 && spec.label_dims[label] != 1) continue;  // broadcast ellipsis dim
      strides[label][k] += axis_strides[a];
    }
  }
  EinsumLoops l;
  l.operands = static_cast<int>(spec.input_labels.size());
  std::vector<bool> in_output(labels, false);
  for (int64_t label : spec.output_labels) {
    in_output[label] = true;
    l.out_dims.push_back(spec.label_dims[label]);
    l.out_strides.push_back(strides[label]);
  }
  for (int64_t label = 0; label < labels; ++label) {
    if (in_output[label]) continue;
    l.sum_dims.push_back(spec.label_dims[label]);
    l.sum_strides.push_back(strides[label]);
    l.sum_count *= spec.label_dims[label];
  }
  return l;
}

std::unique_ptr<Kernel> make_einsum(KernelInit& init, std::string* why_not) {
  if (init.inputs.size() > kMaxOperands) {
    *why_not = "Einsum with more than " + std::to_string(kMaxOperands) + " operands is not supported";
    return nullptr;
  }
  std::vector<Shape> shapes;
  for (const TensorType& t : init.inputs) shapes.push_back(t.shape);
  const EinsumSpec spec = parse_einsum(init.node.attributes.get_string("equation"), shapes, infer_context(init));
  if (spec.label_dims.size() > kMaxLabels) init.fail("too many labels");
  EinsumLoops loops = einsum_loops(init, spec);
  std::unique_ptr<Kernel> kernel;
  dispatch(NumericTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<EinsumKernel<typename decltype(tag)::type>>(loops);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("Einsum", "", 12, kMaxOpset, DeviceKind::Cpu, make_einsum);

}  // namespace ember
