// If, Loop and Scan (opset 8 and 9+) on the CPU. Bodies run node by node through evaluate_node, with
// the enclosing graphs' values visible by name; outputs are allocated here because
// only running the body tells their shapes.
#include "ops/cpu/control_flow_util.h"
#include "ops/evaluate.h"
#include "ops/registry.h"
#include "ops/run_stop.h"

#include <ember/core/error.h>

#include <algorithm>
#include <cstring>

namespace ember {

Tensor stack(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Node& node) {
  if (parts.empty()) return Tensor(dtype, {0});
  const Shape& s = parts[0].shape();
  for (const Tensor& p : parts)
    if (p.shape() != s) throw Error(node.label() + ": scan outputs change shape between iterations");
  if (axis < 0) axis += static_cast<int64_t>(s.size()) + 1;
  Shape out_shape = s;
  out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), out_shape);
  const size_t elem = dtype_bytes(parts[0].dtype(), 1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis; d < s.size(); ++d) inner *= s[d];
  for (size_t p = 0; p < parts.size(); ++p)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) + ((o * parts.size() + p) * inner) * elem,
                  static_cast<const char*>(parts[p].data()) + o * inner * elem, inner * elem);
  return out;
}

bool truth(const Tensor& t, const Node& node) {
  if (t.numel() != 1) throw Error(node.label() + ": the condition must hold one element");
  return *static_cast<const uint8_t*>(t.data()) != 0;
}

int64_t loop_trip_count(const Tensor* max_trips, const Node& node) {
  if (!max_trips) return -1;
  if (max_trips->dtype() != DType::Int64 || max_trips->numel() != 1)
    throw Error(node.label() + ": the trip count M must be one int64");
  return std::max<int64_t>(*max_trips->data_as<int64_t>(), 0);
}

namespace {

using Scope = std::unordered_map<std::string, Tensor>;

// Runs `body` on `inputs` (bound to its inputs in order) in the scope of `outer`,
// checking the run's `stop` (if any) after each node.
std::vector<Tensor> run_body(const Graph& body, int64_t opset, const std::vector<Tensor>& inputs,
                             const Scope& outer, int num_threads, const RunStop* stop) {
  Scope scope = outer;
  for (const auto& [name, t] : body.initializers) scope[name] = t;
  for (size_t i = 0; i < body.inputs.size() && i < inputs.size(); ++i) scope[body.inputs[i].name] = inputs[i];
  for (const Node& n : body.nodes) {
    std::vector<const Tensor*> args;
    for (const auto& name : n.inputs) {
      if (name.empty()) {
        args.push_back(nullptr);
        continue;
      }
      auto it = scope.find(name);
      if (it == scope.end()) throw Error(n.label() + ": reads '" + name + "', which nothing in scope defines");
      args.push_back(&it->second);
    }
    std::vector<Tensor> out = evaluate_node(n, opset, args, num_threads, &scope, stop);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) scope[n.outputs[k]] = std::move(out[k]);
    if (stop) stop->node_done();
  }
  std::vector<Tensor> results;
  for (const auto& o : body.outputs) results.push_back(scope.at(o.name));
  return results;
}


// Element `index` of `t` along `axis`, without that axis.
Tensor slice_at(const Tensor& t, int64_t axis, int64_t index) {
  Shape s = t.shape();
  const int64_t n = s[axis];
  s.erase(s.begin() + axis);
  Tensor out(t.dtype(), s);
  const size_t elem = dtype_bytes(t.dtype(), 1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.shape()[d];
  for (size_t d = axis + 1; d < t.shape().size(); ++d) inner *= t.shape()[d];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.data()) + o * inner * elem,
                static_cast<const char*>(t.data()) + ((o * n + index) * inner) * elem, inner * elem);
  return out;
}

