// com.ember FusedElementwise on CUDA: the program graph/passes/fuse_elementwise.cc
// wrote, checked and packed once at plan time, run by one kernel launch.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/elementwise.h"
#include "ops/cuda/elementwise_fused_impl.h"
#include "ops/registry.h"

namespace ember::cuda {

namespace {

class FusedElementwiseKernel final : public Kernel {
 public:
  FusedElementwiseKernel(const FusedProgram& program, FloatStorage storage) : program_(program), storage_(storage) {}

  void run(const RunArgs& args) const override {
    launch_fused_elementwise(program_, storage_, args.inputs[0]->data(), args.outputs[0]->data(),
                             args.outputs[0]->numel(), stream_context(args).stream);
    check_launch("FusedElementwise on CUDA");
  }

 private:
  FusedProgram program_;
  FloatStorage storage_;
};

// Reads the node's program into `p`; false with *why_not when it is malformed.
bool read_program(const Node& node, FusedProgram& p, std::string* why_not) {
  const std::vector<int64_t> program = node.attributes.get_ints_or("program", {});
  const std::vector<float> constants = node.attributes.get_floats_or("constants", {});
  const auto steps = static_cast<int64_t>(program.size() / 3);
  if (program.size() % 3 != 0 || steps == 0 || steps > kMaxElementwiseSteps ||
      constants.size() > std::size(p.constants)) {
    *why_not = node.label() + ": a malformed program";
    return false;
  }
  p.steps = static_cast<int32_t>(steps);
  std::copy(constants.begin(), constants.end(), p.constants);
  const auto num_constants = static_cast<int64_t>(constants.size());
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t op = program[3 * s], a = program[3 * s + 1], b = program[3 * s + 2];
    // An operand reads an earlier register (0..s) or a constant (-1..-num_constants).
    const auto valid = [&](int64_t v) { return v <= s && v >= -num_constants; };
    // A unary step's parameters: alpha and beta in two constants from b on.
    const bool params_ok = op < kUnaryStep || b >= 0 || -b < num_constants;
    if (op < 0 || op >= kNumSteps || !valid(a) || !valid(b) || !params_ok) {
      *why_not = node.label() + ": a malformed program at step " + std::to_string(s);
      return false;
    }
    p.op[s] = static_cast<int32_t>(op);
    p.a[s] = static_cast<int32_t>(a);
    p.b[s] = static_cast<int32_t>(b);
  }
  return true;
}

std::unique_ptr<Kernel> make_fused_elementwise(KernelInit& init, std::string* why_not) {
  const DType dtype = init.inputs[0].dtype;
  FloatStorage storage;
  if (!float_storage(dtype, &storage)) {
    *why_not = unsupported_on_cuda(init, dtype);
    return nullptr;
  }
  FusedProgram program;
  if (!read_program(init.node, program, why_not)) return nullptr;
  return std::make_unique<FusedElementwiseKernel>(program, storage);
}

}  // namespace

EMBER_KERNEL("FusedElementwise", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_fused_elementwise);

}  // namespace ember::cuda
