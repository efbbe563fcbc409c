// TopK on CUDA against the CPU kernel, exactly (values and indices): every axis, K in
// {1, 5, all}, largest 0/1, sorted 0/1, K as attribute (opset 1) or input, many ties,
// rows of one chunk and rows long enough for the multi-pass path.
//
// Without a GPU the same cases run through the device code's block function built for
// the host (ops/cuda/topk_block.h, one thread per block) over the real pass plan, so
// the index arithmetic, the sort network, the padding and the pass planning are checked
// here too; only the launch itself (threads sharing a block, shared memory, races) is
// left to the GPU tests.
#include "cuda_harness.h"
#include "ops/cuda/topk_block.h"
#include "ops/cuda/topk_impl.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace ember::test {
namespace {

// Exact: TopK only moves values, and the order (ties by index) is fully specified.
constexpr double kExact = 0;

// Integers in [-spread, spread] (few distinct values: many ties) in `dtype`.
Tensor ties_tensor(DType dtype, const Shape& shape, uint32_t seed, int spread = 3) {
  return cast_to(seeded_tensor(DType::Int64, shape, seed, -spread, spread), dtype);
}

// Mostly distinct values for float dtypes.
Tensor spread_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  return seeded_tensor(dtype, shape, seed, -100, 100);
}

struct TopKCase {
  Shape x;
  int64_t axis;
  std::vector<int64_t> ks;  // clamped to the axis length; duplicates skipped
};

// Rows of one chunk (<= kTopKChunk elements).
const TopKCase kShortCases[] = {
    {{7}, 0, {0, 1, 5, 7}},
    {{7}, -1, {3}},
    {{3, 33}, 0, {1, 5, 3}},
    {{3, 33}, 1, {1, 5, 33}},
    {{3, 33}, -2, {2}},
    {{3, 33}, -1, {5}},
    {{2, 1000}, 0, {1, 2}},
    {{2, 1000}, 1, {1, 5, 1000}},
    {{2, 1000}, -1, {17}},
    {{2, 3, 5}, 1, {1, 2, 3}},  // outer and inner both > 1
    {{1, 4096}, 1, {4096}},     // exactly one chunk, the largest shared footprint
};

// Rows longer than a chunk: per-chunk winners, then the final pass.
const TopKCase kLongCases[] = {
    {{2, 10000}, 1, {1, 5, 2048}},
    {{1, 4097}, 1, {2048}},     // two chunks, the second of one element
    {{5000, 3}, 0, {7}},        // strided long rows
    {{1, 40000}, -1, {2048}},   // five passes, ping-ponging the workspace buffers
    {{1, 150000}, 1, {64}},     // a vocabulary-sized row
};

const DType kTypes[] = {DType::Float32, DType::Float16, DType::Int32, DType::Int64};

Node topk_node(int64_t opset, int64_t axis, int64_t k, bool largest, bool sorted) {
  Attributes at;
  at.set_int("axis", axis);
  if (opset < 10) at.set_int("k", k);
  if (opset >= 11) {
    at.set_int("largest", largest ? 1 : 0);
    at.set_int("sorted", sorted ? 1 : 0);
  }
  return make_node("TopK", opset < 10 ? 1 : 2, 2, at);
}

Tensor k_tensor(int64_t k) {
  Tensor t(DType::Int64, {1});
  *t.data_as<int64_t>() = k;
  return t;
}

std::string describe(const Tensor& x, int64_t axis, int64_t k, bool largest, int64_t opset) {
  return std::string(dtype_name(x.dtype())) + shape_to_string(x.shape()) + " axis " + std::to_string(axis) + " k " +
         std::to_string(k) + (largest ? " largest" : " smallest") + " opset " + std::to_string(opset);
}

// ---- the device code's block function, run on the host ----

template <class T, bool kLargest>
void emulate_passes(const cuda::TopKPlan& plan, const Tensor& x, Tensor& values, Tensor& indices) {
  std::vector<int64_t> workspace((plan.workspace_bytes + 7) / 8);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const cuda::TopKPass p = cuda::bind_topk_pass(plan, i, x.data(), values.data(), indices.data_as<int64_t>(),
                                                  workspace.data());
    // What this pass writes fits where it writes it.
    const cuda::TopKPlan::Step& s = plan.steps[i];
    if (s.dest != cuda::kTopKNodeTensors) {
      const size_t elements = static_cast<size_t>(p.rows * p.out_len);
      EXPECT_LE(plan.value_offset[s.dest] + elements * sizeof(T), plan.index_offset[s.dest]);
      const size_t end = s.dest == 0 ? plan.value_offset[1] : plan.workspace_bytes;
      EXPECT_LE(plan.index_offset[s.dest] + elements * sizeof(int32_t), end);
    }
    const int cap = cuda::topk_chunk_capacity(p.in_len);
    std::vector<T> s_val(static_cast<size_t>(cap));
    std::vector<int32_t> s_idx(static_cast<size_t>(cap));
    for (int64_t b = 0; b < p.rows * p.chunks; ++b)
      cuda::topk::sort_chunk<T, kLargest>(p, b, s_val.data(), s_idx.data(), 0, 1, [] {});
  }
}

