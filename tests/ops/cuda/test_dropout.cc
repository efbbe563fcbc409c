// Dropout in inference on CUDA: output = input (ratio ignored), the bool mask all
// true when it is asked for; an alias of the input when it is not. training_mode must
// be a constant false. The registration and the declines are checked without a GPU.
#include "cuda_harness.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <string>
#include <vector>

namespace ember::test {
namespace {

// Exact: the output is a copy, the mask a constant.
constexpr double kExact = 0;

Tensor scalar_float(float v) {
  Tensor t(DType::Float32, {});
  *t.data_as<float>() = v;
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t(DType::Bool, {});
  *t.data_as<bool>() = v;
  return t;
}

const Shape kShapes[] = {{1}, {7}, {3, 33}, {257, 5}, {2, 3, 1000}};
const DType kTypes[] = {DType::Float32, DType::Float16, DType::Int64};

// The CUDA factories in registration order, without a GPU: the first that takes the
// node (its flags through *entry) or every reason.
std::string cuda_dropout_reason(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                const std::vector<const Tensor*>& values, const KernelEntry** chosen = nullptr) {
  std::vector<TensorType> types;
  for (const Tensor* t : inputs) types.push_back(t ? TensorType{t->dtype(), t->shape()} : TensorType{});
  const std::vector<TensorType> outputs = infer_node(node, opset, types, values);
  std::string reasons;
  for (const KernelEntry* entry : find_kernels("", "Dropout", opset, DeviceKind::Cuda)) {
    KernelInit init{node, opset, Device{DeviceKind::Cuda, 0}, types, values, outputs};
    std::string why;
    if (entry->factory(init, &why)) {
      if (chosen) *chosen = entry;
      return "";
    }
    reasons += why + "; ";
  }
  return reasons;
}

TEST(CudaDropoutPlan, WithoutMaskIsAnAliasOfTheInput) {
  const Tensor x(DType::Float32, {3, 4}), ratio = scalar_float(0.3f), off = scalar_bool(false);
  const KernelEntry* entry = nullptr;
  EXPECT_EQ(cuda_dropout_reason(make_node("Dropout", 1, 1), 7, {&x}, {nullptr}, &entry), "");
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->flags.output_aliases_input0);
  entry = nullptr;
  EXPECT_EQ(cuda_dropout_reason(make_node("Dropout", 3, 1), 13, {&x, &ratio, &off}, {nullptr, &ratio, &off}, &entry),
            "");
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->flags.output_aliases_input0);
}

TEST(CudaDropoutPlan, WithMaskIsAKernel) {
  const Tensor x(DType::Float16, {3, 4}), off = scalar_bool(false);
  const KernelEntry* entry = nullptr;
  EXPECT_EQ(cuda_dropout_reason(make_node("Dropout", 1, 2), 13, {&x}, {nullptr}, &entry), "");
  ASSERT_NE(entry, nullptr);
  EXPECT_FALSE(entry->flags.output_aliases_input0);
  Node no_ratio = make_node("Dropout", 3, 2);
  no_ratio.inputs[1] = "";  // ratio absent, training_mode given
  entry = nullptr;
  EXPECT_EQ(cuda_dropout_reason(no_ratio, 12, {&x, nullptr, &off}, {nullptr, nullptr, &off}, &entry), "");
  ASSERT_NE(entry, nullptr);
  EXPECT_FALSE(entry->flags.output_aliases_input0);
}

TEST(CudaDropoutPlan, DeclinesTrainingMode) {
  const Tensor x(DType::Float32, {3, 4}), ratio = scalar_float(0.5f), on = scalar_bool(true);
  for (size_t outputs : {1u, 2u}) {
    const Node node = make_node("Dropout", 3, outputs);
    EXPECT_NE(cuda_dropout_reason(node, 13, {&x, &ratio, &on}, {nullptr, &ratio, &on}).find("training_mode"),
              std::string::npos);
    // Not known at plan time: it might be true.
    EXPECT_NE(cuda_dropout_reason(node, 13, {&x, &ratio, &on}, {nullptr, &ratio, nullptr}).find("training_mode"),
              std::string::npos);
  }
}

TEST(CudaDropoutPlan, DeclinesAFloatMaskBeforeOpset10) {
  const Tensor x(DType::Float32, {3, 4});
  EXPECT_NE(cuda_dropout_reason(make_node("Dropout", 1, 2), 7, {&x}, {nullptr}).find("bool mask"), std::string::npos);
}

TEST(CudaDropout, WithoutMaskEqualsTheInput) {
  EMBER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (DType t : kTypes)
    for (const Shape& s : kShapes) {
      std::mt19937 rng(seed++);
      const Tensor x = random_tensor(t, s, -5, 5, rng);
      const Tensor ratio = scalar_float(0.25f), off = scalar_bool(false);
      SCOPED_TRACE(std::string(dtype_name(t)) + shape_to_string(s));
      expect_cuda_matches_cpu(make_node("Dropout", 1, 1), 7, {&x}, kExact, kExact);
      expect_cuda_matches_cpu(make_node("Dropout", 3, 1), 13, {&x, &ratio, &off}, kExact, kExact, {1, 2});
    }
}

TEST(CudaDropout, WithMaskCopiesAndSetsTheMaskTrue) {
  EMBER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (DType t : kTypes)
    for (const Shape& s : kShapes) {
      std::mt19937 rng(seed++);
      const Tensor x = random_tensor(t, s, -5, 5, rng);
      const Tensor ratio = scalar_float(0.25f), off = scalar_bool(false);
      SCOPED_TRACE(std::string(dtype_name(t)) + shape_to_string(s));
      expect_cuda_matches_cpu(make_node("Dropout", 1, 2), 10, {&x}, kExact, kExact);
      expect_cuda_matches_cpu(make_node("Dropout", 3, 2), 13, {&x, &ratio, &off}, kExact, kExact, {1, 2});
      // Independently of the CPU: every mask byte is true.
      const std::vector<Tensor> got = run_on_cuda(make_node("Dropout", 1, 2), 13, {&x});
      ASSERT_EQ(got.size(), 2u);
      ASSERT_EQ(got[1].dtype(), DType::Bool);
      for (int64_t i = 0; i < got[1].numel(); ++i) ASSERT_EQ(got[1].data_as<uint8_t>()[i], 1) << i;
    }
}

}  // namespace
}  // namespace ember::test
