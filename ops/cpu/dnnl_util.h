// Shared plumbing for the CPU kernels built on oneDNN: the engine and per-thread
// stream, memory descriptors for ember's plain (row-major) tensors, fused activation
// post-ops, plan-time weight reorders and an allocation-light execute.
#pragma once

#include "graph/elementwise_table.h"
#include "graph/schemas/window.h"
#include "ops/kernel.h"

#include <ember/core/tensor.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace ember {

// One CPU engine for the process; a stream per calling thread (streams are not
// thread-safe, primitives are).
dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();

dnnl::memory::dims to_dnnl_dims(const Shape& shape);
// Row-major f32 descriptor of this shape (a, ab, abc, ...).
dnnl::memory::desc plain_f32_desc(const Shape& shape);
// The same dims and type with format_tag::any: the primitive picks the layout.
dnnl::memory::desc any_layout(const dnnl::memory::desc& md);
// A channels-last tensor [N, D1.., C] (com.ember's Nhwc* ops) as oneDNN describes it:
// dims in N, C, D1.. order, format nwc / nhwc / ndhwc (the same bytes).
dnnl::memory::desc channels_last_f32_desc(const Shape& shape);
// A blocked tensor [N, C/b, D1.., b] (com.ember's Blocked* ops, b = 8 or 16) as oneDNN
// describes it: dims N, C, D1.., format nCw8c / nChw8c / nCdhw8c or the 16c forms.
dnnl::memory::desc blocked_f32_desc(const Shape& shape);
// A float32 tensor stored in `layout` (graph/schemas/window.h).
dnnl::memory::desc f32_desc_in(const Shape& shape, Layout layout);

// `md` as the primitive computes it: itself, or with bfloat16 elements in the same
// dims and layout under DenseMath::BFloat16 (the caller reorders float32 into it).
dnnl::memory::desc computed_as(const dnnl::memory::desc& md, DenseMath math);

// oneDNN picks its blocking and thread split when a primitive is created, from
// omp_get_max_threads(): create primitives under the thread count they will run with.
class DnnlThreadScope {
 public:
  explicit DnnlThreadScope(int num_threads);
  ~DnnlThreadScope();
  DnnlThreadScope(const DnnlThreadScope&) = delete;
  DnnlThreadScope& operator=(const DnnlThreadScope&) = delete;

 private:
  int saved_ = 1;
};

// The threads to create a primitive of `flops` operations with: one below about 65
// thousand (a few microseconds on one core, weights of at most 128 KB read once), where
// the fork and join of a parallel region cost more than the split saves; the session's
// count above. Not higher: a serial op between parallel ones leaves the other threads
// idle, and past OpenMP's spin (engine/src/openmp_spin_default.cc) they sleep and the
// next region waits for them to wake (MobileNetV3 ran 14% slower with its squeeze-
// excite convs, up to 1 MFLOP, serial).
int dnnl_threads_for(int num_threads, double flops);

// The fused activation of a com.ember node (graph/elementwise_table.h reads it), split
// between oneDNN and ember: appended as oneDNN post-ops where oneDNN has the function;
// any other table function is `after` the primitive, a pass over its float32 output.
// x sigmoid(alpha x) (SiLU, QuickGelu) is after too unless the output is bfloat16 (which
// only a post-op writes): oneDNN 2.6's swish post-op cost as much as the convolution
// itself on EfficientNet-B0's layers, and the primitive without it plus a fast_swish
// pass (ops/cpu/vector_math.h) took 18-23% less over them (batch 8 and 1).
class FusedActivation {
 public:
  FusedActivation() = default;
  explicit FusedActivation(const ew::Activation& act, bool bfloat16_output = false);

  void append_to(dnnl::post_ops& ops) const;
  void apply_after(float* y, int64_t n) const;  // a no-op when oneDNN applies it
  bool in_primitive() const { return by_dnnl_; }

 private:
  ew::Activation act_;
  bool by_dnnl_ = true, fast_swish_ = false;
};

// K(init, activation, extra...) for a node whose fused activation the table knows;
// nullptr, with the reason, otherwise (the planner then runs the node's decomposition).
template <class K, class... Extra>
std::unique_ptr<Kernel> with_fused_activation(KernelInit& init, std::string* why_not, Extra... extra) {
  ew::Activation act;
  if (!fused_activation_of(init.node, &act, why_not)) return nullptr;
  return std::make_unique<K>(init, act, extra...);
}

// Attributes every ember primitive uses: user-managed scratchpad (so concurrent runs
// of one primitive never share scratch memory).
dnnl::primitive_attr make_dnnl_attr(const dnnl::post_ops& ops = {});

// Bytes of scratchpad a primitive wants (user scratchpad mode).
size_t scratchpad_bytes(const dnnl::primitive_desc_base& pd);

// Constant input `input` (init.values[input], laid out as `from`) reordered into the
// layout the primitive prefers. A session weight is reordered once per session and
// layout, and shared by every plan whose primitive prefers the same layout.
dnnl::memory packed_constant(const KernelInit& init, size_t input, const dnnl::memory::desc& from,
                             const dnnl::memory::desc& to);

