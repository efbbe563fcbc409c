// Registry-level coverage, checked without a GPU: every node the four models keep after
// the graph passes has a CUDA kernel registered, so a GPU run does not fall back to the
// CPU for want of one. (Whether each kernel takes the node's dtypes and attributes is
// only known on a GPU: test_cuda_session and scripts/gpu_check.sh check that.)
#include "graph/passes/passes.h"
#include "loader/onnx_loader.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <ember/devices.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace ember {
namespace {

// Ops the planner evaluates at plan time from shapes alone: they never run.
const std::set<std::string> kFoldedByThePlanner = {"Shape", "Size", "Constant"};

std::set<std::string> ops_without_cuda_kernels(const std::string& path) {
  list_gpus();  // loads the CUDA module, whose kernels register themselves as it loads
  Graph graph = load_model(path);
  optimize_graph(graph, cpu_node_evaluator());
  std::set<std::string> missing;
  for (const Node& node : graph.nodes) {
    if (node.domain.empty() && kFoldedByThePlanner.count(node.op_type)) continue;
    if (find_kernels(node.domain, node.op_type, graph.opset(node.domain), DeviceKind::Cuda).empty())
      missing.insert((node.domain.empty() ? "" : node.domain + "::") + node.op_type);
  }
  return missing;
}

TEST(CudaCoverage, TheDefaultModelHasACudaKernelForEveryNode) {
  const std::string model = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";
  EXPECT_EQ(ops_without_cuda_kernels(model), std::set<std::string>{});
}

TEST(CudaCoverage, TheBenchmarkModelsHaveACudaKernelForEveryNode) {
  const std::filesystem::path dir = std::filesystem::path(EMBER_BINARY_DIR) / "models";
  int checked = 0;
  for (const char* name : {"resnet50", "mobilenetv2", "bert", "gpt2"}) {
    const auto path = dir / (std::string(name) + ".onnx");
    if (!std::filesystem::exists(path)) continue;
    ++checked;
    EXPECT_EQ(ops_without_cuda_kernels(path.string()), std::set<std::string>{}) << name;
  }
  if (checked == 0) GTEST_SKIP() << "no models in " << dir << " yet (ctest -L models builds them)";
}

}  // namespace
}  // namespace ember
