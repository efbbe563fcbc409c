// The CPU as the device of tests/ops/cases: the node's CPU kernel, built as the
// planner builds it and run on two threads.
#include "ops/cases/op_test.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace ember::test {

namespace {

DeviceRun run_on_cpu_kernel(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                            const std::vector<int>& plan_time_inputs) {
  std::vector<TensorType> types;
  std::vector<const Tensor*> known(inputs.size(), nullptr);
  for (const Tensor* in : inputs) types.push_back(in ? TensorType{in->dtype(), in->shape()} : TensorType{});
  for (int i : plan_time_inputs) known[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)];
  const std::vector<TensorType> out_types = infer_node(node, opset, types, known);

  DeviceRun run;
  constexpr int kThreads = 2;
  for (const KernelEntry* entry : find_kernels(node.domain, node.op_type, opset, DeviceKind::Cpu)) {
    KernelInit init{node, opset, Device{DeviceKind::Cpu, 0}, types, known, out_types};
    init.num_threads = kThreads;
    std::string why;
    std::unique_ptr<Kernel> kernel = entry->factory(init, &why);
    if (!kernel) {
      run.why_not += (run.why_not.empty() ? "" : "; ") + why;
      continue;
    }
    run.taken = true;
    std::vector<Tensor*> outputs;
    for (const TensorType& t : out_types) {
      run.outputs.push_back(t.present() ? Tensor(t.dtype, t.shape) : Tensor());
      // A pattern, not zeros: an output the kernel forgets to write must not pass.
      if (t.present()) std::memset(run.outputs.back().data(), 0x7f, run.outputs.back().nbytes());
    }
    for (Tensor& t : run.outputs) outputs.push_back(&t);
    if (entry->flags.output_aliases_input0) {  // the planner shares the bytes instead
      std::memcpy(run.outputs[0].data(), inputs[0]->data(), inputs[0]->nbytes());
      return run;
    }
    std::unique_ptr<void, decltype(&std::free)> workspace(
        init.workspace_bytes ? std::aligned_alloc(64, (init.workspace_bytes + 63) / 64 * 64) : nullptr, &std::free);
    kernel->run(RunArgs{inputs, outputs, workspace.get(), kThreads, nullptr});
    return run;
  }
  return run;
}

}  // namespace

const OpTestDevice& op_test_device() {
  static const OpTestDevice device{"cpu", [] { return std::string(); }, run_on_cpu_kernel};
  return device;
}

}  // namespace ember::test
