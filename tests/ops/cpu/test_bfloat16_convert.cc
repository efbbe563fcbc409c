// narrow_to_bfloat16 (the bf16 operands' conversion) against the scalar reference
// float_to_bfloat16_bits: bit for bit on random values of every magnitude, on the
// rounding ties, and on the special values, at lengths that leave a scalar tail.
#include "ops/cpu/bfloat16_convert.h"
#include "ops/cpu/dnnl_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ember {
namespace {

void expect_bitwise(const std::vector<float>& x) {
  std::vector<uint16_t> got(x.size(), 0xdead);
  narrow_to_bfloat16(x.data(), got.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(got[i], float_to_bfloat16_bits(x[i])) << "element " << i << " of " << x.size() << ": " << x[i]
                                                     << " (bits " << std::hex << std::bit_cast<uint32_t>(x[i]) << ")";
}

TEST(BFloat16Convert, RandomBitPatternsOfEveryMagnitudeMatchTheScalarRounding) {
  std::mt19937 rng(5);
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{100003}}) {
    std::vector<float> x(n);
    for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // NaNs, denormals, infinities too
    expect_bitwise(x);
  }
}

TEST(BFloat16Convert, TiesRoundToEvenAndSpecialValuesKeepTheirMeaning) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::signaling_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
                          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 1.0f, -1.0f};
  // Exactly halfway between two bfloat16 values, with an even and an odd lower neighbour.
  for (uint32_t upper : {0x3f80u, 0x3f81u, 0xbf80u, 0xbf81u, 0x7f7fu}) x.push_back(std::bit_cast<float>(upper << 16 | 0x8000u));
  x.resize(48, 3.14159f);
  expect_bitwise(x);
  std::vector<uint16_t> got(x.size());
  narrow_to_bfloat16(x.data(), got.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(got[5])));  // a signalling NaN stays a NaN
  EXPECT_EQ(bfloat16_bits_to_float(got[7]), inf);           // FLT_MAX rounds up to infinity
}

// What it replaces: oneDNN's float32 -> bfloat16 reorder gives the same bits on every
// normal value, zero and infinity. NaN payloads aside, both give a NaN. Float32
// subnormals oneDNN flushes to zero (vcvtneps2bf16 does) where we keep the rounded
// subnormal; the bf16 products read their operands' subnormals as zero either way
// (vdpbf16ps), so the results are the same.
TEST(BFloat16Convert, SameBitsAsOneDnnsReorder) {
  std::mt19937 rng(6);
  const int64_t n = 4099;
  std::vector<float> x(n);
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  std::vector<uint16_t> ours(n), theirs(n);
  narrow_to_bfloat16(x.data(), ours.data(), n);
  using dnnl::memory;
  const memory::desc from({n}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc to({n}, memory::data_type::bf16, memory::format_tag::a);
  memory src(from, dnnl_engine(), x.data()), dst(to, dnnl_engine(), theirs.data());
  dnnl::stream stream(dnnl_engine());
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[static_cast<size_t>(i)];
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(theirs[static_cast<size_t>(i)])));
      continue;
    }
    if (std::fpclassify(v) == FP_SUBNORMAL) {  // flushed (AVX512_BF16) or rounded as ours
      const uint16_t t = theirs[static_cast<size_t>(i)];
      EXPECT_TRUE(bfloat16_bits_to_float(t) == 0.0f || t == ours[static_cast<size_t>(i)]) << v;
      continue;
    }
    ASSERT_EQ(ours[static_cast<size_t>(i)], theirs[static_cast<size_t>(i)]) << "element " << i << ": " << v;
  }
}

}  // namespace
}  // namespace ember