const Scope& scope_of(const RunArgs& args) {
  static const Scope empty;
  return args.scope ? *args.scope : empty;
}

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelInit& init) : node_(init.node), opset_(init.opset) {}
  void run(const RunArgs& args) const override {
    const bool cond = truth(*args.inputs[0], node_);
    const Graph& branch = node_.attributes.get_graph(cond ? "then_branch" : "else_branch");
    std::vector<Tensor> results = run_body(branch, opset_, {}, scope_of(args), args.num_threads, args.stop);
    for (size_t i = 0; i < args.outputs.size() && i < results.size(); ++i)
      if (args.outputs[i]) *args.outputs[i] = results[i];
  }

 private:
  const Node& node_;
  int64_t opset_;
};

class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelInit& init) : node_(init.node), opset_(init.opset) {}
  void run(const RunArgs& args) const override {
    const Graph& body = node_.attributes.get_graph("body");
    const Tensor* max_trips = args.inputs.size() > 0 ? args.inputs[0] : nullptr;
    const Tensor* cond_in = args.inputs.size() > 1 ? args.inputs[1] : nullptr;
    const int64_t trips = loop_trip_count(max_trips, node_);
    bool cond = cond_in ? truth(*cond_in, node_) : true;
    std::vector<Tensor> carried;
    for (size_t i = 2; i < args.inputs.size(); ++i) carried.push_back(*args.inputs[i]);
    const size_t n_carried = carried.size();
    std::vector<std::vector<Tensor>> scans(body.outputs.size() - 1 - n_carried);

    for (int64_t i = 0; (trips < 0 || i < trips) && cond; ++i) {
      if (i >= kMaxLoopIterations) throw Error(node_.label() + ": ran past 2^31 iterations");
      check_stop(args.stop);  // an empty body would otherwise never check
      Tensor iteration(DType::Int64, {});
      *iteration.data_as<int64_t>() = i;
      Tensor cond_tensor(DType::Bool, {});
      *cond_tensor.data_as<uint8_t>() = cond;
      std::vector<Tensor> body_inputs = {iteration, cond_tensor};
      body_inputs.insert(body_inputs.end(), carried.begin(), carried.end());
      std::vector<Tensor> out = run_body(body, opset_, body_inputs, scope_of(args), args.num_threads, args.stop);
      if (cond_in) cond = truth(out[0], node_);  // without a condition input it is ignored
      for (size_t k = 0; k < n_carried; ++k) carried[k] = out[1 + k].clone();
      for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(out[1 + n_carried + k].clone());
    }
    for (size_t k = 0; k < n_carried && k < args.outputs.size(); ++k)
      if (args.outputs[k]) *args.outputs[k] = carried[k];
    for (size_t k = 0; k < scans.size() && n_carried + k < args.outputs.size(); ++k)
      if (args.outputs[n_carried + k])
        *args.outputs[n_carried + k] = stack(scans[k], 0, body.outputs[1 + n_carried + k].dtype, node_);
  }

 private:
  const Node& node_;
  int64_t opset_;
};

