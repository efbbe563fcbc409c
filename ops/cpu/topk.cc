// CPU kernel for TopK: the K largest (or smallest) elements along `axis` and their
// int64 indices. Equal values are ordered by lower index first, as ONNX specifies.
// The output is always sorted; with sorted = 0 the order is unspecified, so sorted
// order is a valid answer there too.
#include "ops/cpu/parallel.h"
#include "ops/registry.h"
#include "graph/schemas/reduce.h"

#include <algorithm>

namespace ember {

namespace {

template <class T, bool kLargest>
class TopKKernel final : public Kernel {
 public:
  TopKKernel(int64_t outer, int64_t n, int64_t inner, int64_t k, int64_t slots)
      : outer_(outer), n_(n), inner_(inner), k_(k), slots_(slots) {}

  // One index buffer of n int64 per slot: the slices are split among the slots.
  static size_t workspace_bytes(int64_t n, int64_t slots) { return sizeof(int64_t) * n * slots; }

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* values = args.outputs[0]->data_as<T>();
    int64_t* indices = args.outputs[1]->data_as<int64_t>();
    const int64_t slices = outer_ * inner_;
    if (slices == 0 || k_ == 0) return;
    const int64_t per_slot = (slices + slots_ - 1) / slots_;
    auto* scratch = static_cast<int64_t*>(args.workspace);
    parallel_for(slots_, per_slot * n_ * 4, [&](int64_t begin, int64_t end) {
      // Each call owns the slots [begin, end), so their scratch never overlaps.
      for (int64_t slot = begin; slot < end; ++slot)
        for (int64_t s = slot * per_slot; s < std::min(slices, (slot + 1) * per_slot); ++s)
          select(x, values, indices, s, scratch + slot * n_);
    });
  }

 private:
  void select(const T* x, T* values, int64_t* indices, int64_t slice, int64_t* order) const {
    const int64_t o = slice / inner_, i = slice % inner_;
    const T* in = x + o * n_ * inner_ + i;
    for (int64_t a = 0; a < n_; ++a) order[a] = a;
    auto first = [in, this](int64_t a, int64_t b) {
      const T va = in[a * inner_], vb = in[b * inner_];
      if (va != vb) return kLargest ? va > vb : va < vb;
      return a < b;
    };
    std::partial_sort(order, order + k_, order + n_, first);
    const int64_t out = o * k_ * inner_ + i;
    for (int64_t j = 0; j < k_; ++j) {
      values[out + j * inner_] = in[order[j] * inner_];
      indices[out + j * inner_] = order[j];
    }
  }

  int64_t outer_, n_, inner_, k_, slots_;
};

template <class T>
std::unique_ptr<Kernel> make_typed(KernelInit& init, bool largest, int64_t outer, int64_t n,
                                   int64_t inner, int64_t k) {
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(init.num_threads, outer * inner));
  init.workspace_bytes = TopKKernel<T, true>::workspace_bytes(n, slots);
  if (largest) return std::make_unique<TopKKernel<T, true>>(outer, n, inner, k, slots);
  return std::make_unique<TopKKernel<T, false>>(outer, n, inner, k, slots);
}

std::unique_ptr<Kernel> make_topk(KernelInit& init, std::string* why_not) {
  const TopKParams p = topk_params(infer_context(init));
  switch (init.inputs[0].dtype) {
    case DType::Float32: return make_typed<float>(init, p.largest, p.outer, p.n, p.inner, p.k);
    case DType::Float64: return make_typed<double>(init, p.largest, p.outer, p.n, p.inner, p.k);
    case DType::Int32: return make_typed<int32_t>(init, p.largest, p.outer, p.n, p.inner, p.k);
    case DType::Int64: return make_typed<int64_t>(init, p.largest, p.outer, p.n, p.inner, p.k);
    case DType::UInt64: return make_typed<uint64_t>(init, p.largest, p.outer, p.n, p.inner, p.k);
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
      return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("TopK", "", 1, kMaxOpset, DeviceKind::Cpu, make_topk);

}  // namespace ember
