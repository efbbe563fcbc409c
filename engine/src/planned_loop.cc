#include "engine/src/planned_loop.h"

#include "engine/src/plan_binding.h"

#include <ember/profile.h>

#include <ember/core/error.h>

#include <array>
#include <cstring>

namespace ember {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kNone = ~size_t{0};

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Iteration `index`'s slice of a tensor cut along one axis: `outer` runs of
// `inner_bytes` each, `length` slices apart.
struct Slicer {
  int64_t outer = 1, length = 0;
  size_t inner_bytes = 0;
  size_t slice_offset = kNone;  // workspace bytes for the slice; kNone: used in place

  Slicer(const ScanAxis& a, DType dtype) {
    int64_t inner = 1;
    for (int64_t d = 0; d < a.axis; ++d) outer *= a.full[d];
    for (size_t d = a.axis + 1; d < a.full.size(); ++d) inner *= a.full[d];
    length = a.full[a.axis];
    inner_bytes = dtype_bytes(dtype, inner);
  }
  size_t slice_bytes() const { return outer * inner_bytes; }
  bool in_place() const { return outer == 1; }
  char* at(char* full, int64_t index) const { return full + index * inner_bytes; }
  void gather(const char* full, int64_t index, char* slice) const {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(slice + o * inner_bytes, full + (o * length + index) * inner_bytes, inner_bytes);
  }
  void scatter(const char* slice, int64_t index, char* full) const {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(full + (o * length + index) * inner_bytes, slice + o * inner_bytes, inner_bytes);
  }
};

// The body plan's run-time input and output types, by position.
std::vector<TensorType> input_types(const Plan& plan) {
  std::vector<TensorType> types;
  for (const PlannedValue& v : plan.values) {
    if (v.storage != Storage::Input) continue;
    if (types.size() <= static_cast<size_t>(v.io_index)) types.resize(v.io_index + 1);
    types[v.io_index] = v.type;
  }
  return types;
}

size_t bytes_of(const TensorType& t) { return dtype_bytes(t.dtype, shape_numel(t.shape)); }

}  // namespace

// Where each piece lives in the step's workspace.
struct PlannedLoop::Layout {
  size_t iteration = kNone;
  std::vector<size_t> skipped;              // per skipped output
  std::vector<size_t> state_bytes;          // per state
  std::vector<std::array<size_t, 2>> state;  // per state, its two buffers
  std::vector<Slicer> scan_in, scan_out;
};

// A run context's state: the body bound over its workspace, with the views and
// argument arrays the iterations re-point. Made on the context's first run and again
// only if its workspace moves.
class PlannedLoop::State final : public KernelState {
 public:
  void bind(const LoopBody& body, void* at) {
    workspace = at;
    bound = PlanBinding::on_host(*body.plan, at);
    const std::vector<TensorType> in = input_types(*body.plan);
    const size_t own = (body.counts_iterations ? 1 : 0) + body.states + body.scan_inputs.size();
    in_views.clear();
    out_views.clear();
    for (size_t i = 0; i < own; ++i) in_views.push_back(Tensor::view(in[i].dtype, in[i].shape, nullptr));
    for (int id : body.plan->output_values) {
      const TensorType& t = body.plan->values[id].type;
      out_views.push_back(Tensor::view(t.dtype, t.shape, nullptr));
    }
    inputs.clear();
    outputs.clear();
    for (Tensor& t : in_views) inputs.push_back(&t);
    inputs.resize(in.size(), nullptr);  // the enclosing values, set per run
    for (Tensor& t : out_views) outputs.push_back(&t);
  }

  void* workspace = nullptr;
  std::unique_ptr<PlanBinding> bound;
  std::vector<Tensor> in_views, out_views;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;
};