class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(const KernelInit& init) : node_(init.node), opset_(init.opset) {
    const auto& a = node_.attributes;
    num_scan_inputs_ = a.get_int("num_scan_inputs");
    input_axes_ = a.get_ints_or("scan_input_axes", {});
    input_directions_ = a.get_ints_or("scan_input_directions", {});
    output_axes_ = a.get_ints_or("scan_output_axes", {});
    output_directions_ = a.get_ints_or("scan_output_directions", {});
  }
  void run(const RunArgs& args) const override {
    const Graph& body = node_.attributes.get_graph("body");
    const size_t n_states = args.inputs.size() - num_scan_inputs_;
    std::vector<Tensor> states;
    for (size_t i = 0; i < n_states; ++i) states.push_back(*args.inputs[i]);
    int64_t length = -1;
    std::vector<int64_t> axes(num_scan_inputs_);
    for (int64_t k = 0; k < num_scan_inputs_; ++k) {
      const Tensor& in = *args.inputs[n_states + k];
      int64_t axis = k < static_cast<int64_t>(input_axes_.size()) ? input_axes_[k] : 0;
      if (axis < 0) axis += in.rank();
      axes[k] = axis;
      if (length >= 0 && in.shape()[axis] != length)
        throw Error(node_.label() + ": scan inputs differ in length");
      length = in.shape()[axis];
    }
    const size_t n_scan_out = body.outputs.size() - n_states;
    std::vector<std::vector<Tensor>> scans(n_scan_out);
    for (int64_t t = 0; t < length; ++t) {
      check_stop(args.stop);
      std::vector<Tensor> body_inputs = states;
      for (int64_t k = 0; k < num_scan_inputs_; ++k) {
        const bool reverse = k < static_cast<int64_t>(input_directions_.size()) && input_directions_[k];
        body_inputs.push_back(slice_at(*args.inputs[n_states + k], axes[k], reverse ? length - 1 - t : t));
      }
      std::vector<Tensor> out = run_body(body, opset_, body_inputs, scope_of(args), args.num_threads, args.stop);
      for (size_t k = 0; k < n_states; ++k) states[k] = out[k].clone();
      for (size_t k = 0; k < n_scan_out; ++k) scans[k].push_back(out[n_states + k].clone());
    }
    for (size_t k = 0; k < n_states; ++k)
      if (args.outputs[k]) *args.outputs[k] = states[k];
    for (size_t k = 0; k < n_scan_out; ++k) {
      if (!args.outputs[n_states + k]) continue;
      if (k < output_directions_.size() && output_directions_[k]) std::reverse(scans[k].begin(), scans[k].end());
      const int64_t axis = k < output_axes_.size() ? output_axes_[k] : 0;
      *args.outputs[n_states + k] = stack(scans[k], axis, body.outputs[n_states + k].dtype, node_);
    }
  }

 private:
  const Node& node_;
  int64_t opset_;
  int64_t num_scan_inputs_ = 0;
  std::vector<int64_t> input_axes_, input_directions_, output_axes_, output_directions_;
};

// Scan-8: every input and output has a batch axis 0, and the scan inputs' sequence axis
// is 1. The optional input 0, sequence_lens [batch] (int64), gives each batch item's
// length (default: the whole axis); `directions` reverses a scan input. Each batch item
// runs the body over its own sequence; scan outputs of a shorter item are padded with
// zeros to the longest.
class Scan8Kernel final : public Kernel {
 public:
  explicit Scan8Kernel(const KernelInit& init) : node_(init.node), opset_(init.opset) {
    num_scan_inputs_ = node_.attributes.get_int("num_scan_inputs");
    directions_ = node_.attributes.get_ints_or("directions", {});
  }

