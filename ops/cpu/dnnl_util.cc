#include "ops/cpu/dnnl_util.h"
#include "ops/cpu/bfloat16_convert.h"

#include "ops/cpu/activation_in_primitive.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"

#include <ember/core/error.h>

#include <oneapi/dnnl/dnnl.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <immintrin.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace ember {

namespace {

void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success)
    throw Error(std::string("oneDNN: ") + what + " failed (status " + std::to_string(status) + ")");
}

dnnl::memory::format_tag plain_tag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  static constexpr tag tags[] = {tag::a,      tag::ab,      tag::abc,      tag::abcd,
                                 tag::abcde,  tag::abcdef,  tag::abcdefg,  tag::abcdefgh,
                                 tag::abcdefghi, tag::abcdefghij, tag::abcdefghijk,
                                 tag::abcdefghijkl};
  if (rank == 0 || rank > std::size(tags)) throw Error("oneDNN: unsupported rank " + std::to_string(rank));
  return tags[rank - 1];
}

}  // namespace

namespace {

// oneDNN keeps the last 1024 primitives it made in a process-wide cache, JIT code and
// all (about half a MiB each for brgemm matmuls). ember's plans hold the primitives
// they run, so that cache only keeps evicted plans' primitives alive: a service seeing
// many shapes grew by hundreds of MiB. A small cache still lets one plan reuse a
// primitive across identical layers. ONEDNN_PRIMITIVE_CACHE_CAPACITY still wins.
constexpr int kPrimitiveCacheCapacity = 32;

dnnl::engine make_engine() {
  if (!std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") && !std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY"))
    dnnl::set_primitive_cache_capacity(kPrimitiveCacheCapacity);
  return dnnl::engine(dnnl::engine::kind::cpu, 0);
}

}  // namespace

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine = make_engine();
  return engine;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::memory::dims to_dnnl_dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

dnnl::memory::desc plain_f32_desc(const Shape& shape) {
  const Shape s = shape.empty() ? Shape{1} : shape;
  return {to_dnnl_dims(s), dnnl::memory::data_type::f32, plain_tag(s.size())};
}

dnnl::memory::desc any_layout(const dnnl::memory::desc& md) {
  return {md.dims(), md.data_type(), dnnl::memory::format_tag::any};
}

dnnl::memory::desc channels_last_f32_desc(const Shape& shape) {
  using tag = dnnl::memory::format_tag;
  if (shape.size() < 3 || shape.size() > 5)
    throw Error("a channels-last tensor has 1 to 3 spatial dims, got shape " + shape_to_string(shape));
  Shape dims{shape[0], shape.back()};
  dims.insert(dims.end(), shape.begin() + 1, shape.end() - 1);
  const tag t = shape.size() == 3 ? tag::nwc : shape.size() == 4 ? tag::nhwc : tag::ndhwc;
  return {to_dnnl_dims(dims), dnnl::memory::data_type::f32, t};
}

dnnl::memory::desc blocked_f32_desc(const Shape& shape) {
  using tag = dnnl::memory::format_tag;
  const int64_t block = shape.empty() ? 0 : shape.back();
  if (shape.size() < 4 || shape.size() > 6 || (block != 8 && block != 16))
    throw Error("a blocked tensor is [N, C/b, D1.., b] with 1 to 3 spatial dims and b = 8 or 16, got shape " +
                shape_to_string(shape));
  Shape dims{shape[0], shape[1] * block};
  dims.insert(dims.end(), shape.begin() + 2, shape.end() - 1);
  static const tag k8[] = {tag::nCw8c, tag::nChw8c, tag::nCdhw8c};
  static const tag k16[] = {tag::nCw16c, tag::nChw16c, tag::nCdhw16c};
  return {to_dnnl_dims(dims), dnnl::memory::data_type::f32, (block == 8 ? k8 : k16)[shape.size() - 4]};
}

dnnl::memory::desc f32_desc_in(const Shape& shape, Layout layout) {
  if (layout == Layout::ChannelsLast) return channels_last_f32_desc(shape);
  return layout == Layout::ChannelsBlocked ? blocked_f32_desc(shape) : plain_f32_desc(shape);
}

dnnl::memory::desc computed_as(const dnnl::memory::desc& md, DenseMath math) {
  if (math == DenseMath::Float32) return md;
  dnnl::memory::desc retyped = md;  // oneDNN 2.x: the C descriptor is a plain struct
  retyped.data.data_type = dnnl_bf16;
  return retyped;
}

