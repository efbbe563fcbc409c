// MaxPool, AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool, and their
// channels-last Nhwc* forms, on CUDA against the CPU kernels.
#include "dense_test_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/pool_impl.h"

#include <cmath>
#include <cstring>

namespace ember::test {
namespace {

// float32: Max is exact; averages sum at most a few hundred terms in another order.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-5;
// float16: the output is rounded to half.
constexpr double kRtol16 = 2e-3, kAtol16 = 2e-3;
// bfloat16: the output is rounded to 8 mantissa bits (2^-9 relative, 3.9e-3 between
// neighbours).
constexpr double kRtolBf16 = 8e-3, kAtolBf16 = 8e-3;

const DType kFloatTypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
double rtol(DType t) { return t == DType::Float16 ? kRtol16 : t == DType::BFloat16 ? kRtolBf16 : kRtol32; }
double atol(DType t) { return t == DType::Float16 ? kAtol16 : t == DType::BFloat16 ? kAtolBf16 : kAtol32; }

struct PoolCase {
  Shape x, kernel;
  Shape strides, dilations, pads;  // empty: the attribute is left out
  int64_t ceil_mode = 0;
  std::string auto_pad;
};

PoolCase pool_case(Shape x, Shape kernel, Shape strides = {}, Shape dilations = {}, Shape pads = {},
                   int64_t ceil_mode = 0, std::string auto_pad = "") {
  return PoolCase{std::move(x),    std::move(kernel), std::move(strides), std::move(dilations),
                  std::move(pads), ceil_mode,         std::move(auto_pad)};
}

Attributes pool_attributes(const PoolCase& c) {
  Attributes at;
  at.set_ints("kernel_shape", c.kernel);
  if (!c.strides.empty()) at.set_ints("strides", c.strides);
  if (!c.dilations.empty()) at.set_ints("dilations", c.dilations);
  if (!c.pads.empty()) at.set_ints("pads", c.pads);
  if (c.ceil_mode) at.set_int("ceil_mode", 1);
  if (!c.auto_pad.empty()) at.set_string("auto_pad", c.auto_pad);
  return at;
}

std::string describe(const PoolCase& c) {
  return "X " + shape_to_string(c.x) + " kernel " + shape_to_string(c.kernel) + " strides " +
         shape_to_string(c.strides) + " dilations " + shape_to_string(c.dilations) + " pads " +
         shape_to_string(c.pads) + (c.ceil_mode ? " ceil" : "") + " " + c.auto_pad;
}

const PoolCase kCases[] = {
    pool_case({2, 3, 9, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}),
    pool_case({1, 2, 7, 9}, {3, 3}, {2, 2}, {}, {}, 1),               // ceil_mode
    pool_case({1, 2, 8, 8}, {3, 2}, {2, 3}, {}, {1, 0, 1, 1}, 1),     // ceil_mode past the explicit pads
    pool_case({1, 3, 11, 13}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}),  // dilations
    pool_case({1, 3, 7, 9}, {2, 3}, {2, 2}, {}, {}, 0, "SAME_UPPER"),
    pool_case({1, 3, 7, 9}, {4, 4}, {1, 1}, {}, {}, 0, "SAME_LOWER"),
    pool_case({2, 5, 17}, {4}, {3}, {}, {1, 2}),                      // 1-D
    pool_case({1, 2, 5, 6, 7}, {2, 3, 3}, {2, 1, 2}, {}, {0, 1, 1, 1, 1, 0}),  // 3-D
    pool_case({1, 1, 33, 257}, {2, 2}, {2, 2}),
};

TEST(CudaMaxPool, EveryGeometry) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases) {
      const Tensor x = seeded_tensor(t, c.x, 31);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("MaxPool", 1, 1, pool_attributes(c)), 12, {&x}, rtol(t), atol(t));
    }
}

TEST(CudaMaxPool, EightBitIntegers) {
  EMBER_REQUIRE_GPU();
  for (DType t : {DType::Int8, DType::UInt8})
    for (const PoolCase& c : kCases) {
      const Tensor x = seeded_tensor(t, c.x, 32, t == DType::Int8 ? -128 : 0, t == DType::Int8 ? 127 : 255);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("MaxPool", 1, 1, pool_attributes(c)), 12, {&x}, 0, 0);
    }
}

