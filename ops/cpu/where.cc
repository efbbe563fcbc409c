// Where: out = cond ? x : y with three-way numpy broadcasting.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

namespace ember {
namespace {

// Selection only moves bytes, so one kernel per element size serves every dtype.
template <class T>
class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(const BroadcastPlan& plan) : plan_(plan) {}

  void run(const RunArgs& args) const override {
    const bool* cond = args.inputs[0]->data_as<bool>();
    const T* x = args.inputs[1]->data_as<T>();
    const T* y = args.inputs[2]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const int last = plan_.rank - 1;
    const int64_t sc = plan_.strides[0][last], sx = plan_.strides[1][last],
                  sy = plan_.strides[2][last];
    for_each_span_parallel(plan_, 1, [&](const int64_t* at, int64_t o, int64_t n) {
      const bool* c = cond + at[0];
      const T* a = x + at[1];
      const T* b = y + at[2];
      T* z = out + o;
      if (sc && sx && sy) {
        for (int64_t i = 0; i < n; ++i) z[i] = c[i] ? a[i] : b[i];
      } else {
        for (int64_t i = 0; i < n; ++i) z[i] = c[i * sc] ? a[i * sx] : b[i * sy];
      }
    });
  }

 private:
  BroadcastPlan plan_;
};

std::unique_ptr<Kernel> make_where(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[1].dtype;
  if (init.inputs[0].dtype != DType::Bool || init.inputs[2].dtype != dtype) {
    *why_not = "Where needs a bool condition and x, y of one dtype";
    return nullptr;
  }
  BroadcastPlan plan;
  if (!make_broadcast_plan(init.outputs[0].shape,
                           {&init.inputs[0].shape, &init.inputs[1].shape, &init.inputs[2].shape},
                           &plan, why_not))
    return nullptr;
  switch (dtype_bits(dtype)) {
    case 8: return std::make_unique<WhereKernel<uint8_t>>(plan);
    case 16: return std::make_unique<WhereKernel<uint16_t>>(plan);
    case 32: return std::make_unique<WhereKernel<uint32_t>>(plan);
    case 64: return std::make_unique<WhereKernel<uint64_t>>(plan);
  }
  *why_not = unsupported_dtype(init, dtype);
  return nullptr;
}

}  // namespace

// Opset 16 only adds bfloat16; every fixed-size dtype but the 4-bit ones is served.
EMBER_KERNEL("Where", "", 9, kMaxOpset, DeviceKind::Cpu, make_where);

}  // namespace ember