DnnlThreadScope::DnnlThreadScope(int num_threads) {
#ifdef _OPENMP
  saved_ = omp_get_max_threads();
  omp_set_num_threads(std::max(num_threads, 1));
#endif
}

DnnlThreadScope::~DnnlThreadScope() {
#ifdef _OPENMP
  omp_set_num_threads(saved_);
#endif
}

int dnnl_threads_for(int num_threads, double flops) {
  constexpr double kSerialBelowFlops = 1 << 16;
  return flops < kSerialBelowFlops ? 1 : num_threads;
}

namespace {

// oneDNN's eltwise for a table function: false when it has none (or none ember checked
// against the table's definition).
bool dnnl_eltwise(const ew::Activation& act, dnnl::algorithm* alg, float* alpha) {
  using alg_t = dnnl::algorithm;
  using F = ew::UnaryFunction;
  *alpha = 0.f;
  if (act.kind == ew::Activation::Kind::Clip) {
    *alg = alg_t::eltwise_clip_v2;
    return true;
  }
  switch (act.function) {
    case F::Relu: *alg = alg_t::eltwise_relu; return true;
    case F::LeakyRelu: *alg = alg_t::eltwise_relu, *alpha = act.params.alpha; return true;
    case F::Sigmoid: *alg = alg_t::eltwise_logistic; return true;
    case F::Tanh: *alg = alg_t::eltwise_tanh; return true;
    case F::HardSwish: *alg = alg_t::eltwise_hardswish; return true;
    case F::Gelu: *alg = alg_t::eltwise_gelu_erf; return true;
    case F::GeluTanh: *alg = alg_t::eltwise_gelu_tanh; return true;
    case F::Elu: *alg = alg_t::eltwise_elu, *alpha = act.params.alpha; return true;
    // x * sigmoid(alpha * x): Swish, and QuickGelu with its alpha of 1.702.
    case F::Swish:
    case F::QuickGelu: *alg = alg_t::eltwise_swish, *alpha = act.params.alpha; return true;
    case F::Abs: *alg = alg_t::eltwise_abs; return true;
    default: return false;
  }
}

}  // namespace

FusedActivation::FusedActivation(const ew::Activation& act, bool bfloat16_output) : act_(act) {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f;
  fast_swish_ = !bfloat16_output && runs_as_fast_swish(act);
  by_dnnl_ = !fast_swish_ && (act.kind == ew::Activation::Kind::None || act.is(ew::UnaryFunction::HardSigmoid) ||
                              dnnl_eltwise(act, &alg, &alpha));
}

bool activation_in_primitive(const Node& node) {
  ew::Activation act;
  std::string why_not;
  return fused_activation_of(node, &act, &why_not) && FusedActivation(act, /*bfloat16_output=*/true).in_primitive();
}

void FusedActivation::append_to(dnnl::post_ops& ops) const {
  if (act_.kind == ew::Activation::Kind::None || !by_dnnl_) return;
  if (act_.is(ew::UnaryFunction::HardSigmoid)) {
    // oneDNN 2.6 has no hardsigmoid: max(0, min(1, alpha*x + beta)) as linear + clip.
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, act_.params.alpha, act_.params.beta);
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip_v2, 0.f, 1.f);
    return;
  }
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f;
  dnnl_eltwise(act_, &alg, &alpha);
  const bool clip = act_.kind == ew::Activation::Kind::Clip;
  ops.append_eltwise(1.f, alg, clip ? act_.params.alpha : alpha, clip ? act_.params.beta : 0.f);
}

void FusedActivation::apply_after(float* y, int64_t n) const {
  if (by_dnnl_) return;
  const bool vector = fast_swish_ || (act_.kind == ew::Activation::Kind::Function && has_vector_form(act_.function));
  parallel_for(n, vector ? 8 : 20, [&](int64_t b, int64_t e) { activate(act_, y + b, e - b); });
}

dnnl::primitive_attr make_dnnl_attr(const dnnl::post_ops& ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(ops);
  return attr;
}

size_t scratchpad_bytes(const dnnl::primitive_desc_base& pd) {
  return pd.scratchpad_desc().get_size();
}

namespace {

dnnl::memory reorder_constant(const void* data, const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::memory src(from, dnnl_engine(), const_cast<void*>(data));
  dnnl::memory dst(to, dnnl_engine());
  dnnl::reorder(src, dst).execute(dnnl_stream(), src, dst);
  dnnl_stream().wait();
  return dst;
}

}  // namespace