TEST(CudaAveragePool, EveryGeometryWithAndWithoutPadCounting) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases)
      for (int64_t count_pad : {0, 1}) {
        if (!c.dilations.empty()) continue;  // dilations on AveragePool arrived in opset 19
        const Tensor x = seeded_tensor(t, c.x, 33);
        Attributes at = pool_attributes(c);
        at.set_int("count_include_pad", count_pad);
        SCOPED_TRACE(describe(c) + " count_include_pad " + std::to_string(count_pad) + " " + dtype_name(t));
        expect_cuda_matches_cpu(make_node("AveragePool", 1, 1, at), 11, {&x}, rtol(t), atol(t));
      }
}

TEST(CudaAveragePool, Dilations) {
  EMBER_REQUIRE_GPU();
  const PoolCase c = pool_case({1, 3, 11, 13}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 1}, 1);
  for (DType t : kFloatTypes) {
    const Tensor x = seeded_tensor(t, c.x, 34);
    expect_cuda_matches_cpu(make_node("AveragePool", 1, 1, pool_attributes(c)), 19, {&x}, rtol(t), atol(t));
  }
}

TEST(CudaLpPool, PowersTwoAndThree) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (int64_t p : {2, 3}) {
      const PoolCase c = pool_case({1, 3, 9, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1});
      Attributes at = pool_attributes(c);
      at.set_int("p", p);
      const Tensor x = seeded_tensor(t, c.x, 35);
      SCOPED_TRACE("p " + std::to_string(p) + " " + dtype_name(t));
      // powf vs std::pow: a few float ulps.
      expect_cuda_matches_cpu(make_node("LpPool", 1, 1, at), 18, {&x}, t == DType::Float32 ? 1e-4 : rtol(t),
                              t == DType::Float32 ? 1e-5 : atol(t));
    }
}

TEST(CudaGlobalPool, AverageAndMaxSmallAndLargePlanes) {
  EMBER_REQUIRE_GPU();
  // 63 elements per plane: a warp each; 1600 and 4913: a block each.
  const Shape shapes[] = {{2, 3, 7, 9}, {1, 4, 40, 40}, {3, 5, 1}, {1, 2, 17, 17, 17}, {1, 1000, 1, 1}};
  for (DType t : kFloatTypes)
    for (const Shape& s : shapes)
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        const Tensor x = seeded_tensor(t, s, 36);
        SCOPED_TRACE(std::string(op) + " " + shape_to_string(s) + " " + dtype_name(t));
        // Averages of up to ~5000 terms summed in another order.
        expect_cuda_matches_cpu(make_node(op, 1), 1, {&x}, rtol(t) * 10, atol(t));
      }
}

// The channels-last forms (com.ember Nhwc*, from the layout planning): X [N, H, W, C].
Shape channels_last(const Shape& nchw) { return {nchw[0], nchw[2], nchw[3], nchw[1]}; }

TEST(CudaNhwcPool, MaxAndAverageMatchTheCpu) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kCases) {
      if (c.x.size() != 4) continue;  // the layout planning makes 2-D ones
      const Tensor x = seeded_tensor(t, channels_last(c.x), 37);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node("NhwcMaxPool", 1, 1, pool_attributes(c), "com.ember"), 1, {&x}, rtol(t),
                              atol(t));
      if (!c.dilations.empty()) continue;
      expect_cuda_matches_cpu(make_node("NhwcAveragePool", 1, 1, pool_attributes(c), "com.ember"), 1, {&x}, rtol(t),
                              atol(t));
    }
}

// The plain 2-D channels-last reference: X [N, H, W, C] (any float dtype, read as
// double), Y's dims from `y`. Max: the largest tap that is not NaN, -inf for none (as
// the CPU reference loop, ops/cpu/pool.cc; oneDNN, which the CPU's Nhwc pools run on,
// gives -FLT_MAX there and takes no count_include_pad past the pads). Average: the
// sum over taps inside X divided by those taps, or with count_include_pad by the taps
// inside the explicit pads.
std::vector<double> nhwc_reference_pool(const Tensor& x, const Shape& y, const PoolCase& c, bool max,
                                        bool count_pad) {
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], ch = x.shape()[3];
  const int64_t oh = y[1], ow = y[2];
  const auto at = [](const Shape& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; };
  const int64_t sh = at(c.strides, 0, 1), sw = at(c.strides, 1, 1), dh = at(c.dilations, 0, 1),
                dw = at(c.dilations, 1, 1);
  const int64_t pt = at(c.pads, 0, 0), pl = at(c.pads, 1, 0), pb = at(c.pads, 2, 0), pr = at(c.pads, 3, 0);
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t k = 0; k < ch; ++k) {
          double best = -INFINITY, sum = 0;
          int64_t counted = 0;
          for (int64_t r = 0; r < c.kernel[0]; ++r)
            for (int64_t s = 0; s < c.kernel[1]; ++s) {
              const int64_t iy = oy * sh - pt + r * dh, ix = ox * sw - pl + s * dw;
              const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
              counted += inside || (count_pad && iy < h + pb && ix < w + pr);
              if (!inside) continue;
              const double v = element(x, ((b * h + iy) * w + ix) * ch + k);
              if (v > best) best = v;
              sum += v;
            }
          out.push_back(max ? best : counted ? sum / static_cast<double>(counted) : 0.0);
        }
  return out;
}