// The CUDA kernel's algorithm on the host: outputs as the kernel would write them.
std::vector<Tensor> emulate_topk(const Tensor& x, int64_t axis, int64_t k, bool largest) {
  const Shape& shape = x.shape();
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  Shape out_shape = shape;
  out_shape[axis] = k;
  Tensor values(x.dtype(), out_shape), indices(DType::Int64, out_shape);
  const size_t bytes = dtype_bytes(x.dtype(), 1);
  const cuda::TopKPlan plan = cuda::plan_topk(shape[axis], k, outer * inner, inner, bytes);
  auto go = [&](auto tag) {
    using T = decltype(tag);
    if (largest) emulate_passes<T, true>(plan, x, values, indices);
    else emulate_passes<T, false>(plan, x, values, indices);
  };
  switch (x.dtype()) {
    case DType::Float32: go(float{}); break;
    case DType::Float16: go(__half{}); break;
    case DType::Int32: go(int32_t{}); break;
    case DType::Int64: go(int64_t{}); break;
    default: ADD_FAILURE() << "no emulation for " << dtype_name(x.dtype());
  }
  return {values, indices};
}

void expect_emulation_matches_cpu(const Tensor& x, int64_t axis, int64_t k, bool largest, int64_t opset = 11) {
  SCOPED_TRACE(describe(x, axis, k, largest, opset));
  const Tensor kt = k_tensor(k);
  const Node node = topk_node(opset, axis, k, largest, true);
  const std::vector<const Tensor*> inputs = opset < 10 ? std::vector<const Tensor*>{&x}
                                                       : std::vector<const Tensor*>{&x, &kt};
  const std::vector<Tensor> want = run_on_cpu(node, opset, inputs);
  const std::vector<Tensor> got = emulate_topk(x, axis, k, largest);
  expect_close(got[0], want[0], kExact, kExact, "values");
  expect_close(got[1], want[1], kExact, kExact, "indices");
}

template <class F> void for_each_k(const TopKCase& c, F&& f) {
  const int64_t rank = static_cast<int64_t>(c.x.size());
  const int64_t n = c.x[static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis)];
  std::vector<int64_t> done;
  for (int64_t k : c.ks) {
    k = std::min(k, n);
    if (std::find(done.begin(), done.end(), k) != done.end()) continue;
    done.push_back(k);
    f(k);
  }
}

TEST(CudaTopKOnHost, ShortRowsMatchCpuWithTies) {
  uint32_t seed = 1;
  for (DType t : kTypes)
    for (const TopKCase& c : kShortCases)
      for_each_k(c, [&](int64_t k) {
        const Tensor x = ties_tensor(t, c.x, seed++);
        for (bool largest : {true, false}) expect_emulation_matches_cpu(x, c.axis, k, largest);
      });
}

TEST(CudaTopKOnHost, ShortRowsMatchCpuWithDistinctFloats) {
  uint32_t seed = 100;
  for (DType t : {DType::Float32, DType::Float16})
    for (const TopKCase& c : kShortCases)
      for_each_k(c, [&](int64_t k) {
        const Tensor x = spread_tensor(t, c.x, seed++);
        for (bool largest : {true, false}) expect_emulation_matches_cpu(x, c.axis, k, largest);
      });
}

TEST(CudaTopKOnHost, LongRowsMatchCpu) {
  uint32_t seed = 200;
  for (DType t : {DType::Float32, DType::Int64, DType::Float16})
    for (const TopKCase& c : kLongCases)
      for_each_k(c, [&](int64_t k) {
        // Wide enough that the top K are not all one tied value, narrow enough for ties.
        const Tensor x = ties_tensor(t, c.x, seed++, 1000);
        for (bool largest : {true, false}) expect_emulation_matches_cpu(x, c.axis, k, largest);
      });
}

