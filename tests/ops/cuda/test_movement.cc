// CUDA data-movement kernels against the CPU kernels (skip without a GPU): Transpose,
// Slice, Expand, Tile, DepthToSpace/SpaceToDepth, Concat/Split, the aliases, Trilu,
// OneHot, ConstantOfShape, Range; the wide-unit paths on misaligned pointers; and,
// without a GPU, what the factories decline and why. Movement is exact: tolerance 0.
#include "ops/cuda/cuda_common.h"
#include "test_movement_util.h"

namespace ember::test {
namespace {

void expect_cases_match_cpu(const std::vector<MoveCase>& cases) {
  for (const MoveCase& c : cases) {
    SCOPED_TRACE(c.label);
    expect_cuda_matches_cpu(c.node, c.opset, c.ptrs(), 0, 0, c.plan_time);  // bytes moved: exact
  }
}

TEST(CudaMovement, TransposeMatchesCpu) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(transpose_cases());
}

TEST(CudaMovement, SliceMatchesCpuIncludingNegativeSteps) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(slice_cases());
}

TEST(CudaMovement, ExpandAndTileMatchCpu) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(expand_tile_cases());
}

TEST(CudaMovement, DepthToSpaceAndSpaceToDepthMatchCpu) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(depth_space_cases());
}

TEST(CudaMovement, ConcatAndSplitMatchCpu) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(concat_split_cases());
}

TEST(CudaMovement, TriluAndOneHotMatchCpu) {
  EMBER_REQUIRE_GPU();
  expect_cases_match_cpu(trilu_one_hot_cases());
}

TEST(CudaMovement, AliasesPassTheBytesThrough) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(30);
  for (DType t : movement_dtypes()) {
    const Tensor x = random_tensor(t, {2, 3, 5}, -100, 100, rng);
    const Tensor shape = int_vector({5, -1});
    expect_cuda_matches_cpu(make_node("Reshape", 2), 21, {&x, &shape}, 0, 0, {1});
    expect_cuda_matches_cpu(make_node("Flatten", 1, 1, with_int("axis", 2)), 21, {&x}, 0, 0);
    expect_cuda_matches_cpu(make_node("Identity", 1), 21, {&x}, 0, 0);
    const Tensor axes = int_vector({0, -1});
    expect_cuda_matches_cpu(make_node("Unsqueeze", 2), 21, {&x, &axes}, 0, 0, {1});
  }
}

TEST(CudaMovement, ConstantOfShapeMatchesCpu) {
  EMBER_REQUIRE_GPU();
  const Tensor shape = int_vector({3, 7, 33});
  expect_cuda_matches_cpu(make_node("ConstantOfShape", 1), 21, {&shape}, 0, 0, {0});  // default: float 0
  for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Int32, DType::Bool, DType::Int8}) {
    Attributes a;
    a.set_tensor("value", cast_to(int_tensor({t == DType::Bool ? 1 : -7}, {1}), t));
    expect_cuda_matches_cpu(make_node("ConstantOfShape", 1, 1, a), 21, {&shape}, 0, 0, {0});
  }
}

TEST(CudaMovement, RangeMatchesCpu) {
  EMBER_REQUIRE_GPU();
  // Starts and deltas exactly representable, so one fma and the CPU's rounding agree.
  struct R {
    DType t;
    double start, limit, delta;
  };
  for (const R& r : std::vector<R>{{DType::Float32, -3, 20, 0.5},
                                   {DType::Float32, 10, -7, -0.25},
                                   {DType::Float16, 1, 100, 0.75},
                                   {DType::Int32, -5, 1000, 3},
                                   {DType::Int64, 100, -3, -7},
                                   {DType::Int64, 0, 1, 1}}) {
    SCOPED_TRACE(std::string(dtype_name(r.t)) + " " + std::to_string(r.start));
    auto scalar = [&](double v) {
      Tensor d(DType::Float64, {});
      d.data_as<double>()[0] = v;
      return cast_to(d, r.t);
    };
    const Tensor start = scalar(r.start), limit = scalar(r.limit), delta = scalar(r.delta);
    expect_cuda_matches_cpu(make_node("Range", 3), 21, {&start, &limit, &delta}, 0, 0, {0, 1, 2});
  }
}