// The channels-last 2-D kernel's paths: 16-byte vectors of channels (C a multiple of 8
// halves or 4 floats) and one channel per thread (the rest), each with windows clipped
// at every edge: pads, ceil_mode's extra row, dilations, a window wider than X.
const PoolCase kNhwcCases[] = {
    pool_case({2, 16, 13, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}),      // ResNet's stem pool, odd sizes
    pool_case({1, 8, 7, 9}, {3, 3}, {2, 2}, {}, {}, 1),                // ceil_mode
    pool_case({1, 24, 8, 8}, {3, 2}, {2, 3}, {}, {1, 0, 1, 1}, 1),     // ceil_mode past the explicit pads
    pool_case({1, 12, 11, 13}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}),  // dilations; float16 one channel a thread
    pool_case({1, 20, 3, 4}, {5, 5}, {1, 1}, {}, {2, 2, 2, 2}),        // windows wider than X
    pool_case({2, 7, 9, 10}, {2, 2}, {2, 2}),                          // no vector at all
    pool_case({1, 64, 5, 6}, {3, 3}, {2, 2}, {}, {0, 1, 2, 1}, 1),     // asymmetric pads
};

// Max is exact; Average: float32 sums of at most 25 terms against double (kRtol32), and
// float16's output rounding (kRtol16).
TEST(CudaNhwcPool, VectorAndScalarChannelPathsMatchThePlainReference) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const PoolCase& c : kNhwcCases) {
      const Tensor x = seeded_tensor(t, channels_last(c.x), 39, -4, 4);
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      for (bool max : {true, false})
        for (int64_t count_pad : {0, 1}) {
          if (max && count_pad) continue;
          Attributes at = pool_attributes(c);
          if (!max) at.set_int("count_include_pad", count_pad);
          SCOPED_TRACE(std::string(max ? "Max" : "Average") + " count_include_pad " + std::to_string(count_pad));
          const Tensor y = run_on_cuda(make_node(max ? "NhwcMaxPool" : "NhwcAveragePool", 1, 1, at, "com.ember"), 1,
                                       {&x})[0];
          expect_close(y, nhwc_reference_pool(x, y.shape(), c, max, count_pad != 0), max ? 0 : rtol(t),
                       max ? 0 : atol(t));
        }
    }
}

// Max skips NaN (a window of NaNs only gives -inf), as pool_kernel and the CPU
// reference loop do.
TEST(CudaNhwcPool, MaxSkipsNaN) {
  EMBER_REQUIRE_GPU();
  const PoolCase c = pool_case({1, 16, 6, 6}, {2, 2}, {2, 2});
  for (DType t : kFloatTypes) {
    Tensor x = seeded_tensor(DType::Float32, channels_last(c.x), 40);
    float* v = x.data_as<float>();
    for (int64_t i = 0; i < x.numel(); i += 3) v[i] = NAN;
    for (int64_t pixel : {0, 1, 6, 7}) v[pixel * 16] = NAN;  // channel 0 of the first window: NaN only
    const Tensor xt = cast_to(x, t);
    SCOPED_TRACE(dtype_name(t));
    const Tensor y = run_on_cuda(make_node("NhwcMaxPool", 1, 1, pool_attributes(c), "com.ember"), 1, {&xt})[0];
    EXPECT_EQ(element(y, 0), -INFINITY);
    expect_close(y, nhwc_reference_pool(xt, y.shape(), c, true, false), 0, 0);
  }
}

