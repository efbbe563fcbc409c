// Memory a long-running service can live with: plans cached in a bounded LRU, packed
// weights made once per session and shared by every plan, arenas given back when the
// plans that needed them are evicted.
#include "core/src/host_memory.h"
#include "engine/src/plan_cache.h"
#include "loader/helpers.h"  // new_model, add_input, add_node, float_tensor
#include "ops/cpu/packed_gemm.h"  // PackedGemm::panel_columns, cpu_isa
#include "ops/packed_weights.h"

#include <ember/ember.h>

#include <gtest/gtest.h>

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace ember {
namespace {

// This process's own folder for the models the tests write, removed at exit: ctest runs
// the tests as parallel processes, and one writing a shared file while another loads
// it made the load fail.
const test::TempDir& process_temp_dir() {
  static const test::TempDir dir;
  return dir;
}

constexpr int64_t kWidth = 512, kHidden = 2048;

// x [b, s, 512] -> MatMul [512, 2048] -> Relu -> MatMul [2048, 512] -> Add x -> y: a
// transformer's MLP block, 8 MiB of weights, at any batch and sequence length.
std::string write_mlp_model() {
  onnx::ModelProto m = test::new_model();
  onnx::GraphProto& g = *m.mutable_graph();
  test::add_input(g, "x", {"batch", "sequence", std::to_string(kWidth)});
  test::add_output(g, "y", {"batch", "sequence", std::to_string(kWidth)});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 0.05f);
  auto weight = [&](const char* name, int64_t rows, int64_t cols) {
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    *g.add_initializer() = test::float_tensor(name, {rows, cols}, values);
  };
  weight("w1", kWidth, kHidden);
  weight("w2", kHidden, kWidth);
  test::add_node(g, "MatMul", {"x", "w1"}, {"h"}, "h_node");
  test::add_node(g, "Relu", {"h"}, {"r"}, "r_node");
  test::add_node(g, "MatMul", {"r", "w2"}, {"p"}, "p_node");
  test::add_node(g, "Add", {"p", "x"}, {"y"}, "y_node");
  const std::string path = process_temp_dir() / "ember_mlp_block.onnx";
  test::write_file(path, m.SerializeAsString());
  return path;
}

Tensor random_input(int64_t batch, int64_t sequence, uint32_t seed) {
  Tensor t(DType::Float32, {batch, sequence, kWidth});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

std::vector<Tensor> run(Session& s, const Tensor& x) {
  std::vector<Tensor> out = s.make_outputs({&x, 1});
  s.run({&x, 1}, out);
  return out;
}

size_t bytes_for(const MemoryReport& r, const std::string& purpose) {
  size_t sum = 0;
  for (const auto& e : r.entries) sum += e.purpose == purpose ? e.bytes : 0;
  return sum;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

std::unique_ptr<Plan> plan_with(Shape shape, size_t arena) {
  auto plan = std::make_unique<Plan>();
  plan->input_shapes = {std::move(shape)};
  plan->input_devices = {Device{}};
  plan->arena_bytes = {{Device{}, arena}};
  return plan;
}

bool cached(const PlanCache& cache, const Shape& shape) {
  const Tensor x(DType::Float32, shape);
  return cache.find({&x, 1}, {}) != nullptr;
}

// A model that asks for more memory than the machine has (a Tile to terabytes, as a
// hostile or broken file may) is refused at once with the sizes, rather than promised
// by mmap and then paged in for minutes or killed.
TEST(BoundedMemory, MoreMemoryThanThereIsIsAClearErrorAtOnce) {
  onnx::ModelProto m = test::new_model();
  onnx::GraphProto& g = *m.mutable_graph();
  test::add_input(g, "x", {"1024"});
  test::add_output(g, "y", {"?"});
  onnx::TensorProto repeats;
  repeats.set_name("repeats");
  repeats.set_data_type(onnx::TensorProto::INT64);
  repeats.add_dims(1);
  repeats.add_int64_data(int64_t{1} << 30);  // 4 TiB of float32
  *g.add_initializer() = repeats;
  test::add_node(g, "Tile", {"x", "repeats"}, {"y"}, "tile");
  const std::string path = process_temp_dir() / "ember_huge_tile.onnx";
  test::write_file(path, m.SerializeAsString());
  Session session(path);
  const Tensor x(DType::Float32, {1024});
  const auto start = std::chrono::steady_clock::now();
  try {
    session.run({{"x", x}});
    FAIL() << "a 4 TiB output was allocated";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than this machine's memory"), std::string::npos) << e.what();
  }
  // Below the machine's memory but above what it has free: refused when allocated.
  const size_t available = host_memory_available();
  if (available < (size_t{1} << 50)) {
    try {
      Tensor t(DType::UInt8, {static_cast<int64_t>(available + (size_t{64} << 20))});
      FAIL() << "a tensor larger than the free memory was allocated";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of host memory"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("available"), std::string::npos) << e.what();
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(PlanCache, EvictsTheLeastRecentlyUsedBeyondTheCount) {
  PlanCache cache({.max_plans = 2, .max_bytes = 1 << 20});
  cache.add(plan_with({1}, 10));
  cache.add(plan_with({2}, 10));
  EXPECT_TRUE(cached(cache, {1}));  // [1] is now more recent than [2]
  cache.add(plan_with({3}, 10));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_TRUE(cached(cache, {1}));
  EXPECT_FALSE(cached(cache, {2}));
  EXPECT_TRUE(cached(cache, {3}));
}

TEST(PlanCache, EvictsBeyondTheByteBudgetButKeepsTheNewestPlan) {
  PlanCache cache({.max_plans = 10, .max_bytes = 100});
  cache.add(plan_with({1}, 60));
  cache.add(plan_with({2}, 30));
  EXPECT_EQ(cache.bytes(), 90u);
  cache.add(plan_with({3}, 20));  // 110 > 100: the oldest goes
  EXPECT_FALSE(cached(cache, {1}));
  EXPECT_EQ(cache.bytes(), 50u);
  const auto huge = cache.add(plan_with({4}, 500));  // larger than the budget: still runs
  EXPECT_TRUE(cached(cache, {4}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(huge->input_shapes[0], Shape{4});
}

TEST(PlanCache, AnEvictedPlanLivesWhileARunHoldsIt) {
  PlanCache cache({.max_plans = 1, .max_bytes = 1 << 20});
  const std::shared_ptr<const Plan> held = cache.add(plan_with({1}, 10));
  cache.add(plan_with({2}, 10));
  EXPECT_FALSE(cached(cache, {1}));
  EXPECT_EQ(held->input_shapes[0], Shape{1});  // still readable
  EXPECT_FALSE(cache.contains(held->id));
}

void expect_near(const Tensor& got, const Tensor& want, float tolerance) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], tolerance) << "element " << i;
}

// Packed once, shared by every shape's plan; the originals, read by nothing else, are
// given back.
TEST(BoundedMemory, WeightsAreHeldOncePackedNotOncePerShape) {
  const std::string model = write_mlp_model();
  Session session(model, {.num_threads = 1});
  Session as_read(model, {.num_threads = 1, .optimization = GraphOptimization::None});  // keeps the originals
  run(session, random_input(1, 8, 1));
  // ember's own product (ops/cpu/packed_gemm.h) takes both weights: its panels pad N
  // to whole panels.
  const int64_t columns = PackedGemm::panel_columns(cpu_isa());
  const auto padded = [&](int64_t n) { return (n + columns - 1) / columns * columns; };
  const size_t panels_bytes = (kWidth * padded(kHidden) + kHidden * padded(kWidth)) * sizeof(float);
  ASSERT_GE(panels_bytes, 2 * kWidth * kHidden * sizeof(float));
  EXPECT_EQ(bytes_for(session.memory_report(), "packed weights"), panels_bytes);
  EXPECT_EQ(bytes_for(session.memory_report(), "weights"), 0u) << "the originals were not given back";
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // their allocators do not fill mallinfo2
  EXPECT_GT(bytes_for(session.memory_report(), "plan kernels"), 0u) << "oneDNN's matmul primitives take heap";
#endif
  const auto check_shapes = [&](std::initializer_list<int64_t> sequences) {
    for (int64_t s : sequences) {
      const Tensor x = random_input(2, s, 2);
      // Tolerance: float32 sums of 2048 products of unit-scale terms, fused or not.
      expect_near(run(session, x)[0], run(as_read, x)[0], 1e-4f);
    }
  };
  // Up to 256 rows (batch 2 by 128) every product reads the panels, and a single row (a
  // decoder's step) too.
  check_shapes({1, 16, 33, 64, 128});
  const Tensor one_row = random_input(1, 1, 3);
  expect_near(run(session, one_row)[0], run(as_read, one_row)[0], 1e-4f);
  EXPECT_EQ(bytes_for(session.memory_report(), "packed weights"), panels_bytes) << "a shape made a form of its own";
  EXPECT_EQ(session.memory_report().plans, 7u);
  // More rows: on AVX2 the panels still, the larger A (300 rows of the second MatMul:
  // 2.4 MB) in chunks; on AVX-512 oneDNN's matmul, which reads w1's panels (2,048
  // columns fill groups of 48 to within 1%) and keeps w2 (512 columns: 3% of padding)
  // in one form of its own (BA16a64b, no padding), shared by every such shape.
  check_shapes({150, 300});
  const size_t with_more_rows = bytes_for(session.memory_report(), "packed weights");
  if (cpu_isa() == CpuIsa::Avx512)
    EXPECT_EQ(with_more_rows, panels_bytes + kHidden * kWidth * sizeof(float));
  else
    EXPECT_EQ(with_more_rows, panels_bytes);
  check_shapes({200});
  EXPECT_EQ(bytes_for(session.memory_report(), "packed weights"), with_more_rows) << "a shape made a form of its own";
  EXPECT_EQ(bytes_for(as_read.memory_report(), "weights"), 2 * kWidth * kHidden * sizeof(float));
}

// Plans made while it lives send every CPU product to oneDNN (EMBER_CPU_GEMM, read per plan).
struct OneDnnProducts {
  OneDnnProducts() { setenv("EMBER_CPU_GEMM", "onednn", 1); }
  ~OneDnnProducts() { unsetenv("EMBER_CPU_GEMM"); }
};

// A weight given back once packed into ember's own GEMM panels (ops/cpu/packed_gemm.h),
// later read by a plan whose products run on oneDNN (EMBER_CPU_GEMM=onednn, read per
// plan): oneDNN's form is made from the panels by a reorder of their descriptor, and
// must read them right.
TEST(BoundedMemory, AWeightGivenBackAsGemmPanelsRepacksForAnotherKernel) {
  if (cpu_isa() == CpuIsa::Scalar) GTEST_SKIP() << "ember's own product needs AVX2";
  const std::string model = write_mlp_model();
  Session session(model, {.num_threads = 1});
  Session as_read(model, {.num_threads = 1, .optimization = GraphOptimization::None});
  run(session, random_input(2, 16, 1));
  ASSERT_EQ(bytes_for(session.memory_report(), "weights"), 0u) << "the originals were not given back";
  const Tensor other = random_input(2, 9, 2);
  const std::vector<Tensor> got = [&] {
    const OneDnnProducts onednn;
    return run(session, other);
  }();
  // Tolerance: float32 sums of 2048 products of unit-scale terms, in different orders.
  expect_near(got[0], run(as_read, other)[0], 1e-4f);
  EXPECT_GT(bytes_for(session.memory_report(), "packed weights"), 2 * kWidth * kHidden * sizeof(float))
      << "the oneDNN plan made no form of its own: this test reads no repacked panels";
}

// A GPU kernel's packed form (NhwcConv's KRSC filter) lives on its device: the report
// counts it there, and not in the host's heap.
TEST(BoundedMemory, PackedWeightsCountedOnTheirDevice) {
  PackedWeights packed;
  const Tensor w(DType::Float32, {4, 4});
  const Device gpu{DeviceKind::Cuda, 1};
  int made = 0;
  auto make = [&] {
    ++made;
    return std::make_shared<int>(0);
  };
  packed.get(w, "host form", 64, make);
  packed.get(w, "device form", 32, make, gpu);
  packed.get(w, "device form", 32, make, gpu);  // made before: shared
  EXPECT_EQ(made, 2);
  EXPECT_EQ(packed.bytes(), 64u);
  EXPECT_EQ(packed.bytes(gpu), 32u);
  EXPECT_EQ(packed.bytes(Device{DeviceKind::Cuda, 0}), 0u);
}

// A service's metrics thread reads the memory report while the first run plans and
// gives the packed weights' originals back: it sees each weight whole or given back.
TEST(BoundedMemory, AMemoryReportBesideTheFirstRunSeesEachWeightWholeOrGivenBack) {
  const std::string model = write_mlp_model();
  Session session(model, {.num_threads = 1});
  const size_t one_weight = kWidth * kHidden * sizeof(float);  // both weights are this size
  std::atomic<bool> done{false};
  std::atomic<int> reports{0}, torn{0};
  std::thread reporter([&] {
    while (!done || reports == 0) {
      const size_t w = bytes_for(session.memory_report(), "weights");
      if (w != 0 && w != one_weight && w != 2 * one_weight) ++torn;
      ++reports;
    }
  });
  run(session, random_input(1, 8, 1));
  done = true;
  reporter.join();
  EXPECT_EQ(torn, 0);
  EXPECT_EQ(bytes_for(session.memory_report(), "weights"), 0u);
}

// A weight something else reads too keeps its original.
TEST(BoundedMemory, AWeightReadUnpackedKeepsItsOriginal) {
  onnx::ModelProto m = test::new_model();
  onnx::GraphProto& g = *m.mutable_graph();
  test::add_input(g, "x", {"4", "4"});
  test::add_output(g, "y", {"4", "4"});
  std::vector<float> w(16);
  for (int i = 0; i < 16; ++i) w[i] = 0.25f * i - 1.f;
  *g.add_initializer() = test::float_tensor("w", {4, 4}, w);
  test::add_node(g, "MatMul", {"x", "w"}, {"p"});
  test::add_node(g, "Add", {"p", "w"}, {"y"});
  const std::string path = process_temp_dir() / "ember_weight_read_twice.onnx";
  test::write_file(path, m.SerializeAsString());
  Session session(path, {.num_threads = 1});
  Tensor x(DType::Float32, {4, 4});
  for (int i = 0; i < 16; ++i) x.data_as<float>()[i] = 0.5f * i - 3.f;
  const Tensor y = run(session, x)[0];
  EXPECT_EQ(bytes_for(session.memory_report(), "weights"), 16 * sizeof(float));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      float want = 0.25f * (r * 4 + c) - 1.f;
      for (int k = 0; k < 4; ++k) want += x.data_as<float>()[r * 4 + k] * (0.25f * (k * 4 + c) - 1.f);
      EXPECT_NEAR(y.data_as<float>()[r * 4 + c], want, 1e-5f);
    }
}

TEST(BoundedMemory, EvictedPlansGiveBackTheirArenasAndLaterRunsStayCorrect) {
  const std::string model = write_mlp_model();
  Session bounded(model, {.num_threads = 1, .plan_cache_max_plans = 1});
  Session unbounded(model, {.num_threads = 1, .optimization = GraphOptimization::None});
  const Tensor big = random_input(4, 256, 3), small = random_input(1, 4, 4);
  run(bounded, big);
  const size_t big_arena = bytes_for(bounded.memory_report(), "arenas");
  // Back and forth, so a plan freed and another made could reuse its address.
  for (int round = 0; round < 3; ++round) {
    for (const Tensor* x : {&small, &big, &small}) {
      SCOPED_TRACE("round " + std::to_string(round));
      expect_near(run(bounded, *x)[0], run(unbounded, *x)[0], 1e-4f);
    }
  }
  const MemoryReport report = bounded.memory_report();
  EXPECT_EQ(report.plans, 1u);
  EXPECT_GE(report.plans_evicted, 6u);
  EXPECT_LT(bytes_for(report, "arenas"), big_arena / 10) << report.to_string();
}

// A batch first: its weights are packed for oneDNN and the originals given back. A
// single row then needs them as rows (ops/cpu/matrix_vector.h), made from that packed
// form. (Making a form while holding the packed-weight cache's lock hung here.) On AVX2
// both would run on ember's own panels, so oneDNN is asked for (EMBER_CPU_GEMM).
TEST(BoundedMemory, ASingleRowAfterABatchIsPackedFromTheGivenBackWeights) {
  const OneDnnProducts onednn;
  const std::string model = write_mlp_model();
  Session session(model, {.num_threads = 1});
  Session reference(model, {.num_threads = 1, .optimization = GraphOptimization::None});
  const Tensor batch = random_input(2, 8, 7), row = random_input(1, 1, 8);
  expect_near(run(session, batch)[0], run(reference, batch)[0], 1e-4f);
  EXPECT_NE(session.memory_report().to_string().find("0.0 MiB  cpu weights"), std::string::npos)
      << "the originals were not given back: " << session.memory_report().to_string();
  expect_near(run(session, row)[0], run(reference, row)[0], 1e-4f);
  expect_near(run(session, batch)[0], run(reference, batch)[0], 1e-4f);
  // --explain names the implementation the single row's products got.
  EXPECT_NE(session.explain(std::span<const Tensor>(&row, 1)).find("as matrix-vector"), std::string::npos);
  EXPECT_EQ(session.explain(std::span<const Tensor>(&batch, 1)).find("as matrix-vector"), std::string::npos);
}

// A service that sees a thousand shapes (batch 1-2, sequence lengths 1-500) stays flat
// once its caches are full: the plans are bounded, the weights packed once, evicted
// plans' arenas given back. The reference is the process after the largest shape and
// enough others to fill the plan cache and oneDNN's primitive cache (each cached plan
// holds its kernels' JIT code), and one single row, whose products keep their weights
// in a form of their own where they run on the matrix-vector kernel (not on AVX2),
// made once.
TEST(BoundedMemory, AThousandShapesStayWithinTheMemoryOfTheLargest) {
  const std::string model = write_mlp_model();
  {
    // What the process keeps after a session is gone is not the session's: the code
    // pages a run touches, and oneDNN's process-wide state (on an AVX2 CPU its matmuls
    // run through GEMM kernels made once per process: about 9 MiB on a Zen 3, unnamed).
    Session first(model, {.num_threads = 1});
    run(first, random_input(2, 500, 5));
  }
  malloc_trim(0);  // what earlier tests and that session freed must not count as this session's
  const int64_t before = resident_bytes();
  Session session(model, {.num_threads = 1, .plan_cache_max_plans = 8});
  // One row and the most: every kernel's packed form of the weights, made once, before
  // the walk.
  run(session, random_input(1, 1, 5));
  for (int64_t s = 500; s > 460; --s) run(session, random_input(2, s, 5));
  const int64_t warm = resident_bytes() - before;
  // Under a sanitizer only the cache's bounds and its evictions' memory errors are
  // checked (below), and 200 shapes do that; a thousand took CI's ASan build 2.5 minutes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int64_t kShapes = 200;
#else
  constexpr int64_t kShapes = 1000;
#endif
  for (int64_t i = 0; i < kShapes; ++i)
    run(session, random_input(1 + i * 2 / kShapes, 1 + (i * 7) % 500, 6));
  run(session, random_input(2, 500, 5));
  const MemoryReport report = session.memory_report();
  const int64_t after = static_cast<int64_t>(report.process_resident_bytes) - before;
  EXPECT_LE(report.plans, 8u);
  EXPECT_GE(report.plans_evicted, static_cast<size_t>(kShapes));
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "resident memory under AddressSanitizer counts its quarantine of freed blocks";
#endif
#ifdef __SANITIZE_THREAD__
  GTEST_SKIP() << "resident memory under ThreadSanitizer counts its shadow memory, which grows with every address "
                  "the walk touches and is not given back with the freed blocks";
#endif
  // 10%, or 4 MiB at least: glibc's heap after a thousand evictions (a leak of a plan or
  // an arena per shape would be hundreds of MiB).
  EXPECT_LE(after, warm + std::max<int64_t>(warm / 10, int64_t{4} << 20))
      << "after the largest shapes: " << warm << " bytes, after the walk: " << after
                                     << "\n" << report.to_string();
  // What the report names is what the session added to the process, within what it
  // cannot see (oneDNN's primitive cache, allocator slack): 10%, or 8 MiB at least.
  const int64_t named = static_cast<int64_t>(report.total());
  EXPECT_LE(std::abs(after - named), std::max<int64_t>(after / 10, int64_t{8} << 20)) << report.to_string();
}

}  // namespace
}  // namespace ember