namespace {

// `to` made from a packed form of the same weight whose original was given back: any
// form with the same dims and element type reorders into it.
dnnl::memory repack(const KernelInit& init, size_t input, const dnnl::memory::desc& to) {
  for (const auto& [form, packed] : init.packed_weights->forms_of(*init.values[input])) {
    dnnl::memory::desc made;
    std::memcpy(&made.data, form.data() + sizeof made.data, sizeof made.data);
    if (made.dims() != to.dims() || made.data_type() != to.data_type()) continue;
    return reorder_constant(static_cast<dnnl::memory*>(packed.get())->get_data_handle(), made, to);
  }
  init.fail("weight '" + init.node.inputs[input] + "' was given back once packed, and no packed form of it converts "
            "to the layout this plan needs (run with graph optimizations off to keep it)");
}

}  // namespace

dnnl::memory packed_constant(const KernelInit& init, size_t input, const dnnl::memory::desc& from,
                             const dnnl::memory::desc& to) {
  const Tensor& weight = *init.values[input];
  const bool given_back = weight.data() == nullptr && weight.numel() > 0;
  if (given_back && !init.is_weight(input))
    init.fail("weight '" + init.node.inputs[input] + "' was given back once packed and cannot be read here");
  if (!init.is_weight(input)) return reorder_constant(weight.data(), from, to);
  // oneDNN descriptors are plain structs, equal when their bytes are: the two of them
  // name the form (a stray padding difference could only cost a second copy).
  std::string form(reinterpret_cast<const char*>(&from.data), sizeof from.data);
  form.append(reinterpret_cast<const char*>(&to.data), sizeof to.data);
  auto packed = init.packed_weights->get(weight, form, to.get_size(), [&] {
    return std::make_shared<dnnl::memory>(given_back ? repack(init, input, to)
                                                     : reorder_constant(weight.data(), from, to));
  });
  return *static_cast<dnnl::memory*>(packed.get());  // a handle: shares the bytes
}

dnnl::memory constant_as(const KernelInit& init, size_t input, const dnnl::memory::desc& from,
                         const dnnl::memory::desc& to) {
  const Tensor& weight = *init.values[input];
  if (weight.data() == nullptr && weight.numel() > 0) {
    if (!init.is_weight(input))
      init.fail("weight '" + init.node.inputs[input] + "' was given back once packed and cannot be read here");
    return repack(init, input, to);
  }
  if (from == to) return dnnl::memory(to, dnnl_engine(), const_cast<void*>(weight.data()));  // read, not copied
  return reorder_constant(weight.data(), from, to);
}

std::shared_ptr<const std::vector<float>> own_packed_form(const KernelInit& init, size_t input,
                                                          const dnnl::memory::desc& from, int64_t floats,
                                                          const std::function<std::vector<float>()>& make) {
  const auto made = [&] { return std::make_shared<std::vector<float>>(make()); };
  if (!init.is_weight(input)) return made();
  const dnnl::memory::desc packed = plain_f32_desc({floats});
  std::string form(reinterpret_cast<const char*>(&from.data), sizeof from.data);
  form.append(reinterpret_cast<const char*>(&packed.data), sizeof packed.data);
  return std::static_pointer_cast<const std::vector<float>>(
      init.packed_weights->get(*init.values[input], form, packed.get_size(), made));
}

DnnlHandles::~DnnlHandles() {
  for (Slot& slot : slots_)
    for (dnnl_memory_t m : slot.memory)
      if (m) dnnl_memory_destroy(m);
}