// ---- Misaligned pointers ------------------------------------------------------------------

// Runs the case's CUDA kernel with every input and output `shift` bytes past a 256-byte
// boundary (so the 16-byte paths must fall back), returning the outputs. A tensor whose
// elements are wider than `shift` moves by one element instead: CUDA requires each
// element's own alignment (an int64 index 4 bytes off is a misaligned-address fault that
// ends the process's CUDA context), and no tensor ember is given can be off by less.
std::vector<Tensor> run_shifted(const MoveCase& c, size_t shift) {
  cuda::StreamContext* context = cuda::create_stream_context(0);
  InitFor f(c);
  f.init->device_context = context;
  std::unique_ptr<Kernel> kernel;
  for (const KernelEntry* e : find_kernels("", c.node.op_type, c.opset, DeviceKind::Cuda)) {
    std::string why;
    if ((kernel = e->factory(*f.init, &why))) break;
  }
  EXPECT_TRUE(kernel) << c.label;
  if (!kernel) return {};
  const auto inputs = c.ptrs();
  std::vector<void*> buffers;
  std::vector<Tensor> dev_in, dev_out;
  auto alloc = [&](size_t bytes, DType dtype) {
    const size_t element = std::max<size_t>(dtype_bits(dtype) / 8, 1);
    const size_t offset = (shift + element - 1) / element * element;
    void* p = nullptr;
    cuda::check(cudaMalloc(&p, bytes + offset + 1), "cudaMalloc");
    buffers.push_back(p);
    return static_cast<char*>(p) + offset;
  };
  for (const Tensor* in : inputs) {
    if (!in) {
      dev_in.emplace_back();
      continue;
    }
    char* p = alloc(in->nbytes(), in->dtype());
    cuda::check(cudaMemcpy(p, in->data(), in->nbytes(), cudaMemcpyHostToDevice), "upload");
    dev_in.push_back(Tensor::view(in->dtype(), in->shape(), p, Device{DeviceKind::Cuda, 0}));
  }
  for (const TensorType& t : f.outputs) {
    char* p = alloc(dtype_bytes(t.dtype, shape_numel(t.shape)), t.dtype);
    dev_out.push_back(Tensor::view(t.dtype, t.shape, p, Device{DeviceKind::Cuda, 0}));
  }
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor*> out_ptrs;
  for (size_t i = 0; i < dev_in.size(); ++i) in_ptrs.push_back(inputs[i] ? &dev_in[i] : nullptr);
  for (Tensor& t : dev_out) out_ptrs.push_back(&t);
  void* workspace = nullptr;
  if (f.init->workspace_bytes) cuda::check(cudaMalloc(&workspace, f.init->workspace_bytes), "cudaMalloc");
  kernel->run(RunArgs{in_ptrs, out_ptrs, workspace, 1, context});
  cuda::check(cudaStreamSynchronize(context->stream), c.label.c_str());
  std::vector<Tensor> outs;
  for (const Tensor& d : dev_out) {
    Tensor h(d.dtype(), d.shape());
    cuda::check(cudaMemcpy(h.data(), d.data(), h.nbytes(), cudaMemcpyDeviceToHost), "download");
    outs.push_back(std::move(h));
  }
  for (void* p : buffers) cudaFree(p);
  cudaFree(workspace);
  cuda::destroy_stream_context(context);
  return outs;
}

// Cases whose plans take 16-byte (or wider-than-element) units when aligned.
std::vector<MoveCase> misaligned_cases() {
  std::vector<MoveCase> cases;
  auto pick = [&](std::vector<MoveCase> from, const std::string& label) {
    for (MoveCase& c : from)
      if (c.label == label) cases.push_back(std::move(c));
  };
  pick(transpose_cases(), "Transpose float16[2, 12, 37, 64] perm [0, 2, 1, 3]");
  pick(transpose_cases(), "Transpose float32[2, 33, 40] perm [0, 2, 1]");
  pick(expand_tile_cases(), "Expand float32[1, 1, 64] to [2, 3, 1]");
  pick(concat_split_cases(), "Concat float32[4, 6, 8] axis 1 x3");
  pick(concat_split_cases(), "Split float16[8, 16] even");
  pick(gather_cases(), "Gather float32[30, 64] axis 0 int64[3, 11]");
  pick(gather_cases(), "GatherND float32[4, 6, 8] indices [3, 3] b0");
  return cases;
}