TEST(CudaTopKOnHost, KAsAttributeAtOpset1AndInputAtOpset10) {
  const Tensor x = ties_tensor(DType::Float32, {3, 33}, 300);
  expect_emulation_matches_cpu(x, 1, 5, true, 1);
  expect_emulation_matches_cpu(x, 0, 2, true, 10);
}

TEST(CudaTopKOnHost, SignedZerosTieByIndex) {
  Tensor x(DType::Float32, {1, 9});
  for (int64_t i = 0; i < 9; ++i) x.data_as<float>()[i] = i % 3 == 0 ? -0.f : i % 3 == 1 ? 0.f : -1.f;
  for (bool largest : {true, false}) expect_emulation_matches_cpu(x, 1, 5, largest);
}

// The CPU's order is unspecified with NaN (its comparison is not an order then); the
// CUDA kernel puts NaN above every number, as numpy and PyTorch do.
TEST(CudaTopKOnHost, NanCountsAsLargest) {
  Tensor x(DType::Float32, {1, 6});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float xs[] = {1.f, nan, -2.f, nan, 5.f, 1.f};
  std::copy(xs, xs + 6, x.data_as<float>());
  const auto top = emulate_topk(x, 1, 6, true);
  const int64_t want_top[] = {1, 3, 4, 0, 5, 2};
  const auto bottom = emulate_topk(x, 1, 6, false);
  const int64_t want_bottom[] = {2, 0, 5, 4, 1, 3};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(top[1].data_as<int64_t>()[i], want_top[i]) << i;
    EXPECT_EQ(bottom[1].data_as<int64_t>()[i], want_bottom[i]) << i;
  }
  EXPECT_TRUE(std::isnan(top[0].data_as<float>()[0]));
  EXPECT_TRUE(std::isnan(bottom[0].data_as<float>()[5]));
}

TEST(CudaTopKOnHost, PassPlanShrinksLongRowsToOneChunk) {
  const cuda::TopKPlan one = cuda::plan_topk(4096, 4096, 3, 1, 4);
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.workspace_bytes, 0u);
  const cuda::TopKPlan many = cuda::plan_topk(40000, 2048, 2, 1, 4);
  ASSERT_EQ(many.steps.size(), 5u);  // 40000 -> 20480 -> 10240 -> 6144 -> 4096 -> K
  EXPECT_EQ(many.steps[0].pass.out_len, 10 * 2048);
  EXPECT_EQ(many.steps.back().pass.in_len, 4096);
  EXPECT_TRUE(cuda::plan_topk(0, 0, 5, 1, 4).steps.empty());
  EXPECT_TRUE(cuda::plan_topk(7, 3, 0, 1, 4).steps.empty());
}

TEST(CudaTopKOnHost, SharedMemoryStaysWithin48KiB) {
  for (size_t bytes : {2, 4, 8})
    for (int64_t len : {1, 2, 3, 1000, 4095, 4096, 4097, 1 << 20})
      EXPECT_LE(cuda::topk_shared_bytes_for(bytes, len), 48u * 1024) << bytes << " " << len;
}

// ---- what the factory declines, without a GPU (it decides before touching one) ----

std::string cuda_topk_reason(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                             const std::vector<const Tensor*>& values, const std::vector<TensorType>& outputs,
                             size_t* workspace = nullptr) {
  std::string reasons;
  for (const KernelEntry* entry : find_kernels("", "TopK", opset, DeviceKind::Cuda)) {
    KernelInit init{node, opset, Device{DeviceKind::Cuda, 0}, types, values, outputs};
    std::string why;
    if (entry->factory(init, &why)) {
      if (workspace) *workspace = init.workspace_bytes;
      return "";
    }
    reasons += why;
  }
  return reasons;
}

TEST(CudaTopKDeclines, Float64WithAReason) {
  const Tensor k = k_tensor(2);
  const std::vector<TensorType> in = {{DType::Float64, {3, 8}}, {DType::Int64, {1}}};
  const std::vector<TensorType> out = {{DType::Float64, {3, 2}}, {DType::Int64, {3, 2}}};
  EXPECT_NE(cuda_topk_reason(topk_node(11, -1, 2, true, true), 11, in, {nullptr, &k}, out).find("float64"),
            std::string::npos);
}