// Constant input `input` laid out as `to`, for the caller to read at plan time (not
// kept in the packed weights): the value itself where `to` is its layout `from`, else
// the value reordered, or, where its original was given back, one of its packed forms.
dnnl::memory constant_as(const KernelInit& init, size_t input, const dnnl::memory::desc& from,
                         const dnnl::memory::desc& to);

// A kernel's own packed form of constant input `input` (laid out as `from`): `make()`'s
// floats, made once per session weight and shared by every plan through the
// packed-weights cache, or made for this plan where the input is no session weight.
// Named as packed_constant names its forms, by `from` and `packed` (the form's bytes as
// one dim: a repack of a given-back weight, which looks for a form of the dims it
// needs, never reads it).
std::shared_ptr<const std::vector<float>> own_packed_form(const KernelInit& init, size_t input,
                                                          const dnnl::memory::desc& from, int64_t floats,
                                                          const std::function<std::vector<float>()>& make);

// One argument of a primitive execution: the descriptor and the caller's buffer. A
// null desc marks an absent optional argument.
struct DnnlArg {
  int arg;
  const dnnl::memory::desc* desc;
  const void* data;
};

// oneDNN memory handles for one primitive's arguments, kept between runs (creating
// them costs ~0.6 us each, which shows on small MatMuls). A few slots, claimed
// lock-free, let concurrent runs each use their own; when all are busy a run makes
// temporary handles. A slot's handles are created on its first run (warm-up), so
// steady-state runs allocate nothing. Moving yields an empty cache.
class DnnlHandles {
 public:
  static constexpr size_t kMaxArgs = 8;
  DnnlHandles() = default;
  DnnlHandles(DnnlHandles&&) noexcept {}
  DnnlHandles& operator=(DnnlHandles&&) noexcept { return *this; }
  ~DnnlHandles();

 private:
  friend void dnnl_execute(const dnnl::primitive&, DnnlHandles&, std::initializer_list<DnnlArg>);
  struct Slot {
    std::atomic<bool> busy{false};
    std::array<dnnl_memory_t, kMaxArgs> memory{};
  };
  std::array<Slot, 4> slots_;
};

// Executes `prim` on the calling thread's stream with the caller's buffers.
void dnnl_execute(const dnnl::primitive& prim, DnnlHandles& handles, std::initializer_list<DnnlArg> args);

// A run-time reorder between ember's plain layout and a primitive's preferred one
// (into a workspace buffer). Empty when both layouts are the same.
class DnnlReorder {
 public:
  DnnlReorder() = default;
  DnnlReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
  explicit operator bool() const { return active_; }
  size_t scratchpad() const { return active_ ? scratch_md_.get_size() : 0; }
  void run(const void* from, void* to, void* scratch) const;

 private:
  bool active_ = false;
  // float32 to bfloat16 in the same dense layout (bf16 math's operands): our own
  // conversion over `narrow_count_` values instead of oneDNN's (bfloat16_convert.h).
  int64_t narrow_count_ = 0;
  mutable DnnlHandles handles_;
  dnnl::reorder prim_;
  dnnl::memory::desc from_, to_, scratch_md_;
};

// Carves a workspace into 64-byte aligned slices in a fixed order: at plan time call
// take() to learn offsets and the total, at run time add the offsets to the pointer.
class WorkspaceLayout {
 public:
  size_t take(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 63) / 64 * 64;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

inline void* workspace_at(const RunArgs& args, size_t offset) {
  return static_cast<char*>(args.workspace) + offset;
}

// Why a float-only kernel refuses this dtype, or "" when the dtype is float32.
std::string float32_only(const KernelInit& init, size_t input);

// Float16 and bfloat16 support by conversion: builds `factory`'s float32 kernel and
// converts `half` inputs (constants once, at plan time) and outputs around it. Its run
// creates small tensor views (a shape vector each); the float32 path is unaffected.
std::unique_ptr<Kernel> half_via_float32(KernelInit& init, std::string* why_not, KernelFactory factory, DType half);

// How the dense kernels register: a float32 factory, extended to float16 inputs by
// conversion, with a configuration oneDNN rejects turned into a refusal (so the planner
// can try elsewhere) instead of an exception from inside oneDNN. bfloat16 runs in
// oneDNN's bf16 kernels where the CPU has them (AVX512_BF16); where oneDNN rejects them
// (an AVX2 CPU) it is converted to float32 like float16, and is as exact or more.
template <KernelFactory Factory>
std::unique_ptr<Kernel> dense_factory(KernelInit& init, std::string* why_not) {
  const auto has = [&](DType type) {
    for (const TensorType& t : init.inputs)
      if (t.present() && t.dtype == type) return true;
    return false;
  };
  try {
    if (has(DType::Float16)) return half_via_float32(init, why_not, Factory, DType::Float16);
    return Factory(init, why_not);
  } catch (const dnnl::error& e) {
    *why_not = std::string("oneDNN cannot run this configuration: ") + e.what();
  }
  if (!has(DType::BFloat16)) return nullptr;
  try {
    return half_via_float32(init, why_not, Factory, DType::BFloat16);
  } catch (const dnnl::error& e) {
    *why_not = std::string("oneDNN cannot run this configuration: ") + e.what();
    return nullptr;
  }
}

}  // namespace ember
