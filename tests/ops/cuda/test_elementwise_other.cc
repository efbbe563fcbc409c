// CUDA Where and Cast/CastLike against the CPU kernels; the drivers on unaligned
// pointers; the broadcast index's fast division (checked on the host); and what the
// factories decline.
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/elementwise.h"
#include "test_elementwise_util.h"

#include <cstring>

namespace ember::test {
namespace {

TEST(CudaElementwiseWhere, MatchesCpuWithThreeWayBroadcasting) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(41);
  const std::vector<std::vector<Shape>> cases = {
      {{1}, {1}, {1}},
      {{7}, {7}, {7}},
      {{2, 3, 257}, {2, 3, 257}, {2, 3, 257}},
      {{2, 3, 257}, {257}, {2, 1, 1}},
      {{3, 1}, {2, 1, 5}, {}},
      {{}, {33, 17}, {33, 17}},
      {{4099}, {}, {4099}},
      {{2, 1, 3, 1, 2, 1, 2, 1}, {1, 2, 1, 3, 1, 2, 1, 2}, {2, 1, 3, 1, 2, 1, 2, 1}},
  };
  for (const auto& shapes : cases) {
    for (DType t :
         {DType::Float32, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32, DType::Bool, DType::UInt8}) {
      const Tensor cond = random_tensor(DType::Bool, shapes[0], 0, 1, rng);
      const Tensor x = random_tensor(t, shapes[1], 0, 100, rng);
      const Tensor y = random_tensor(t, shapes[2], 0, 100, rng);
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_to_string(shapes[0]) + shape_to_string(shapes[1]) +
                   shape_to_string(shapes[2]));
      expect_cuda_matches_cpu(make_node("Where", 3), 16, {&cond, &x, &y}, 0, 0);  // selection: exact
    }
  }
}

const DType kCastTypes[] = {DType::Float32, DType::Float16, DType::Int32,  DType::Int64,   DType::Int8,
                            DType::UInt8,   DType::Bool,    DType::Float64, DType::BFloat16};

// A range every target holds (uint8 none below 0), so no conversion overflows; float
// sources have fractions (truncation toward zero) and exact zeros (-> false).
Tensor cast_source(DType from, DType to, const Shape& shape, std::mt19937& rng) {
  const double lo = to == DType::UInt8 || from == DType::UInt8 ? 0 : -100, hi = 100;
  Tensor t = random_tensor(from, shape, lo, hi, rng);
  if (from != DType::Bool && t.numel() > 2) {
    Tensor zero = scalar_of(from, 0);
    std::memcpy(static_cast<char*>(t.data()) + dtype_bytes(from, 2), zero.data(), dtype_bytes(from, 1));
  }
  return t;
}

TEST(CudaElementwiseCast, EveryPairMatchesCpuExactly) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(42);
  for (DType from : kCastTypes) {
    for (DType to : kCastTypes) {
      Attributes attrs;
      attrs.set_int("to", static_cast<int64_t>(to));
      const Node cast = make_node("Cast", 1, 1, attrs);
      for (const Shape& shape : unary_shapes()) {
        SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to) + shape_to_string(shape));
        const Tensor x = cast_source(from, to, shape, rng);
        // One correctly rounded conversion on each side: exact.
        expect_cuda_matches_cpu(cast, 21, {&x}, 0, 0);
      }
    }
  }
}

TEST(CudaElementwiseCast, CastLikeTakesTheSecondInputsType) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(43);
  for (DType to : {DType::Float16, DType::Int64, DType::Bool}) {
    const Tensor x = cast_source(DType::Float32, to, {33, 17}, rng);
    const Tensor like = random_tensor(to, {2}, 0, 1, rng);
    // Not expect_cuda_matches_cpu: its reference widens float16 inputs to float32,
    // which would turn a CastLike to half into one to float.
    const Node node = make_node("CastLike", 2);
    const std::vector<Tensor> got = run_on_cuda(node, 21, {&x, &like});
    ASSERT_EQ(got.size(), 1u);
    expect_close(got[0], evaluate_node(node, 21, {&x, &like})[0], 0, 0, std::string("CastLike to ") + dtype_name(to));
  }
}