TEST(CudaMovementDeclines, MisalignedCasesAreFound) { EXPECT_EQ(misaligned_cases().size(), 7u); }

TEST(CudaMovement, MisalignedPointersGiveTheSameBytes) {
  EMBER_REQUIRE_GPU();
  const std::vector<MoveCase> cases = misaligned_cases();
  for (const MoveCase& c : cases) {
    const std::vector<Tensor> want = evaluate_node(c.node, c.opset, c.ptrs());
    for (size_t shift : {size_t{2}, size_t{4}, size_t{8}}) {
      if (shift % (dtype_bits(c.inputs[0].dtype()) / 8)) continue;
      const std::vector<Tensor> got = run_shifted(c, shift);
      ASSERT_EQ(got.size(), want.size()) << c.label;
      for (size_t i = 0; i < got.size(); ++i)
        expect_same_bytes(got[i], want[i], c.label + " shifted " + std::to_string(shift));
    }
  }
}

// ---- What stays on the CPU, and why (no GPU needed) ---------------------------------------

TEST(CudaMovementDeclines, SaysWhyWithoutTouchingTheGpu) {
  std::mt19937 rng(31);
  auto expect_declined = [](const MoveCase& c, const std::string& reason) {
    const std::string why = cuda_declines(c);
    EXPECT_NE(why.find(reason), std::string::npos) << c.label << ": '" << why << "'";
  };
  {
    MoveCase c;
    c.label = "Transpose complex128";
    c.node = make_node("Transpose", 1);
    c.inputs = {Tensor(DType::Complex128, {2, 3})};
    expect_declined(c, "complex128 is not supported on CUDA");
  }
  {
    MoveCase c;
    c.label = "Slice with starts known only at run time";
    c.node = make_node("Slice", 3);
    c.opset = 13;
    c.inputs = {random_tensor(DType::Float32, {5, 7}, -1, 1, rng), int_vector({1}), int_vector({3})};
    c.plan_time = {2};
    expect_declined(c, "must be a plan-time constant on CUDA");
  }
  {
    MoveCase c;
    c.label = "Tile of rank 5, all repeated";
    c.node = make_node("Tile", 2);
    c.inputs = {random_tensor(DType::Float32, {2, 3, 2, 3, 2}, -1, 1, rng), int_vector({2, 2, 2, 2, 2})};
    c.plan_time = {1};
    expect_declined(c, "rank too large for CUDA");
  }
  {
    MoveCase c;
    c.label = "Split with sizes known only at run time";
    c.node = make_node("Split", 2, 2);
    c.opset = 13;
    c.inputs = {random_tensor(DType::Float32, {6, 2}, -1, 1, rng), int_vector({2, 4})};
    expect_declined(c, "split must be a plan-time constant on CUDA");
  }
  {
    MoveCase c;
    c.label = "Pad with pads known only at run time";
    c.node = make_node("Pad", 2);
    c.opset = 13;
    c.inputs = {random_tensor(DType::Float32, {6, 2}, -1, 1, rng), int_vector({1, 1, 1, 1})};
    expect_declined(c, "pads and axes must be a plan-time constant on CUDA");
  }
  {
    MoveCase c;
    c.label = "ScatterND reduction add";
    c.node = make_node("ScatterND", 3, 1, with_string("reduction", "add"));
    c.opset = 18;
    c.inputs = {random_tensor(DType::Float32, {5}, -1, 1, rng), int_tensor({1, 3}, {2, 1}),
                random_tensor(DType::Float32, {2}, -1, 1, rng)};
    expect_declined(c, "reduction 'add' is not supported on CUDA");
    c.node.op_type = "ScatterElements";
    c.node.attributes.set_string("reduction", "mul");
    c.inputs = {random_tensor(DType::Float32, {5}, -1, 1, rng), int_vector({1, 3}),
                random_tensor(DType::Float32, {2}, -1, 1, rng)};
    expect_declined(c, "reduction 'mul' is not supported on CUDA");
  }
  {
    MoveCase c;
    c.label = "GatherND int32 indices";
    c.node = make_node("GatherND", 2);
    c.opset = 13;
    c.inputs = {random_tensor(DType::Float32, {5, 3}, -1, 1, rng), int_tensor({1, 3}, {2, 1}, DType::Int32)};
    expect_declined(c, "int32 indices are not supported on CUDA");
  }
  {
    MoveCase c;
    c.label = "OneHot int8 indices";
    c.node = make_node("OneHot", 3);
    c.opset = 11;
    c.inputs = {int_vector({1, 2}, DType::Int8), int_tensor({4}, {}), random_tensor(DType::Float32, {2}, -1, 1, rng)};
    c.plan_time = {1};
    expect_declined(c, "int8 indices are not supported on CUDA");
  }
  {
    MoveCase c;
    c.label = "Range float64";
    c.node = make_node("Range", 3);
    Tensor s(DType::Float64, {}), l(DType::Float64, {}), d(DType::Float64, {});
    l.data_as<double>()[0] = 4;
    d.data_as<double>()[0] = 1;
    c.inputs = {s, l, d};
    c.plan_time = {0, 1, 2};
    expect_declined(c, "float64 is not supported on CUDA");
  }
  // Resize: what the CUDA kernel leaves to the CPU.
  auto resize = [&](Attributes a, Shape in, std::vector<int64_t> sizes, DType t = DType::Float32) {
    MoveCase c;
    c.label = "Resize " + shape_to_string(in) + " to " + shape_to_string(sizes);
    c.node = make_node("Resize", 4, 1, std::move(a));
    c.opset = 19;
    c.inputs = {random_tensor(t, in, -1, 1, rng), Tensor(), Tensor(), int_vector(sizes)};
    c.plan_time = {3};
    return c;
  };
  expect_declined(resize(with_string("mode", "cubic"), {1, 1, 4, 4}, {1, 1, 8, 8}), "cubic mode is not supported");
  expect_declined(resize(with_int("exclude_outside", 1, with_string("mode", "linear")), {1, 1, 4, 4}, {1, 1, 8, 8}),
                  "exclude_outside is not supported");
  expect_declined(resize(with_string("coordinate_transformation_mode", "half_pixel_symmetric"), {1, 1, 4, 4},
                         {1, 1, 8, 8}),
                  "half_pixel_symmetric is not supported");
  expect_declined(resize({}, {1, 2, 4, 4}, {1, 4, 8, 8}), "only the last two dims may be resized");
  expect_declined(resize(with_string("mode", "linear"), {1, 1, 4, 4}, {1, 1, 8, 8}, DType::Int8),
                  "linear mode on int8 is not supported");
  MoveCase late = resize({}, {1, 1, 4, 4}, {1, 1, 8, 8});
  late.plan_time = {};
  expect_declined(late, "scales and sizes must be a plan-time constant");
}

// What the CUDA kernels take (factories decide without a GPU).
TEST(CudaMovementDeclines, TakesTheSupportedOpsWithoutTouchingTheGpu) {
  for (const auto& cases : {transpose_cases(), slice_cases(), expand_tile_cases(), depth_space_cases(),
                            concat_split_cases(), gather_cases(), scatter_cases(), pad_cases(), trilu_one_hot_cases(),
                            resize_cases(false, DType::Int8), resize_cases(true, DType::Float16)}) {
    for (const MoveCase& c : cases) EXPECT_EQ(cuda_declines(c), "") << c.label;
  }
}

TEST(CudaMovementDeclines, ReshapeLikeOpsAliasTheirInput) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    const auto entries = find_kernels("", op, 21, DeviceKind::Cuda);
    ASSERT_FALSE(entries.empty()) << op;
    EXPECT_TRUE(entries[0]->flags.output_aliases_input0) << op;
  }
}

}  // namespace
}  // namespace ember::test