TEST(CudaTopKDeclines, KUnknownAtPlanTime) {
  const std::vector<TensorType> in = {{DType::Float32, {3, 8}}, {DType::Int64, {1}}};
  const std::vector<TensorType> out = {{DType::Float32, {3, 2}}, {DType::Int64, {3, 2}}};
  EXPECT_NE(cuda_topk_reason(topk_node(11, -1, 2, true, true), 11, in, {nullptr, nullptr}, out).find("plan time"),
            std::string::npos);
}

TEST(CudaTopKDeclines, LargeKOnLongRows) {
  const Tensor k = k_tensor(3000);
  const std::vector<TensorType> in = {{DType::Float32, {2, 5000}}, {DType::Int64, {1}}};
  const std::vector<TensorType> out = {{DType::Float32, {2, 3000}}, {DType::Int64, {2, 3000}}};
  EXPECT_NE(cuda_topk_reason(topk_node(11, 1, 3000, true, true), 11, in, {nullptr, &k}, out).find("K <= 2048"),
            std::string::npos);
}

TEST(CudaTopKDeclines, AcceptsLongRowsWithSmallKAndAsksForWorkspace) {
  const Tensor k = k_tensor(50);
  const std::vector<TensorType> in = {{DType::Float16, {4, 150000}}, {DType::Int64, {1}}};
  const std::vector<TensorType> out = {{DType::Float16, {4, 50}}, {DType::Int64, {4, 50}}};
  size_t workspace = 0;
  EXPECT_EQ(cuda_topk_reason(topk_node(11, 1, 50, false, false), 11, in, {nullptr, &k}, out, &workspace), "");
  EXPECT_GE(workspace, 4u * 37 * 50 * (2 + 4));  // 37 chunks of 4096, 50 winners each
}

// ---- on the GPU, against the CPU ----

void expect_topk_matches_cpu(const Tensor& x, int64_t axis, int64_t k, bool largest, bool sorted, int64_t opset = 11) {
  SCOPED_TRACE(describe(x, axis, k, largest, opset) + (sorted ? "" : " unsorted"));
  const Tensor kt = k_tensor(k);
  const Node node = topk_node(opset, axis, k, largest, sorted);
  if (opset < 10) expect_cuda_matches_cpu(node, opset, {&x}, kExact, kExact);
  else expect_cuda_matches_cpu(node, opset, {&x, &kt}, kExact, kExact, /*plan_time_inputs=*/{1});
}

TEST(CudaTopK, ShortRowsWithTiesEveryAxisAndDirection) {
  EMBER_REQUIRE_GPU();
  uint32_t seed = 1000;
  for (DType t : kTypes)
    for (const TopKCase& c : kShortCases)
      for_each_k(c, [&](int64_t k) {
        const Tensor x = ties_tensor(t, c.x, seed++);
        for (bool largest : {true, false})
          for (bool sorted : {true, false}) expect_topk_matches_cpu(x, c.axis, k, largest, sorted);
      });
}

TEST(CudaTopK, ShortRowsDistinctFloats) {
  EMBER_REQUIRE_GPU();
  uint32_t seed = 2000;
  for (DType t : {DType::Float32, DType::Float16})
    for (const TopKCase& c : kShortCases)
      for_each_k(c, [&](int64_t k) {
        const Tensor x = spread_tensor(t, c.x, seed++);
        for (bool largest : {true, false}) expect_topk_matches_cpu(x, c.axis, k, largest, true);
      });
}

TEST(CudaTopK, LongRowsThroughTheWorkspacePasses) {
  EMBER_REQUIRE_GPU();
  uint32_t seed = 3000;
  for (DType t : kTypes)
    for (const TopKCase& c : kLongCases)
      for_each_k(c, [&](int64_t k) {
        const Tensor x = ties_tensor(t, c.x, seed++, 1000);
        for (bool largest : {true, false}) expect_topk_matches_cpu(x, c.axis, k, largest, true);
      });
}

TEST(CudaTopK, ManyRowsLoopTheGrid) {
  EMBER_REQUIRE_GPU();
  // 2^20 + 3 rows of 4: more rows than the grid's 2^20 blocks.
  const Tensor x = ties_tensor(DType::Float32, {(1 << 20) + 3, 4}, 4000);
  expect_topk_matches_cpu(x, 1, 2, true, true);
}

TEST(CudaTopK, KAsAttributeAtOpset1AndInputAtOpset10) {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::Float32, DType::Float16}) {
    const Tensor x = ties_tensor(t, {3, 33}, 5000);
    expect_topk_matches_cpu(x, 1, 5, true, true, 1);
    expect_topk_matches_cpu(x, 0, 2, true, true, 10);
  }
}

}  // namespace
}  // namespace ember::test