// The drivers fall back to element loads when a pointer is not aligned to a vector
// (views into the middle of a buffer); the results are the same.
TEST(CudaElementwiseDriver, UnalignedPointersGiveTheSameResults) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(44);
  const int64_t n = 1029;
  const Tensor a = random_tensor(DType::Float32, {n + 1}, -2, 2, rng);
  const Tensor b = random_tensor(DType::Float32, {n + 1}, -2, 2, rng);
  cuda::StreamContext* context = cuda::create_stream_context(0);
  void* buffer = nullptr;
  const size_t bytes = 4 * (n + 1) * sizeof(float);
  cuda::check(cudaMalloc(&buffer, bytes), "cudaMalloc");
  float* da = static_cast<float*>(buffer);
  float* db = da + (n + 1);
  float* out_aligned = db + (n + 1);
  float* out_shifted = out_aligned + (n + 1);
  cuda::check(cudaMemcpy(da, a.data(), a.nbytes(), cudaMemcpyHostToDevice), "upload");
  cuda::check(cudaMemcpy(db, b.data(), b.nbytes(), cudaMemcpyHostToDevice), "upload");
  cuda::BroadcastIndex index;
  std::string why;
  const Shape used = {n};  // of the n + 1 elements uploaded
  ASSERT_TRUE(cuda::make_broadcast_index(used, {&used, &used}, &index, &why)) << why;
  // Aligned: elements 0..n-1; shifted: elements 1..n (4 bytes off a 16-byte vector).
  for (int shift : {0, 1}) {
    float* out = shift ? out_shifted + 1 : out_aligned;
    cuda::launch_binary(cuda::BinaryOp::Mul, cuda::EwType::F32, cuda::EwType::F32, {}, da + shift, db + shift, out,
                        index, context->stream);
    cuda::launch_unary_function(ew::UnaryFunction::Tanh, cuda::EwType::F32, {}, out, out, n, context->stream);
  }
  cuda::check(cudaStreamSynchronize(context->stream), "the drivers");
  Tensor aligned(DType::Float32, {n + 1}), shifted(DType::Float32, {n + 1});
  cuda::check(cudaMemcpy(aligned.data(), out_aligned, aligned.nbytes(), cudaMemcpyDeviceToHost), "download");
  cuda::check(cudaMemcpy(shifted.data(), out_shifted, shifted.nbytes(), cudaMemcpyDeviceToHost), "download");
  cudaFree(buffer);
  cuda::destroy_stream_context(context);
  for (int64_t i = 0; i < n; ++i) {
    const float want = std::tanh(a.data_as<float>()[i + 1] * b.data_as<float>()[i + 1]);
    EXPECT_NEAR(shifted.data_as<float>()[i + 1], want, 1e-6) << i;
    const float want0 = std::tanh(a.data_as<float>()[i] * b.data_as<float>()[i]);
    EXPECT_NEAR(aligned.data_as<float>()[i], want0, 1e-6) << i;
  }
}

// ---- Host-side checks (no GPU) -------------------------------------------------------------