  void run(const RunArgs& args) const override {
    const Graph& body = node_.attributes.get_graph("body");
    const Tensor* lens = args.inputs.empty() ? nullptr : args.inputs[0];
    const int64_t n_inputs = static_cast<int64_t>(args.inputs.size()) - 1;
    if (num_scan_inputs_ < 1 || num_scan_inputs_ > n_inputs)
      throw Error(node_.label() + ": num_scan_inputs must be between 1 and the " + std::to_string(n_inputs) + " inputs");
    const int64_t n_states = n_inputs - num_scan_inputs_;
    const size_t n_scan_out = body.outputs.size() - n_states;
    std::vector<const Tensor*> in(args.inputs.begin() + 1, args.inputs.end());
    for (const Tensor* t : in)
      if (!t || t->rank() < 1) throw Error(node_.label() + ": every state and scan input needs a batch axis");
    const int64_t batch = in[0]->shape()[0], max_len = scan_length(in, n_states);
    for (const Tensor* t : in)
      if (t->shape()[0] != batch) throw Error(node_.label() + ": the inputs differ in batch size");
    if (lens && (lens->dtype() != DType::Int64 || lens->numel() != batch))
      throw Error(node_.label() + ": sequence_lens must be int64 [" + std::to_string(batch) + "]");

    std::vector<std::vector<Tensor>> final_states(n_states), scan_outs(n_scan_out);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens ? lens->data_as<int64_t>()[b] : max_len;
      if (len < 0 || len > max_len)
        throw Error(node_.label() + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                    " is outside [0, " + std::to_string(max_len) + "]");
      std::vector<Tensor> states, sequences;
      for (int64_t k = 0; k < n_states; ++k) states.push_back(slice_at(*in[k], 0, b));
      for (int64_t k = 0; k < num_scan_inputs_; ++k) sequences.push_back(slice_at(*in[n_states + k], 0, b));
      std::vector<std::vector<Tensor>> steps(n_scan_out);
      for (int64_t t = 0; t < len; ++t) {
        check_stop(args.stop);
        std::vector<Tensor> body_inputs = states;
        for (int64_t k = 0; k < num_scan_inputs_; ++k) {
          const bool reverse = k < static_cast<int64_t>(directions_.size()) && directions_[k];
          body_inputs.push_back(slice_at(sequences[k], 0, reverse ? len - 1 - t : t));
        }
        std::vector<Tensor> out = run_body(body, opset_, body_inputs, scope_of(args), args.num_threads, args.stop);
        for (int64_t k = 0; k < n_states; ++k) states[k] = out[k].clone();
        for (size_t k = 0; k < n_scan_out; ++k) steps[k].push_back(out[n_states + k].clone());
      }
      for (int64_t k = 0; k < n_states; ++k) final_states[k].push_back(states[k]);
      for (size_t k = 0; k < n_scan_out; ++k) scan_outs[k].push_back(padded(steps[k], max_len, body.outputs[n_states + k].dtype));
    }
    for (int64_t k = 0; k < n_states; ++k)
      if (args.outputs[k]) *args.outputs[k] = stack(final_states[k], 0, body.outputs[k].dtype, node_);
    for (size_t k = 0; k < n_scan_out; ++k)
      if (args.outputs[n_states + k])
        *args.outputs[n_states + k] = stack(scan_outs[k], 0, body.outputs[n_states + k].dtype, node_);
  }

 private:
  int64_t scan_length(const std::vector<const Tensor*>& in, int64_t n_states) const {
    int64_t length = -1;
    for (int64_t k = n_states; k < static_cast<int64_t>(in.size()); ++k) {
      if (in[k]->rank() < 2) throw Error(node_.label() + ": a scan input needs batch and sequence axes");
      if (length >= 0 && in[k]->shape()[1] != length) throw Error(node_.label() + ": scan inputs differ in length");
      length = in[k]->shape()[1];
    }
    return length;
  }

  // The steps of one batch item stacked on a new axis 0, zero-padded to `length`.
  Tensor padded(const std::vector<Tensor>& steps, int64_t length, DType dtype) const {
    if (steps.empty() && length > 0)
      throw Error(node_.label() + ": a batch item of length 0 leaves its scan outputs' shape unknown");
    Tensor done = stack(steps, 0, dtype, node_);
    if (static_cast<int64_t>(steps.size()) == length) return done;
    Shape shape = done.shape();
    shape[0] = length;
    Tensor out(done.dtype(), shape);
    std::memset(out.data(), 0, out.nbytes());
    std::memcpy(out.data(), done.data(), done.nbytes());
    return out;
  }

  const Node& node_;
  int64_t opset_;
  int64_t num_scan_inputs_ = 0;
  std::vector<int64_t> directions_;
};

template <class K>
std::unique_ptr<Kernel> make(KernelInit& init, std::string*) {
  return std::make_unique<K>(init);
}

constexpr KernelFlags kSizesOwnOutputs{.sizes_own_outputs = true};
EMBER_KERNEL_FLAGS("If", "", 1, kMaxOpset, DeviceKind::Cpu, make<IfKernel>, kSizesOwnOutputs);
EMBER_KERNEL_FLAGS("Loop", "", 1, kMaxOpset, DeviceKind::Cpu, make<LoopKernel>, kSizesOwnOutputs);
EMBER_KERNEL_FLAGS("Scan", "", 8, 8, DeviceKind::Cpu, make<Scan8Kernel>, kSizesOwnOutputs);
EMBER_KERNEL_FLAGS("Scan", "", 9, kMaxOpset, DeviceKind::Cpu, make<ScanKernel>, kSizesOwnOutputs);

}  // namespace

}  // namespace ember
