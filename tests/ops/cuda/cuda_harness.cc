#include "cuda_harness.h"

#include "ops/cuda/cuda_common.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <ember/devices.h>
#include <ember/core/error.h>

#include <cmath>
#include <sstream>

namespace ember::test {

std::string why_no_gpu() {
  static const std::string why = [] {
    const GpuReport report = list_gpus();
    if (!report.problem.empty()) return "no GPU: " + report.problem;
    return std::string();
  }();
  return why;
}

Tensor cast_to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Node cast = make_node("Cast", 1);
  cast.attributes.set_int("to", static_cast<int64_t>(dtype));
  return evaluate_node(cast, 21, {&t})[0];
}

namespace {

using cuda::check;

// Device memory that frees itself.
struct DeviceBuffer {
  void* data = nullptr;
  explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&data, bytes ? bytes : 1), "cudaMalloc in a test"); }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct ContextDeleter {
  void operator()(cuda::StreamContext* c) const { cuda::destroy_stream_context(c); }
};

cuda::StreamContext& shared_context() {
  static std::unique_ptr<cuda::StreamContext, ContextDeleter> context(cuda::create_stream_context(0));
  return *context;
}

}  // namespace

DeviceRun try_run_on_cuda(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                          const std::vector<int>& plan_time_inputs) {
  DeviceRun run;
  cuda::StreamContext& context = shared_context();
  check(cudaSetDevice(context.device), "cudaSetDevice");
  std::vector<TensorType> types;
  std::vector<const Tensor*> known(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    types.push_back(inputs[i] ? TensorType{inputs[i]->dtype(), inputs[i]->shape()} : TensorType{});
  }
  for (int i : plan_time_inputs) known[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)];
  const std::vector<TensorType> out_types = infer_node(node, opset, types, known);

  const Device device{DeviceKind::Cuda, context.device};
  // The plan-time inputs stand for session weights: kernels may pack them (and their
  // packed forms live as long as the kernel).
  PackedWeights packed;
  std::unique_ptr<Kernel> kernel;
  const KernelEntry* chosen = nullptr;
  size_t workspace_bytes = 0;
  for (const KernelEntry* entry : find_kernels(node.domain, node.op_type, opset, DeviceKind::Cuda)) {
    KernelInit init{node, opset, device, types, known, out_types};
    init.device_context = &context;
    init.packed_weights = &packed;
    for (const Tensor* value : known) init.weights.push_back(value != nullptr);
    std::string why;
    kernel = entry->factory(init, &why);
    if (kernel) {
      chosen = entry;
      workspace_bytes = init.workspace_bytes;
      break;
    }
    run.why_not += (run.why_not.empty() ? "" : "; ") + why;
  }
  if (!kernel) return run;
  run.taken = true;

  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<Tensor> device_inputs, device_outputs;
  device_inputs.reserve(inputs.size());
  for (const Tensor* in : inputs) {
    if (!in) {
      device_inputs.emplace_back();
      continue;
    }
    buffers.push_back(std::make_unique<DeviceBuffer>(in->nbytes()));
    check(cudaMemcpy(buffers.back()->data, in->data(), in->nbytes(), cudaMemcpyHostToDevice), "upload");
    device_inputs.push_back(Tensor::view(in->dtype(), in->shape(), buffers.back()->data, device));
  }
  device_outputs.reserve(out_types.size());
  for (const TensorType& t : out_types) {
    const size_t bytes = t.present() ? dtype_bytes(t.dtype, shape_numel(t.shape)) : 0;
    buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
    // A pattern, not zeros: an output the kernel forgets to write must not pass.
    check(cudaMemset(buffers.back()->data, 0x7f, bytes), "cudaMemset");
    device_outputs.push_back(Tensor::view(t.dtype, t.shape, buffers.back()->data, device));
  }
  // The copies and fills above went through the legacy stream, which the kernel's
  // non-blocking stream does not wait for.
  check(cudaDeviceSynchronize(), "waiting for the test's uploads");
  if (chosen->flags.output_aliases_input0) {  // the planner never runs these: bytes are shared
    check(cudaMemcpy(device_outputs[0].data(), device_inputs[0].data(), inputs[0]->nbytes(),
                     cudaMemcpyDeviceToDevice), "alias copy");
  } else {
    DeviceBuffer workspace(workspace_bytes);
    std::vector<const Tensor*> in_ptrs;
    std::vector<Tensor*> out_ptrs;
    for (size_t i = 0; i < inputs.size(); ++i) in_ptrs.push_back(inputs[i] ? &device_inputs[i] : nullptr);
    for (Tensor& t : device_outputs) out_ptrs.push_back(&t);
    RunArgs args{in_ptrs, out_ptrs, workspace_bytes ? workspace.data : nullptr, 1, &context};
    kernel->run(args);
    check(cudaStreamSynchronize(context.stream), (node.label() + " on the GPU").c_str());
  }
  for (size_t i = 0; i < out_types.size(); ++i) {
    if (!out_types[i].present()) {
      run.outputs.emplace_back();
      continue;
    }
    Tensor host(out_types[i].dtype, out_types[i].shape);
    check(cudaMemcpy(host.data(), device_outputs[i].data(), host.nbytes(), cudaMemcpyDeviceToHost), "download");
    run.outputs.push_back(std::move(host));
  }
  return run;
}

std::vector<Tensor> run_on_cuda(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                const std::vector<int>& plan_time_inputs) {
  DeviceRun run = try_run_on_cuda(node, opset, inputs, plan_time_inputs);
  if (!run.taken)
    ADD_FAILURE() << node.label() << ": no CUDA kernel takes it at opset " << opset << " (" << run.why_not << ")";
  return std::move(run.outputs);
}

const OpTestDevice& op_test_device() {
  static const OpTestDevice device{
#ifdef EMBER_CUDA_EMULATOR
      "emulated cuda",
#else
      "cuda",
#endif
      why_no_gpu, try_run_on_cuda};
  return device;
}

std::vector<Tensor> run_on_cpu(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> widened;
  widened.reserve(inputs.size());
  std::vector<const Tensor*> ptrs;
  for (const Tensor* in : inputs) {
    if (in && (in->dtype() == DType::Float16 || in->dtype() == DType::BFloat16)) {
      widened.push_back(cast_to(*in, DType::Float32));
      ptrs.push_back(&widened.back());
    } else {
      ptrs.push_back(in);
    }
  }
  return evaluate_node(node, opset, ptrs);
}

void expect_cuda_matches_cpu(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                             double rtol, double atol, const std::vector<int>& plan_time_inputs) {
  const std::vector<Tensor> want = run_on_cpu(node, opset, inputs);
  const std::vector<Tensor> got = run_on_cuda(node, opset, inputs, plan_time_inputs);
  if (got.empty()) return;  // run_on_cuda has failed the test
  ASSERT_EQ(got.size(), want.size()) << node.label();
  std::ostringstream what;
  what << node.label() << " inputs";
  for (const Tensor* in : inputs) what << " " << (in ? dtype_name(in->dtype()) + shape_to_string(in->shape()) : "-");
  for (size_t i = 0; i < got.size(); ++i)
    if (!want[i].empty() && !got[i].empty()) expect_close(got[i], want[i], rtol, atol, what.str() + " output " + std::to_string(i));
}

}  // namespace ember::test