void dnnl_execute(const dnnl::primitive& prim, DnnlHandles& handles, std::initializer_list<DnnlArg> args) {
  if (args.size() > DnnlHandles::kMaxArgs) throw Error("oneDNN: too many primitive arguments");
  DnnlHandles::Slot* slot = nullptr;
  for (DnnlHandles::Slot& s : handles.slots_) {
    bool expected = false;
    if (s.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      slot = &s;
      break;
    }
  }
  std::array<dnnl_memory_t, DnnlHandles::kMaxArgs> temporary{};
  auto& memory = slot ? slot->memory : temporary;
  std::array<dnnl_exec_arg_t, DnnlHandles::kMaxArgs> exec{};
  int n = 0;
  dnnl_status_t status = dnnl_success;
  for (size_t i = 0; i < args.size() && status == dnnl_success; ++i) {
    const DnnlArg& a = args.begin()[i];
    if (!a.desc) continue;
    void* data = const_cast<void*>(a.data);
    status = memory[i] ? dnnl_memory_set_data_handle_v2(memory[i], data, dnnl_stream().get())
                       : dnnl_memory_create(&memory[i], &a.desc->data, dnnl_engine().get(), data);
    exec[n++] = {a.arg, memory[i]};
  }
  if (status == dnnl_success) status = dnnl_primitive_execute(prim.get(), dnnl_stream().get(), n, exec.data());
  if (status == dnnl_success) status = dnnl_stream_wait(dnnl_stream().get());
  if (slot) slot->busy.store(false, std::memory_order_release);
  for (dnnl_memory_t m : temporary)
    if (m) dnnl_memory_destroy(m);
  check(status, "primitive execution");
}

namespace {

// The number of values when `from` is float32 in a dense strided layout (no blocking,
// no gaps, no offset) and `to` is the same layout in bfloat16; else 0.
int64_t same_layout_narrowing(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  using dt = dnnl::memory::data_type;
  if (from.data_type() != dt::f32 || to.data_type() != dt::bf16) return 0;
  const dnnl_memory_desc_t& f = from.data;
  if (f.format_kind != dnnl_blocked || f.format_desc.blocking.inner_nblks != 0 || f.offset0 != 0) return 0;
  const dnnl::memory::dims dims = from.dims();
  int64_t count = 1;
  for (int i = 0; i < f.ndims; ++i) {
    if (f.padded_dims[i] != f.dims[i]) return 0;
    count *= dims[static_cast<size_t>(i)];
  }
  const dnnl::memory::dims strides(f.format_desc.blocking.strides, f.format_desc.blocking.strides + f.ndims);
  if (count == 0 || from.get_size() != static_cast<size_t>(count) * sizeof(float)) return 0;
  return to == dnnl::memory::desc(dims, dt::bf16, strides) ? count : 0;
}

}  // namespace

DnnlReorder::DnnlReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
    : active_(from != to), from_(from), to_(to) {
  if (!active_) return;
  narrow_count_ = same_layout_narrowing(from, to);
  if (narrow_count_) return;
  const dnnl::reorder::primitive_desc pd(dnnl_engine(), from, dnnl_engine(), to, make_dnnl_attr());
  prim_ = dnnl::reorder(pd);
  scratch_md_ = pd.scratchpad_desc();
}

void DnnlReorder::run(const void* from, void* to, void* scratch) const {
  if (narrow_count_) {
    narrow_to_bfloat16(static_cast<const float*>(from), static_cast<uint16_t*>(to), narrow_count_);
    return;
  }
  dnnl_execute(prim_, handles_, {{DNNL_ARG_FROM, &from_, from}, {DNNL_ARG_TO, &to_, to}, {DNNL_ARG_SCRATCHPAD, &scratch_md_, scratch}});
}

std::string float32_only(const KernelInit& init, size_t input) {
  const DType t = init.inputs[input].dtype;
  if (t == DType::Float32) return "";
  return std::string("only float32 is supported, input ") + std::to_string(input) + " is " +
         dtype_name(t);
}

namespace {

void half_to_float(const uint16_t* from, float* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
    for (; i < e; ++i) to[i] = _cvtsh_ss(from[i]);
  });
}

void float_to_half(const float* from, uint16_t* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < e; ++i) to[i] = _cvtss_sh(from[i], _MM_FROUND_TO_NEAREST_INT);
  });
}

void bfloat16_to_float(const uint16_t* from, float* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) to[i] = bfloat16_bits_to_float(from[i]);
  });
}

// The conversions between float32 and one 16-bit float type.
struct HalfConversions {
  void (*to_float)(const uint16_t*, float*, int64_t);
  void (*from_float)(const float*, uint16_t*, int64_t);
};

HalfConversions conversions_for(DType half) {
  if (half == DType::BFloat16) return {bfloat16_to_float, narrow_to_bfloat16};
  return {half_to_float, float_to_half};
}

Tensor to_float32(const Tensor& t, const HalfConversions& convert) {
  Tensor out(DType::Float32, t.shape());
  convert.to_float(t.data_as<uint16_t>(), out.data_as<float>(), t.numel());
  return out;
}

constexpr size_t kMaxIo = 8;

