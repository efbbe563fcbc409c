// Sessions on the GPU through the public API: placement, results against the CPU,
// device-resident inputs and outputs, CUDA graphs, profiling, memory and errors.
// Every test that needs a GPU skips, saying why, when there is none.
#include <ember/devices.h>
#include <ember/ember.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#ifdef EMBER_CUDA_EMULATOR
#include "tests/cuda_emulator/emulator_control.h"
#endif

#include <chrono>
#include <cmath>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

namespace ember {
namespace {

// The checkout's root; EMBER_SOURCE_DIR in the environment overrides the one built in,
// for binaries carried to a GPU machine (scripts/gpu_bundle.sh).
std::string source_dir() {
  const char* env = std::getenv("EMBER_SOURCE_DIR");
  return env ? env : EMBER_SOURCE_DIR;
}

const std::string kModel = source_dir() + "/models/default/model.onnx";

std::string why_no_gpu() {
  const GpuReport report = list_gpus();
  return report.problem.empty() ? "" : "no GPU: " + report.problem;
}

#define REQUIRE_GPU()                                 \
  do {                                                \
    const std::string why = why_no_gpu();             \
    if (!why.empty()) GTEST_SKIP() << why;            \
  } while (0)

Tensor input_for(const Session& session, int64_t batch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  Shape shape;
  for (size_t k = 0; k < session.inputs()[0].dims.size(); ++k) {
    const std::string& d = session.inputs()[0].dims[k];
    shape.push_back(k == 0 ? batch : std::stoll(d));
  }
  Tensor x(DType::Float32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);
  return x;
}

// max |got - want| / max(|want|, 1e-2 * max|want|), the models' metric.
double relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(double(want.data_as<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.data_as<float>()[i], g = got.data_as<float>()[i];
    worst = std::max(worst, std::fabs(g - w) / std::max(std::fabs(w), 1e-2 * scale));
  }
  return worst;
}

// max |got - want| / max |want|.
double scale_error(const Tensor& got, const Tensor& want) {
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::fabs(double(want.data_as<float>()[i])));
    worst = std::max(worst, std::fabs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]));
  }
  return worst / std::max(scale, 1e-30);
}

std::vector<Tensor> run_on(const std::string& device, const Tensor& x, SessionOptions options = {}) {
  options.device = device;
  Session session(kModel, options);
  return session.run({{session.inputs()[0].name, x}});
}

