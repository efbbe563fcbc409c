// The CUDA emulator itself: it must compute what a GPU computes, and catch what a GPU
// would reject or get wrong. Kernels: emulator_test_kernels.cu.
#include "tests/cuda_emulator/emulator_control.h"

#include <ember/devices.h>
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace ember::emu_test {
cudaError_t block_sum(const float* x, float* out, int n, int blocks, int threads, cudaStream_t stream);
cudaError_t divergent_barrier(float* out);
cudaError_t shuffle_after_return(float* out);
cudaError_t overrun(float* out, int n);
cudaError_t add_one(float* data, int n, dim3 grid, int threads, size_t shared_bytes, cudaStream_t stream);
cudaError_t rotate(const float* in, float* out, int n);
cudaError_t mma(const float* a, const float* b, const float* c, float* d, bool bf16);
}  // namespace ember::emu_test

namespace {

using namespace ember::emu_test;

// Device memory holding `values`, freed at the end of the test.
struct DeviceFloats {
  float* data = nullptr;
  size_t n = 0;
  explicit DeviceFloats(const std::vector<float>& values) : n(values.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data, values.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceFloats() { cudaFree(data); }
  std::vector<float> read() const {
    std::vector<float> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(CudaEmulator, ListsOneDevice) {
  const ember::GpuReport report = ember::list_gpus();
  ASSERT_TRUE(report.problem.empty()) << report.problem;
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_NE(report.gpus[0].name.find("emulator"), std::string::npos);
}

TEST(CudaEmulator, BarriersAndShufflesReduceLikeAGpu) {
  for (int threads : {32, 96, 256, 1024}) {
    const int n = 5000, blocks = 7;
    const std::vector<float> x = random_floats(n, 1);
    DeviceFloats dx(x), dout(std::vector<float>(blocks, -1.f));
    ASSERT_EQ(block_sum(dx.data, dout.data, n, blocks, threads, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> partial = dout.read();
    double want = 0, got = 0;
    for (float v : x) want += v;
    for (float v : partial) got += v;
    EXPECT_NEAR(got, want, 1e-3) << threads << " threads";
  }
}

// The warp's tensor-core product (ops/cuda/mma.cuh) against a plain one, on float16 and
// on bfloat16 values: products of two such values are exact in float, so only the float
// sums round.
TEST(CudaEmulator, WarpMatrixMultiplyMatchesAPlainProduct) {
  for (const bool bf16 : {false, true}) {
    auto rounded = [&](std::vector<float> v) {
      for (float& x : v) x = bf16 ? __bfloat162float(__float2bfloat16(x)) : __half2float(__float2half(x));
      return v;
    };
    const std::vector<float> a = rounded(random_floats(16 * 16, 5)), b = rounded(random_floats(16 * 8, 6)),
                             c = random_floats(16 * 8, 7);
    DeviceFloats da(a), db(b), dc(c), dd(std::vector<float>(16 * 8, NAN));
    ASSERT_EQ(mma(da.data, db.data, dc.data, dd.data, bf16), cudaSuccess);
    const std::vector<float> d = dd.read();
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        double want = c[i * 8 + j];
        for (int k = 0; k < 16; ++k) want += static_cast<double>(a[i * 16 + k]) * b[k * 8 + j];
        EXPECT_NEAR(d[i * 8 + j], want, 1e-5) << (bf16 ? "bfloat16" : "float16") << " row " << i << " column " << j;
      }
  }
}

TEST(CudaEmulator, DynamicSharedMemoryIsSharedByTheBlock) {
  const std::vector<float> in = random_floats(64, 2);
  DeviceFloats din(in), dout(std::vector<float>(64, 0.f));
  ASSERT_EQ(rotate(din.data, dout.data, 64), cudaSuccess);
  const std::vector<float> out = dout.read();
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(out[i], in[(i + 1) % 64]);
}

TEST(CudaEmulator, CatchesADivergentBarrier) {
  DeviceFloats out(std::vector<float>(32, 0.f));
  EXPECT_EQ(divergent_barrier(out.data), cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("__syncthreads"), std::string::npos);
}

TEST(CudaEmulator, CatchesAShuffleNamingAReturnedLane) {
  DeviceFloats out(std::vector<float>(32, 0.f));
  EXPECT_EQ(shuffle_after_return(out.data), cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("has returned"), std::string::npos);
}

TEST(CudaEmulator, CatchesAWritePastTheEndOfAnAllocation) {
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), 100 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(overrun(out, 100), cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("past the end"), std::string::npos);
  EXPECT_EQ(cudaFree(out), cudaErrorIllegalAddress) << "freeing it reports the overwrite again";
  cudaGetLastError();
}

TEST(CudaEmulator, RejectsLaunchesAGpuWouldReject) {
  DeviceFloats data(std::vector<float>(8, 0.f));
  EXPECT_EQ(add_one(data.data, 8, dim3(1, 70000), 32, 0, nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(add_one(data.data, 8, dim3(1), 2048, 0, nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(add_one(data.data, 8, dim3(1), 32, 64 * 1024, nullptr), cudaErrorInvalidConfiguration);
  std::vector<float> host(8);
  EXPECT_EQ(add_one(host.data(), 8, dim3(1), 32, 0, nullptr), cudaErrorIllegalAddress);
  EXPECT_EQ(add_one(data.data, 8, dim3(1), 32, 0, nullptr), cudaSuccess);
  EXPECT_EQ(data.read(), std::vector<float>(8, 1.f));
}

TEST(CudaEmulator, GraphsReplayWhatTheStreamCaptured) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DeviceFloats data(std::vector<float>(40, 0.f));
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(add_one(data.data, 40, dim3(2), 32, 0, stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(data.read(), std::vector<float>(40, 0.f)) << "captured work must not run";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(data.read(), std::vector<float>(40, 2.f));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CudaEmulator, ASynchronousCallInsideACaptureInvalidatesIt) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DeviceFloats data(std::vector<float>(4, 0.f));
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  std::vector<float> host(4);
  EXPECT_EQ(cudaMemcpy(host.data(), data.data, 16, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  cudaStreamDestroy(stream);
}

TEST(CudaEmulator, OutOfMemoryPastTheSetCapacity) {
  ember::emu::set_memory_capacity(1 << 20);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 2 << 20), cudaErrorMemoryAllocation);
  cudaGetLastError();
  ember::emu::set_memory_capacity(0);
  ASSERT_EQ(cudaMalloc(&p, 2 << 20), cudaSuccess);
  cudaFree(p);
}

}  // namespace