PlannedLoop::PlannedLoop(LoopBody body) : body_(std::move(body)), layout_(std::make_unique<Layout>()) {
  const Plan& plan = *body_.plan;
  const std::vector<TensorType> in = input_types(plan);
  size_t end = align_up(plan.arena_size(Device{}));
  auto take = [&end](size_t bytes) {
    const size_t at = end;
    end += align_up(bytes);
    return at;
  };
  if (body_.counts_iterations) layout_->iteration = take(sizeof(int64_t));
  for (size_t k = 0; k < body_.skipped_outputs; ++k)
    layout_->skipped.push_back(take(bytes_of(plan.values[plan.output_values[k]].type)));
  const size_t first_state = body_.counts_iterations ? 1 : 0;
  for (size_t k = 0; k < body_.states; ++k) {
    const size_t bytes = bytes_of(in[first_state + k]);
    layout_->state_bytes.push_back(bytes);
    const size_t a = take(bytes);
    layout_->state.push_back({a, take(bytes)});
  }
  for (size_t j = 0; j < body_.scan_inputs.size(); ++j) {
    Slicer s(body_.scan_inputs[j], in[first_state + body_.states + j].dtype);
    if (!s.in_place()) s.slice_offset = take(s.slice_bytes());
    layout_->scan_in.push_back(s);
  }
  for (size_t j = 0; j < body_.scan_outputs.size(); ++j) {
    const int id = plan.output_values[body_.skipped_outputs + body_.states + j];
    Slicer s(body_.scan_outputs[j], plan.values[id].type.dtype);
    if (!s.in_place()) s.slice_offset = take(s.slice_bytes());
    layout_->scan_out.push_back(s);
  }
  workspace_bytes_ = end;
}

PlannedLoop::~PlannedLoop() = default;

std::unique_ptr<KernelState> PlannedLoop::make_state() const { return std::make_unique<State>(); }

void PlannedLoop::run(const RunArgs& args) const {
  State& b = *static_cast<State*>(args.state);
  if (!b.bound || b.workspace != args.workspace) b.bind(body_, args.workspace);
  const Layout& at = *layout_;
  char* ws = static_cast<char*>(args.workspace);
  const size_t first_state = body_.counts_iterations ? 1 : 0, first_scan = first_state + body_.states;
  const size_t own = first_scan + body_.scan_inputs.size();
  const size_t outer_at = body_.states + body_.scan_inputs.size();  // in the step's inputs
  for (size_t k = own; k < b.inputs.size(); ++k) b.inputs[k] = args.inputs[outer_at + k - own];
  if (body_.counts_iterations) b.in_views[0].reset_view(ws + at.iteration);
  for (size_t k = 0; k < body_.skipped_outputs; ++k) b.out_views[k].reset_view(ws + at.skipped[k]);

  const int64_t trips = body_.trips;
  if (trips == 0)
    for (size_t k = 0; k < body_.states; ++k)
      std::memcpy(args.outputs[k]->data(), args.inputs[k]->data(), at.state_bytes[k]);
  for (int64_t t = 0; t < trips; ++t) {
    check_stop(args.stop);  // a body of no steps would otherwise never check
    if (body_.counts_iterations) *reinterpret_cast<int64_t*>(ws + at.iteration) = t;
    for (size_t k = 0; k < body_.states; ++k) {
      const void* from = t == 0 ? args.inputs[k]->data() : ws + at.state[k][(t - 1) % 2];
      void* to = t == trips - 1 ? args.outputs[k]->data() : ws + at.state[k][t % 2];
      b.in_views[first_state + k].reset_view(const_cast<void*>(from));
      b.out_views[body_.skipped_outputs + k].reset_view(to);
    }
    for (size_t j = 0; j < at.scan_in.size(); ++j) {
      const Slicer& s = at.scan_in[j];
      const int64_t index = body_.scan_inputs[j].reverse ? trips - 1 - t : t;
      char* full = static_cast<char*>(const_cast<void*>(args.inputs[body_.states + j]->data()));
      if (!s.in_place()) s.gather(full, index, ws + s.slice_offset);
      b.in_views[first_scan + j].reset_view(s.in_place() ? s.at(full, index) : ws + s.slice_offset);
    }
    for (size_t j = 0; j < at.scan_out.size(); ++j) {
      const Slicer& s = at.scan_out[j];
      const int64_t index = body_.scan_outputs[j].reverse ? trips - 1 - t : t;
      char* full = static_cast<char*>(args.outputs[body_.states + j]->data());
      b.out_views[body_.skipped_outputs + body_.states + j].reset_view(s.in_place() ? s.at(full, index)
                                                                                    : ws + s.slice_offset);
    }
    b.bound->bind_io(b.inputs, b.outputs);
    b.bound->run_all(args.num_threads, args.profile, args.profile_origin_ns, args.stop);
    for (size_t j = 0; j < at.scan_out.size(); ++j) {
      const Slicer& s = at.scan_out[j];
      if (s.in_place()) continue;
      const int64_t index = body_.scan_outputs[j].reverse ? trips - 1 - t : t;
      s.scatter(ws + s.slice_offset, index, static_cast<char*>(args.outputs[body_.states + j]->data()));
    }
  }
}

}  // namespace ember
