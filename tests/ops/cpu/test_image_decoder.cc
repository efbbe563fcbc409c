// ImageDecoder: BMP and PPM images written here from random pixels decode to exactly
// those pixels (RGB, BGR, and Pillow's grey conversion); hostile bytes (garbage,
// truncated files, each format's magic followed by junk) are one ember::Error naming
// the node, never a crash. JPEG, PNG, TIFF, WebP and JPEG 2000 decoding is checked
// against Pillow's outputs by the ONNX conformance cases.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <random>

namespace ember::test {
namespace {

std::vector<uint8_t> random_rgb(int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> rgb(h * w * 3);
  for (auto& v : rgb) v = static_cast<uint8_t>(rng() & 0xFF);
  return rgb;
}

void put_le(std::vector<uint8_t>& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A 24-bit bottom-up BMP (rows of B G R padded to 4 bytes).
std::vector<uint8_t> bmp_of(const std::vector<uint8_t>& rgb, int64_t h, int64_t w) {
  const uint32_t row = static_cast<uint32_t>((w * 3 + 3) / 4 * 4);
  std::vector<uint8_t> out = {'B', 'M'};
  put_le(out, 54 + row * h, 4);
  put_le(out, 0, 4);
  put_le(out, 54, 4);
  put_le(out, 40, 4);
  put_le(out, static_cast<uint32_t>(w), 4);
  put_le(out, static_cast<uint32_t>(h), 4);
  put_le(out, 1, 2);
  put_le(out, 24, 2);
  for (int i = 0; i < 6; ++i) put_le(out, 0, 4);
  for (int64_t y = h - 1; y >= 0; --y) {
    for (int64_t x = 0; x < w; ++x)
      for (int c = 2; c >= 0; --c) out.push_back(rgb[(y * w + x) * 3 + c]);
    for (uint32_t p = static_cast<uint32_t>(w * 3); p < row; ++p) out.push_back(0);
  }
  return out;
}

std::vector<uint8_t> ppm_of(const std::vector<uint8_t>& rgb, int64_t h, int64_t w) {
  const std::string header = "P6\n" + std::to_string(w) + " " + std::to_string(h) + "\n255\n";
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), rgb.begin(), rgb.end());
  return out;
}

std::vector<Tensor> decode(const std::vector<uint8_t>& bytes, const std::string& pixel_format = "RGB") {
  Attributes a;
  a.set_string("pixel_format", pixel_format);
  const Node node = make_node("ImageDecoder", 1, a);
  Tensor encoded(DType::UInt8, {static_cast<int64_t>(bytes.size())});
  std::copy(bytes.begin(), bytes.end(), encoded.data_as<uint8_t>());
  return evaluate_node(node, 20, {&encoded});
}

TEST(ImageDecoder, BmpAndPpmDecodeToTheirPixelsInEveryPixelFormat) {
  const int64_t h = 7, w = 5;  // odd width: BMP rows carry padding
  const std::vector<uint8_t> rgb = random_rgb(h, w, 4);
  for (const auto& bytes : {bmp_of(rgb, h, w), ppm_of(rgb, h, w)}) {
    const Tensor y = decode(bytes).at(0);
    ASSERT_EQ(y.dtype(), DType::UInt8);
    ASSERT_EQ(y.shape(), (Shape{h, w, 3}));
    EXPECT_TRUE(std::equal(rgb.begin(), rgb.end(), y.data_as<uint8_t>()));
    const Tensor bgr = decode(bytes, "BGR").at(0);
    const Tensor grey = decode(bytes, "Grayscale").at(0);
    ASSERT_EQ(grey.shape(), (Shape{h, w, 1}));
    for (int64_t i = 0; i < h * w; ++i) {
      const uint8_t r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
      EXPECT_EQ(bgr.data_as<uint8_t>()[3 * i], b);
      EXPECT_EQ(bgr.data_as<uint8_t>()[3 * i + 2], r);
      // Pillow's convert("L"): exact integer arithmetic, so an exact comparison.
      EXPECT_EQ(grey.data_as<uint8_t>()[i], (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
    }
  }
}

TEST(ImageDecoder, HostileBytesAreOneErrorNamingTheNode) {
  const std::vector<uint8_t> rgb = random_rgb(6, 6, 9);
  const std::vector<uint8_t> bmp = bmp_of(rgb, 6, 6), ppm = ppm_of(rgb, 6, 6);
  std::vector<std::vector<uint8_t>> hostile = {
      {},                                                     // empty
      {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'},  // no known magic
      std::vector<uint8_t>(bmp.begin(), bmp.begin() + 60),     // truncated pixels
      std::vector<uint8_t>(ppm.begin(), ppm.begin() + 20),
      std::vector<uint8_t>(bmp.begin(), bmp.begin() + 10),     // truncated header
  };
  // Each format's magic followed by junk.
  std::mt19937 rng(5);
  const std::vector<std::vector<uint8_t>> magics = {
      {0xFF, 0xD8, 0xFF, 0xE0},
      {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A},
      {'I', 'I', 0x2A, 0x00},
      {'M', 'M', 0x00, 0x2A},
      {'R', 'I', 'F', 'F', 0x20, 0, 0, 0, 'W', 'E', 'B', 'P'},
      {0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A},
      {0xFF, 0x4F, 0xFF, 0x51},
      {'B', 'M'},
      {'P', '6'},
      {'P', '3'}};
  for (const auto& magic : magics) {
    std::vector<uint8_t> bytes = magic;
    for (int i = 0; i < 200; ++i) bytes.push_back(static_cast<uint8_t>(rng() & 0xFF));
    hostile.push_back(bytes);
  }
  for (size_t i = 0; i < hostile.size(); ++i) {
    try {
      decode(hostile[i]);
      ADD_FAILURE() << "case " << i << " decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ImageDecoder 'n_ImageDecoder'"), std::string::npos) << i << ": " << e.what();
    }
  }
}

TEST(ImageDecoder, AnEncodedStreamThatIsNotUint8IsRefused) {
  const Node node = make_node("ImageDecoder", 1);
  Tensor encoded(DType::Float32, {4});
  for (int i = 0; i < 4; ++i) encoded.data_as<float>()[i] = 1.f + i;
  EXPECT_THROW(evaluate_node(node, 20, {&encoded}), Error);
}

}  // namespace
}  // namespace ember::test
