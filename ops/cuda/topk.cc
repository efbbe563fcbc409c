// TopK on CUDA: the K largest (or smallest) elements along `axis` and their int64
// indices, equal values by lower index first, always sorted (as the CPU kernel does
// for sorted = 0 too). Rows up to kTopKChunk elements take one shared-memory bitonic
// sort per row; longer rows (with K <= kTopKChunk / 2) first shrink through passes
// that keep the top K of each chunk in the workspace (topk_impl.h). The passes are
// planned here, at plan time (topk_plan.cc); run() only launches them.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/topk_impl.h"
#include "ops/registry.h"
#include "graph/schemas/reduce.h"

#include <limits>
#include <utility>

namespace ember {

namespace {

class TopKKernel final : public Kernel {
 public:
  TopKKernel(cuda::TopKType type, bool largest, cuda::TopKPlan plan)
      : type_(type), largest_(largest), plan_(std::move(plan)) {}

  void run(const RunArgs& args) const override {
    const cudaStream_t stream = cuda::stream_context(args).stream;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const cuda::TopKPass p = cuda::bind_topk_pass(plan_, i, args.inputs[0]->data(), args.outputs[0]->data(),
                                                    args.outputs[1]->data_as<int64_t>(), args.workspace);
      cuda::launch_topk_pass(type_, largest_, p, stream);
      cuda::check_launch("TopK");
    }
  }

 private:
  cuda::TopKType type_;
  bool largest_;
  cuda::TopKPlan plan_;
};

bool topk_type(DType dtype, cuda::TopKType* type, size_t* bytes) {
  switch (dtype) {
    case DType::Float32: *type = cuda::TopKType::Float32; *bytes = 4; return true;
    case DType::Float16: *type = cuda::TopKType::Float16; *bytes = 2; return true;
    case DType::Int32: *type = cuda::TopKType::Int32; *bytes = 4; return true;
    case DType::Int64: *type = cuda::TopKType::Int64; *bytes = 8; return true;
    default: return false;
  }
}

std::unique_ptr<Kernel> make_topk(KernelInit& init, std::string* why_not) {
  cuda::TopKType type;
  size_t value_bytes = 0;
  if (!topk_type(init.inputs[0].dtype, &type, &value_bytes)) {
    *why_not = "TopK on CUDA takes float32, float16, int32 and int64, got " +
               std::string(dtype_name(init.inputs[0].dtype));
    return nullptr;
  }
  if (init.opset >= 10 && (init.values.size() < 2 || !init.values[1])) {
    *why_not = "TopK on CUDA needs K known at plan time";
    return nullptr;
  }
  if (init.node.outputs.size() < 2 || init.node.outputs[1].empty()) {
    // Both outputs are required by ONNX; the kernel writes both.
    *why_not = "TopK on CUDA needs both outputs (Values and Indices)";
    return nullptr;
  }
  const TopKParams p = topk_params(infer_context(init));
  const int64_t outer = p.outer, n = p.n, inner = p.inner, k = p.k;
  const bool largest = p.largest;
  const int64_t rows = outer * inner;

  if (n > std::numeric_limits<int32_t>::max()) {
    *why_not = "TopK on CUDA takes axes of at most 2^31 - 1 elements, got " + std::to_string(n);
    return nullptr;
  }
  if (n > cuda::kTopKChunk && k > cuda::kTopKChunk / 2) {
    *why_not = "TopK on CUDA takes K <= " + std::to_string(cuda::kTopKChunk / 2) + " when the axis is longer than " +
               std::to_string(cuda::kTopKChunk) + " elements (K = " + std::to_string(k) + ", axis length " +
               std::to_string(n) + ")";
    return nullptr;
  }

  cuda::TopKPlan plan = cuda::plan_topk(n, k, rows, inner, value_bytes);
  init.workspace_bytes = plan.workspace_bytes;
  return std::make_unique<TopKKernel>(type, largest, std::move(plan));
}

}  // namespace

EMBER_KERNEL("TopK", "", 1, kMaxOpset, DeviceKind::Cuda, make_topk);

}  // namespace ember