TEST(CudaSession, AMalformedOrMissingDeviceIsAClearError) {
  try {
    Session session(kModel, SessionOptions{.device = "cuda:x"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected cpu, cuda or cuda:N"), std::string::npos) << e.what();
  }
  try {
    Session session(kModel, SessionOptions{.device = "cuda:64"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not available"), std::string::npos) << e.what();
  }
}

TEST(CudaSession, EveryNodeOfTheDefaultModelRunsOnTheGpu) {
  REQUIRE_GPU();
#ifdef EMBER_CUDA_EMULATOR
  GTEST_SKIP() << "the CUDA emulator has no cuBLASLt or cuDNN: MatMul, Gemm and Conv run on the CPU there";
#endif
  Session session(kModel, SessionOptions{.device = "cuda"});
  const Tensor x = input_for(session, 2);
  const std::string plan = session.explain(std::span<const Tensor>(&x, 1));
  EXPECT_NE(plan.find("cuda:0"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("runs on cpu"), std::string::npos) << plan;
}

TEST(CudaSession, DefaultModelMatchesTheCpu) {
  REQUIRE_GPU();
  Session probe(kModel);
  for (int64_t batch : {1, 3, 8}) {
    const Tensor x = input_for(probe, batch);
    const auto want = run_on("cpu", x), got = run_on("cuda", x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(relative_error(got[i], want[i]), 1e-3) << "batch " << batch;  // float32, TF32 off
  }
}

TEST(CudaSession, Float16StaysWithinItsTolerance) {
  REQUIRE_GPU();
  Session probe(kModel);
  const Tensor x = input_for(probe, 4);
  const auto want = run_on("cpu", x);
  const auto got = run_on("cuda", x, SessionOptions{.precision = "fp16"});
  // Half errors scale with the dot products, not with each element: judged against the
  // output's scale (the CPU's fp16 path measures ~4e-4 here; tests/models/check_models.py).
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(scale_error(got[i], want[i]), 1e-2);
}

// bf16 on a GPU converts the whole graph to bfloat16, as fp16 does to float16: 8
// mantissa bits against float16's 11, so errors run ~8 times float16's (judged, as
// there, against the output's scale). Under the emulator the convolutions and the Gemm
// run on the CPU (no cuDNN, no cuBLASLt) in bfloat16; BatchNorm, Relu, Add and pooling
// run on the emulated GPU.
TEST(CudaSession, BFloat16StaysWithinItsTolerance) {
  REQUIRE_GPU();
  Session probe(kModel);
  for (int64_t batch : {1, 4}) {
    const Tensor x = input_for(probe, batch);
    const auto want = run_on("cpu", x);
    const auto got = run_on("cuda", x, SessionOptions{.precision = "bf16"});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), DType::Float32);  // the interface stays float32
      EXPECT_LE(scale_error(got[i], want[i]), 5e-2) << "batch " << batch;
      EXPECT_GT(scale_error(got[i], want[i]), 0.0) << "batch " << batch;  // it did run in bfloat16
    }
  }
}

TEST(CudaSession, BFloat16ExplainsWhatItConverted) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda", .precision = "bf16"});
  const Tensor x = input_for(session, 2);
  const std::string plan = session.explain(std::span<const Tensor>(&x, 1));
  EXPECT_NE(plan.find("bf16: "), std::string::npos) << plan;
  EXPECT_NE(plan.find(" nodes in bfloat16"), std::string::npos) << plan;
  EXPECT_NE(plan.find("NhwcConv"), std::string::npos) << plan;  // cuDNN's tensor cores read NHWC
#ifndef EMBER_CUDA_EMULATOR
  EXPECT_EQ(plan.find("runs on cpu"), std::string::npos) << plan;
#endif
}

#ifdef EMBER_CUDA_EMULATOR
// bfloat16 tensor cores start at compute capability 8.0 (Ampere): an older GPU is
// refused with the reason and what to use instead.
TEST(CudaSession, BFloat16NeedsComputeCapability8) {
  REQUIRE_GPU();
  emu::set_compute_capability(7, 5);
  try {
    Session session(kModel, SessionOptions{.device = "cuda", .precision = "bf16"});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("compute capability 8.0"), std::string::npos) << what;
    EXPECT_NE(what.find("7.5"), std::string::npos) << what;
    EXPECT_NE(what.find("fp16"), std::string::npos) << what;
  }
  emu::set_compute_capability(0, 0);
  EXPECT_NO_THROW(Session(kModel, SessionOptions{.device = "cuda", .precision = "bf16"}));
}
#endif

// float16 convolutions are planned channels-last (cuDNN's tensor-core kernels read
// NHWC): NhwcConv nodes between one transpose in and one out, on the GPU.
TEST(CudaSession, Float16ConvolutionsRunChannelsLast) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda", .precision = "fp16"});
  const Tensor x = input_for(session, 2);
  const std::string plan = session.explain(std::span<const Tensor>(&x, 1));
#ifdef EMBER_CUDA_EMULATOR
  EXPECT_NE(plan.find("NhwcConv"), std::string::npos) << plan;  // on the CPU here: no cuDNN
#else
  EXPECT_NE(plan.find("cuda:0 NhwcConv"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("cpu NhwcConv"), std::string::npos) << plan;
#endif
}

TEST(CudaSession, CudaGraphReplaysGiveTheSameResults) {
  REQUIRE_GPU();
  Session plain(kModel, SessionOptions{.device = "cuda"});
  Session graph(kModel, SessionOptions{.device = "cuda", .cuda_graph = true});
  for (int64_t batch : {2, 5}) {
    const Tensor x = input_for(plain, batch);
    const auto want = plain.run({{plain.inputs()[0].name, x}});
    for (int repeat = 0; repeat < 3; ++repeat) {
      const auto got = graph.run({{graph.inputs()[0].name, x}});
      for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(relative_error(got[i], want[i]), 1e-6);
    }
  }
}

// Every new batch is a new plan; plans share the kernels of nodes whose inputs did not
// change, and evicting a plan (a cache of two) must leave the kernels other plans hold.
TEST(CudaSession, PlansOfManyShapesShareKernelsAndMatchTheCpu) {
  REQUIRE_GPU();
  for (bool cuda_graph : {false, true}) {
    Session cpu(kModel);
    Session gpu(kModel, SessionOptions{.device = "cuda", .cuda_graph = cuda_graph, .plan_cache_max_plans = 2});
    for (int64_t batch : {1, 3, 8, 3, 1, 5, 8, 1}) {
      const Tensor x = input_for(cpu, batch);
      const auto want = cpu.run({{cpu.inputs()[0].name, x}});
      for (int repeat = 0; repeat < 2; ++repeat) {
        const auto got = gpu.run({{gpu.inputs()[0].name, x}});
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_LE(relative_error(got[i], want[i]), 1e-3) << "batch " << batch << " cuda_graph " << cuda_graph;
      }
    }
  }
}

TEST(CudaSession, SteadyStateRunsAllocateNoDeviceMemory) {
  REQUIRE_GPU();
  for (bool cuda_graph : {false, true}) {
    Session session(kModel, SessionOptions{.device = "cuda", .cuda_graph = cuda_graph});
    const Tensor x = input_for(session, 4);
    std::vector<Tensor> outputs = session.make_outputs(std::span<const Tensor>(&x, 1));
    session.run(std::span<const Tensor>(&x, 1), outputs);
    const size_t before = session.memory()[0].allocations;
    for (int i = 0; i < 5; ++i) session.run(std::span<const Tensor>(&x, 1), outputs);
    EXPECT_EQ(session.memory()[0].allocations, before) << "cuda_graph " << cuda_graph;
#ifndef EMBER_CUDA_EMULATOR  // there the Convs and the Gemm, which hold the weights, run on the CPU
    EXPECT_GT(session.memory()[0].weight_bytes, 0u);
#endif
    EXPECT_GE(session.memory()[0].peak_bytes, session.memory()[0].weight_bytes);
  }
}

// On the emulator the Convs and the Gemm run on the CPU, so most nodes do: the session
// says so once per plan, as a warning, to its log sink and nowhere else.
TEST(CudaSession, MostNodesOnTheCpuIsAWarningInTheLogSink) {
  REQUIRE_GPU();
#ifndef EMBER_CUDA_EMULATOR
  GTEST_SKIP() << "on a GPU every node of the default model runs there: nothing to warn about";
#endif
  std::mutex mutex;
  std::vector<std::string> warnings;
  auto sink = [&](LogLevel level, std::string_view line) {
    std::lock_guard lock(mutex);
    if (level == LogLevel::Warning) warnings.emplace_back(line);
  };
  testing::internal::CaptureStderr();
  {
    Session session(kModel, SessionOptions{.device = "cuda", .log_sink = sink});
    for (int i = 0; i < 2; ++i) session.run({{session.inputs()[0].name, input_for(session, 1)}});
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nodes run on the CPU, not on cuda:0"), std::string::npos) << warnings[0];

  testing::internal::CaptureStderr();
  {
    Session session(kModel, SessionOptions{.device = "cuda", .log_level = LogLevel::None});
    session.run({{session.inputs()[0].name, input_for(session, 1)}});
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// Runs stopped by deadlines at every point of a run, CUDA graphs recorded or replayed,
// leave the session giving the results of one never stopped.
TEST(CudaSession, RunsStoppedMidWayLeaveTheSessionRight) {
  REQUIRE_GPU();
  for (bool cuda_graph : {false, true}) {
    Session session(kModel, SessionOptions{.device = "cuda", .cuda_graph = cuda_graph});
    const Tensor x = input_for(session, 2);
    const auto start = std::chrono::steady_clock::now();
    const auto want = session.run({{session.inputs()[0].name, x}});
    const auto one_run = std::chrono::steady_clock::now() - start;
    int stopped = 0;
    for (int k = 0; k < 10; ++k) {
      RunOptions options;
      options.deadline = std::chrono::steady_clock::now() + one_run * k / 10;
      try {
        session.run({{session.inputs()[0].name, x}}, options);
      } catch (const DeadlineExceeded&) {
        ++stopped;
      }
      const auto got = session.run({{session.inputs()[0].name, x}});
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(relative_error(got[i], want[i]), 1e-6) << "cuda_graph " << cuda_graph << ", k " << k;
    }
    EXPECT_GT(stopped, 0);
  }
}

TEST(CudaSession, InputsAndOutputsCanStayOnTheGpu) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda"});
  const Tensor x = input_for(session, 3);
  const auto want = session.run({{session.inputs()[0].name, x}});
  void* x_device = nullptr;
  void* y_device = nullptr;
  ASSERT_EQ(cudaMalloc(&x_device, x.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y_device, want[0].nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(x_device, x.data(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the session's stream does not wait for the legacy one
  const Device gpu{DeviceKind::Cuda, 0};
  const Tensor in = Tensor::view(x.dtype(), x.shape(), x_device, gpu);
  std::vector<Tensor> out = {Tensor::view(want[0].dtype(), want[0].shape(), y_device, gpu)};
  session.run(std::span<const Tensor>(&in, 1), out);
  Tensor got(want[0].dtype(), want[0].shape());
  ASSERT_EQ(cudaMemcpy(got.data(), y_device, got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_LE(relative_error(got, want[0]), 1e-6);
  const std::string plan = session.explain(std::span<const Tensor>(&in, 1));
  EXPECT_EQ(plan.find("copy 'input' cpu->cuda"), std::string::npos) << "no upload of the input expected:\n" << plan;
  cudaFree(x_device);
  cudaFree(y_device);
}

// Session::to_device / to_host: tensors the session allocates on its GPU, run with no
// host copy; their memory is counted while they live and freed after.
TEST(CudaSession, ToDeviceTensorsRunWithoutHostCopies) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda"});
  const Tensor x = input_for(session, 3);
  const auto want = session.run({{session.inputs()[0].name, x}});
  auto gpu_bytes = [&] {
    for (const DeviceMemory& m : session.memory())
      if (m.device == "cuda:0") return m.in_use_bytes;
    return size_t(0);
  };
  const size_t before = gpu_bytes();
  {
    const Tensor in = session.to_device(x);
    EXPECT_EQ(in.device(), (Device{DeviceKind::Cuda, 0}));
    std::vector<Tensor> out = {session.to_device(Tensor(want[0].dtype(), want[0].shape()))};
    EXPECT_GE(gpu_bytes(), before + x.nbytes() + want[0].nbytes());
    for (int round = 0; round < 2; ++round) {
      session.run(std::span<const Tensor>(&in, 1), out);
      EXPECT_LE(relative_error(session.to_host(out[0]), want[0]), 1e-6) << "round " << round;
    }
    const Tensor back = session.to_host(in);
    EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0) << "to_host gives back the bytes to_device took";
    const std::string plan = session.explain(std::span<const Tensor>(&in, 1));
    EXPECT_EQ(plan.find("copy 'input' cpu->cuda"), std::string::npos) << plan;
  }
  EXPECT_EQ(gpu_bytes(), before) << "the tensors' memory goes with them";
  EXPECT_THROW(session.to_device(session.to_device(x)), Error);  // takes host tensors only
}

// A run on the caller's stream: it starts after the caller's work there (the upload
// below is queued on that stream and never waited for by the host) and the caller's
// next work there (the download) starts after the run's, with no wait in between.
TEST(CudaSession, RunsInOrderOnTheCallersStream) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda"});
  const Tensor x = input_for(session, 2);
  const auto want = session.run({{session.inputs()[0].name, x}});
  cudaStream_t caller = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking), cudaSuccess);
  void* x_device = nullptr;
  void* y_device = nullptr;
  ASSERT_EQ(cudaMalloc(&x_device, x.nbytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y_device, want[0].nbytes()), cudaSuccess);
  const Device gpu{DeviceKind::Cuda, 0};
  const Tensor in = Tensor::view(x.dtype(), x.shape(), x_device, gpu);
  std::vector<Tensor> out = {Tensor::view(want[0].dtype(), want[0].shape(), y_device, gpu)};
  RunOptions on_caller;
  on_caller.cuda_stream = caller;
  for (int round = 0; round < 3; ++round) {  // the second and later rounds reuse the run context
    Tensor got(want[0].dtype(), want[0].shape());
    ASSERT_EQ(cudaMemsetAsync(y_device, 0xff, got.nbytes(), caller), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(x_device, x.data(), x.nbytes(), cudaMemcpyHostToDevice, caller), cudaSuccess);
    session.run(std::span<const Tensor>(&in, 1), out, on_caller);
#ifdef EMBER_CUDA_EMULATOR
    EXPECT_EQ(emu::waits_on(caller), size_t(round + 1)) << "the run must wait for the caller's stream";
    EXPECT_EQ(emu::work_waited_for(caller), emu::work_done()) << "the caller's stream must wait for the whole run";
#endif
    ASSERT_EQ(cudaMemcpyAsync(got.data(), y_device, got.nbytes(), cudaMemcpyDeviceToHost, caller), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);
    EXPECT_LE(relative_error(got, want[0]), 1e-6) << "round " << round;
  }
  // Host inputs and outputs on the caller's stream: the run waits for its download.
  const auto host_run = session.run({{session.inputs()[0].name, x}}, on_caller);
  EXPECT_LE(relative_error(host_run[0], want[0]), 1e-6);
  ASSERT_EQ(cudaStreamSynchronize(caller), cudaSuccess);
  cudaFree(x_device);
  cudaFree(y_device);
  cudaStreamDestroy(caller);
}

TEST(CudaSession, ProfileTimesGpuNodesWithEvents) {
  REQUIRE_GPU();
  Session session(kModel, SessionOptions{.device = "cuda"});
  const Tensor x = input_for(session, 2);
  Profile profile;
  session.run({{session.inputs()[0].name, x}}, RunOptions{&profile});
  int on_gpu = 0;
  for (const auto& t : profile.timings) {
    on_gpu += t.device == "cuda:0";
    EXPECT_GE(t.duration_ns, 0) << t.node;
  }
  // Every step the plan puts on the GPU is timed.
  const std::string plan = session.explain(std::span<const Tensor>(&x, 1));
  int planned = 0;  // step lines read "  #<n> <device> ..."
  std::istringstream lines(plan);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string step, device;
    words >> step >> device;
    planned += step.starts_with("#") && device == "cuda:0";
  }
  EXPECT_GT(on_gpu, 0);
  EXPECT_GE(on_gpu, planned) << plan;
}

}  // namespace
}  // namespace ember