// X and Y a few bytes off 16-byte alignment: the one-channel path, the same bits as the
// vector path on aligned copies.
TEST(CudaNhwcPool, MisalignedPointersGiveTheSameBits) {
  EMBER_REQUIRE_GPU();
  const PoolCase c = pool_case({2, 16, 9, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1});
  const Tensor x = seeded_tensor(DType::Float16, channels_last(c.x), 41);
  cuda::PoolArgs a;
  a.mode = cuda::PoolMode::Average;
  a.channels_last = true;
  a.channels = 16;
  a.planes = 2 * 16;
  a.in[1] = 9, a.in[2] = 7, a.out[1] = 5, a.out[2] = 4;
  a.kernel[1] = a.kernel[2] = 3;
  a.stride[1] = a.stride[2] = 2;
  a.pad_begin[1] = a.pad_begin[2] = a.pad_end[1] = a.pad_end[2] = 1;
  const size_t y_bytes = 2 * 5 * 4 * 16 * 2, room = x.nbytes() + y_bytes + 64;
  cuda::StreamContext* context = cuda::create_stream_context(0);
  char* buffer = nullptr;
  cuda::check(cudaMalloc(&buffer, 2 * room), "cudaMalloc");
  Tensor ys[2] = {Tensor(DType::Float16, {2, 5, 4, 16}), Tensor(DType::Float16, {2, 5, 4, 16})};
  for (int shifted : {0, 1}) {
    char* base = buffer + shifted * room;
    a.x = base + 2 * shifted;
    a.y = base + x.nbytes() + 32 + 6 * shifted;
    cuda::check(cudaMemcpy(const_cast<void*>(a.x), x.data(), x.nbytes(), cudaMemcpyHostToDevice), "upload");
    cuda::launch_pool(cuda::PoolType::Float16, a, context->stream);
    cuda::check(cudaMemcpyAsync(ys[shifted].data(), a.y, y_bytes, cudaMemcpyDeviceToHost, context->stream),
                "download");
  }
  cuda::check(cudaStreamSynchronize(context->stream), "pooling");
  cudaFree(buffer);
  cuda::destroy_stream_context(context);
  EXPECT_EQ(std::memcmp(ys[0].data(), ys[1].data(), y_bytes), 0);
  expect_close(ys[1], nhwc_reference_pool(x, ys[1].shape(), c, false, false), kRtol16, kAtol16);
}

TEST(CudaNhwcPool, GlobalAverageAndMaxMatchTheCpu) {
  EMBER_REQUIRE_GPU();
  const Shape shapes[] = {{2, 7, 9, 3}, {1, 40, 40, 4}, {2, 7, 7, 2048}, {1, 1, 1, 1000}};
  for (DType t : kFloatTypes)
    for (const Shape& s : shapes)
      for (const char* op : {"NhwcGlobalAveragePool", "NhwcGlobalMaxPool"}) {
        const Tensor x = seeded_tensor(t, s, 38);
        SCOPED_TRACE(std::string(op) + " " + shape_to_string(s) + " " + dtype_name(t));
        expect_cuda_matches_cpu(make_node(op, 1, 1, {}, "com.ember"), 1, {&x}, rtol(t) * 10, atol(t));
      }
}

TEST(CudaPool, RegisteredForEveryOp) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"})
    EXPECT_TRUE(has_cuda_kernel("", op, 22)) << op;
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool", "NhwcGlobalAveragePool", "NhwcGlobalMaxPool"})
    EXPECT_TRUE(has_cuda_kernel("com.ember", op, 1)) << op;
}

TEST(CudaPool, DeclinesWithAReason) {
  Attributes at;
  at.set_ints("kernel_shape", {2, 2});
  const std::string indices =
      cuda_decline_reason(make_node("MaxPool", 1, 2, at), 12, {{DType::Float32, {1, 1, 4, 4}}});
  EXPECT_NE(indices.find("Indices"), std::string::npos) << indices;
  const std::string int_avg =
      cuda_decline_reason(make_node("AveragePool", 1, 1, at), 11, {{DType::Int8, {1, 1, 4, 4}}});
  EXPECT_NE(int_avg.find("int8"), std::string::npos) << int_avg;
  const std::string f64 = cuda_decline_reason(make_node("GlobalMaxPool", 1), 1, {{DType::Float64, {1, 1, 4, 4}}});
  EXPECT_NE(f64.find("float64"), std::string::npos) << f64;
}

}  // namespace
}  // namespace ember::test
