// The Session as an embedding service uses it: one session, runs from many threads,
// steady-state runs that allocate nothing, new input shapes planned on the fly.
#include "allocation_counter.h"
#include "engine/src/device_select.h"
#include "loader/helpers.h"  // TempDir, write_file

#include <ember/ember.h>

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace ember {
namespace {

const std::string kModel = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";

Tensor random_images(int64_t batch, uint32_t seed) {
  Tensor t(DType::Float32, {batch, 3, 32, 32});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

std::vector<float> values(const Tensor& t) {
  return {t.data_as<float>(), t.data_as<float>() + t.numel()};
}

// x [n, 64] -> Add(bias) -> Relu -> Reshape [n, 8, 8] -> Transpose -> Softmax ->
// LayerNormalization -> y: ops that run on ember's own kernels.
std::string write_own_kernels_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("n");
  tt->mutable_shape()->add_dim()->set_dim_value(64);
  g->add_output()->set_name("y");
  auto add_init = [&](const char* name, std::vector<int64_t> dims, std::vector<float> f,
                      std::vector<int64_t> i64) {
    auto* t = g->add_initializer();
    t->set_name(name);
    for (auto d : dims) t->add_dims(d);
    t->set_data_type(f.empty() ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (float v : f) t->add_float_data(v);
    for (int64_t v : i64) t->add_int64_data(v);
  };
  std::vector<float> bias(64), scale(8, 1.5f), shift(8, 0.25f);
  for (int i = 0; i < 64; ++i) bias[i] = 0.01f * i - 0.3f;
  add_init("bias", {64}, bias, {});
  add_init("shape", {3}, {}, {-1, 8, 8});
  add_init("scale", {8}, scale, {});
  add_init("shift", {8}, shift, {});
  auto node = [&](const char* op, std::vector<std::string> ins, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(std::string(out) + "_node");
    for (auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Add", {"x", "bias"}, "a");
  node("Relu", {"a"}, "r");
  node("Reshape", {"r", "shape"}, "s");
  auto* tr = node("Transpose", {"s"}, "t");
  auto* perm = tr->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int p : {0, 2, 1}) perm->add_ints(p);
  node("Softmax", {"t"}, "sm");
  node("LayerNormalization", {"sm", "scale", "shift"}, "y");
  // This process's own folder, removed at exit: ctest runs the tests as parallel
  // processes, and one writing a shared file while another loads it fails the load.
  static const test::TempDir dir;
  const std::string path = dir / "ember_own_kernels.onnx";
  test::write_file(path, m.SerializeAsString());
  return path;
}

TEST(Session, SteadyStateRunsAllocateNothing) {
  Session session(write_own_kernels_model(), {.num_threads = 1});
  Tensor x(DType::Float32, {3, 64});
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = d(rng);
  std::vector<Tensor> out = session.make_outputs({&x, 1});
  session.run({&x, 1}, out);  // the first run binds the plan to a context
  const int allocations = testing::count_allocations([&] {
    for (int i = 0; i < 5; ++i) session.run({&x, 1}, out);
  });
  EXPECT_EQ(allocations, 0);
}

// oneDNN 2.6 builds its argument map inside every primitive execution, so runs of
// convolutions allocate there; ember's own code around them must not.
TEST(Session, SteadyStateRunsOfOneDnnModelsAllocateOnlyInsideOneDnn) {
  Session session(kModel, {.num_threads = 1});
  const Tensor x = random_images(1, 1);
  std::vector<Tensor> out = session.make_outputs({&x, 1});
  session.run({&x, 1}, out);
  const int one_run = testing::count_allocations([&] { session.run({&x, 1}, out); });
  const int five_runs = testing::count_allocations([&] {
    for (int i = 0; i < 5; ++i) session.run({&x, 1}, out);
  });
  EXPECT_EQ(five_runs, 5 * one_run) << "allocations grow from run to run";
}

TEST(Session, ConcurrentRunsFromManyThreadsGiveTheSingleThreadedResults) {
  Session session(kModel, {.num_threads = 1});
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> expected;
  for (uint32_t i = 0; i < 4; ++i) {
    inputs.push_back(random_images(1, 10 + i));
    expected.push_back(values(session.run({{session.inputs()[0].name, inputs.back()}})[0]));
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const int i = (t + k) % 4;
        auto out = session.run({{session.inputs()[0].name, inputs[i]}});
        if (values(out[0]) != expected[i]) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// 0 means every core the process may use, resolved before any kernel is built: a
// oneDNN primitive keeps the thread split it was created with, so kernels built for
// "0 = one thread" ran every default session on one core.
TEST(Session, TheDefaultThreadCountIsEveryCoreOfTheProcess) {
  const int quota = cgroup_cpu_limit();
  const int cores = std::max(omp_get_num_procs(), 1);
  EXPECT_EQ(resolve_thread_count(0), quota > 0 ? std::min(cores, quota) : cores);
  EXPECT_EQ(resolve_thread_count(3), 3);
  SessionOptions negative;
  negative.num_threads = -2;
  try {
    Session session(kModel, negative);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_threads -2 is not valid"), std::string::npos) << e.what();
  }
}

// A run sets OpenMP's thread count for its kernels and gives the caller back its own.
TEST(Session, ARunLeavesTheCallersThreadCountAsItFoundIt) {
  SessionOptions options;
  options.num_threads = 2;
  Session session(kModel, options);
  const Tensor input = random_images(1, 1);
  const int before = omp_get_max_threads();
  for (int callers : {1, 3}) {
    omp_set_num_threads(callers);
    session.run({{session.inputs()[0].name, input}});
    EXPECT_EQ(omp_get_max_threads(), callers);
  }
  omp_set_num_threads(before);
}

// A container's CPU quota caps the default: cgroup v2's cpu.max and v1's cfs files,
// read from a fake cgroup root.
TEST(Session, ACgroupCpuQuotaIsReadInCoresRoundedUp) {
  const auto root = std::filesystem::temp_directory_path() / ("ember_cgroup_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "cpu");
  auto write = [](const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; };
  EXPECT_EQ(cgroup_cpu_limit(root.string()), 0) << "no files: unlimited";
  write(root / "cpu" / "cpu.cfs_quota_us", "-1\n");
  write(root / "cpu" / "cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root.string()), 0) << "v1 without a quota";
  write(root / "cpu" / "cpu.cfs_quota_us", "250000\n");
  EXPECT_EQ(cgroup_cpu_limit(root.string()), 3) << "v1: 2.5 cores";
  write(root / "cpu.max", "max 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root.string()), 0) << "v2 wins, unlimited";
  write(root / "cpu.max", "150000 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root.string()), 2) << "v2: 1.5 cores";
  std::filesystem::remove_all(root);
}

TEST(Session, ABatchOtherThanTheFilesFixedOneRuns) {
  Session session(kModel);  // exported with batch 1
  ASSERT_EQ(session.inputs()[0].dims[0], "1");
  const Tensor one = random_images(1, 4);
  Tensor three(DType::Float32, {3, 3, 32, 32});
  for (int k = 0; k < 3; ++k)
    std::copy_n(one.data_as<float>(), one.numel(), three.data_as<float>() + k * one.numel());
  const auto single = session.run({{session.inputs()[0].name, one}});
  const auto batched = session.run({{session.inputs()[0].name, three}});
  ASSERT_EQ(batched[0].shape()[0], 3);
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < single[0].numel(); ++i)
      EXPECT_NEAR(batched[0].data_as<float>()[k * single[0].numel() + i], single[0].data_as<float>()[i], 1e-5f);
}

TEST(Session, DescribesItsInputsAndOutputs) {
  Session session(kModel);
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].dtype, DType::Float32);
  EXPECT_EQ(session.inputs()[0].dims.size(), 4u);
  ASSERT_EQ(session.outputs().size(), 1u);
}

TEST(Session, ProfileHasOneEntryPerExecutedNode) {
  Session session(kModel);
  const Tensor x = random_images(1, 2);
  Profile profile;
  session.run({{session.inputs()[0].name, x}}, {.profile = &profile});
  session.run({{session.inputs()[0].name, x}}, {.profile = &profile});
  EXPECT_EQ(profile.runs, 2);
  ASSERT_FALSE(profile.timings.empty());
  EXPECT_EQ(profile.timings.size() % 2, 0u);
  for (const auto& t : profile.timings) {
    EXPECT_FALSE(t.node.empty());
    EXPECT_EQ(t.device, "cpu");
    EXPECT_GE(t.duration_ns, 0);
  }
  EXPECT_NE(profile.table().find("share"), std::string::npos);
  EXPECT_NE(profile.chrome_trace().find("\"ph\": \"X\""), std::string::npos);
}

TEST(Session, AMissingModelFileIsAClearError) {
  try {
    Session session("/nonexistent/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.onnx"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