// The broadcast kernels divide by FastDiv when indices fit in 31 bits: n / d must be
// exact for every 0 <= n < 2^31 and 1 <= d < 2^31 (here: edges and random samples).
TEST(CudaElementwiseIndex, FastDivisionIsExact) {
  std::mt19937 rng(45);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 2100; ++d) divisors.push_back(d);
  for (int s = 1; s < 31; ++s) {
    const uint32_t p = 1u << s;
    for (uint32_t d : {p - 1, p, p + 1}) divisors.push_back(d);
  }
  divisors.push_back(0x7fffffffu);
  std::uniform_int_distribution<uint32_t> any(1, 0x7fffffffu);
  for (int i = 0; i < 20000; ++i) divisors.push_back(any(rng));
  for (uint32_t d : divisors) {
    const cuda::FastDiv f = cuda::make_fast_div(d);
    ASSERT_LE(f.shift, 31u);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1 <= 0x7fffffffu ? 2 * d - 1 : 0,
                                0x7fffffffu, 0x7ffffffeu, 0x7fffffffu / d * d, 0x7fffffffu / d * d - 1};
    for (int k = 0; k < 200; ++k) ns.push_back(any(rng));
    for (uint32_t n : ns) {
      if (n > 0x7fffffffu) continue;
      ASSERT_EQ(cuda::fast_div_host(f, n), n / d) << n << " / " << d;
    }
  }
}

TEST(CudaElementwiseIndex, MergesDimsAndMarksScalarsAndFlatInputs) {
  cuda::BroadcastIndex ix;
  std::string why;
  const Shape big = {2, 3, 257}, row = {257}, one = {}, col = {2, 1, 5}, other = {1, 4, 1};
  ASSERT_TRUE(cuda::make_broadcast_index(big, {&big, &row}, &ix, &why)) << why;
  EXPECT_EQ(ix.rank, 2);  // [6, 257]: a row broadcast takes the general path
  EXPECT_EQ(ix.dims[0], 6);
  EXPECT_EQ(ix.strides[0][0], 257);
  EXPECT_EQ(ix.strides[1][0], 0);
  EXPECT_EQ(ix.strides[1][1], 1);
  EXPECT_FALSE(ix.flat(0) || ix.flat(1) || ix.scalar(1));
  EXPECT_TRUE(ix.index32);
  ASSERT_TRUE(cuda::make_broadcast_index(big, {&big, &big}, &ix, &why)) << why;
  EXPECT_EQ(ix.rank, 1);
  EXPECT_TRUE(ix.flat(0) && ix.flat(1));
  ASSERT_TRUE(cuda::make_broadcast_index(big, {&one, &big}, &ix, &why)) << why;
  EXPECT_EQ(ix.rank, 1);
  EXPECT_TRUE(ix.scalar(0));
  EXPECT_TRUE(ix.flat(1));
  ASSERT_TRUE(cuda::make_broadcast_index({2, 4, 5}, {&col, &other}, &ix, &why)) << why;
  EXPECT_EQ(ix.rank, 3);
  EXPECT_EQ(ix.strides[0][1], 0);
  EXPECT_EQ(ix.strides[1][1], 1);
}

TEST(CudaElementwiseWhere, DeclinesWhatItLacksWithAReason) {
  const std::string why = cuda_refusal(make_node("Where", 3), 16,
                                       {{DType::Bool, {3}}, {DType::Complex128, {3}}, {DType::Complex128, {3}}});
  EXPECT_NE(why.find("complex128"), std::string::npos) << why;
  EXPECT_EQ(cuda_refusal(make_node("Where", 3), 16,
                         {{DType::Bool, {3, 1}}, {DType::Float64, {3}}, {DType::Float64, {1}}}),
            "");
}

TEST(CudaElementwiseCast, DeclinesTypesItLacksWithAReason) {
  Attributes attrs;
  attrs.set_int("to", static_cast<int64_t>(DType::Int16));
  const std::string why = cuda_refusal(make_node("Cast", 1, 1, attrs), 21, {{DType::Float32, {3}}});
  EXPECT_NE(why.find("int16"), std::string::npos) << why;
  attrs.set_int("to", static_cast<int64_t>(DType::BFloat16));
  EXPECT_EQ(cuda_refusal(make_node("Cast", 1, 1, attrs), 21, {{DType::Float32, {3}}}), "");
  attrs.set_int("to", static_cast<int64_t>(DType::Float16));
  EXPECT_EQ(cuda_refusal(make_node("Cast", 1, 1, attrs), 21, {{DType::Int64, {3}}}), "");
}

}  // namespace
}  // namespace ember::test