class HalfAdapter final : public Kernel {
 public:
  HalfAdapter(KernelInit& init, std::string* why_not, KernelFactory factory, DType half)
      : convert_(conversions_for(half)) {
    if (init.inputs.size() > kMaxIo || init.outputs.size() > kMaxIo) {
      *why_not = std::string("too many inputs for the ") + dtype_name(half) + " conversion";
      return;
    }
    std::vector<TensorType> inputs = init.inputs, outputs = init.outputs;
    std::vector<const Tensor*> values = init.values;
    constants_.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype != half) continue;
      inputs[i].dtype = DType::Float32;
      convert_input_[i] = true;
      if (values[i]) {
        constants_.push_back(to_float32(*values[i], convert_));
        values[i] = &constants_.back();
      }
    }
    for (auto& t : outputs)
      if (t.dtype == half) t.dtype = DType::Float32;
    KernelInit inner{init.node, init.opset, init.device, inputs, values, outputs};
    inner.num_threads = init.num_threads;
    inner_ = factory(inner, why_not);
    if (!inner_) return;
    WorkspaceLayout ws;
    ws.take(inner.workspace_bytes);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (convert_input_[i] && !values[i]) input_at_[i] = ws.take(shape_numel(inputs[i].shape) * sizeof(float));
    for (size_t i = 0; i < init.outputs.size(); ++i)
      if (init.outputs[i].dtype == half) {
        convert_output_[i] = true;
        output_at_[i] = ws.take(shape_numel(outputs[i].shape) * sizeof(float));
      }
    init.workspace_bytes = ws.total();
    const_index_.fill(-1);
    for (size_t i = 0, c = 0; i < inputs.size(); ++i)
      if (convert_input_[i] && values[i]) const_index_[i] = static_cast<int>(c++);
  }

  bool ok() const { return inner_ != nullptr; }

  void run(const RunArgs& args) const override {
    std::array<Tensor, kMaxIo> in_views, out_views;
    std::array<const Tensor*, kMaxIo> ins{};
    std::array<Tensor*, kMaxIo> outs{};
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      ins[i] = args.inputs[i];
      if (!args.inputs[i] || !convert_input_[i]) continue;
      if (const_index_[i] >= 0) {
        ins[i] = &constants_[const_index_[i]];
        continue;
      }
      float* buf = static_cast<float*>(workspace_at(args, input_at_[i]));
      convert_.to_float(args.inputs[i]->data_as<uint16_t>(), buf, args.inputs[i]->numel());
      in_views[i] = Tensor::view(DType::Float32, args.inputs[i]->shape(), buf);
      ins[i] = &in_views[i];
    }
    for (size_t i = 0; i < args.outputs.size(); ++i) {
      outs[i] = args.outputs[i];
      if (!args.outputs[i] || !convert_output_[i]) continue;
      out_views[i] = Tensor::view(DType::Float32, args.outputs[i]->shape(), workspace_at(args, output_at_[i]));
      outs[i] = &out_views[i];
    }
    RunArgs inner_args{std::span(ins.data(), args.inputs.size()), std::span(outs.data(), args.outputs.size()),
                       args.workspace, args.num_threads, args.stream};
    inner_args.stop = args.stop;  // a wrapped recurrence stops when asked as well
    inner_->run(inner_args);
    for (size_t i = 0; i < args.outputs.size(); ++i)
      if (outs[i] && convert_output_[i])
        convert_.from_float(outs[i]->data_as<float>(), args.outputs[i]->data_as<uint16_t>(), outs[i]->numel());
  }

 private:
  HalfConversions convert_;
  std::unique_ptr<Kernel> inner_;
  std::vector<Tensor> constants_;  // 16-bit float constants converted at plan time
  std::array<bool, kMaxIo> convert_input_{}, convert_output_{};
  std::array<int, kMaxIo> const_index_{};
  std::array<size_t, kMaxIo> input_at_{}, output_at_{};
};

}  // namespace

std::unique_ptr<Kernel> half_via_float32(KernelInit& init, std::string* why_not, KernelFactory factory, DType half) {
  for (const TensorType& t : init.inputs)
    if (t.present() && t.dtype != half && t.dtype != DType::Float32) {
      *why_not = std::string(dtype_name(half)) + " mixed with " + dtype_name(t.dtype) + " is not supported";
      return nullptr;
    }
  auto kernel = std::make_unique<HalfAdapter>(init, why_not, factory, half);
  if (!kernel->ok()) return nullptr;
  return kernel;
}

}  // namespace ember
