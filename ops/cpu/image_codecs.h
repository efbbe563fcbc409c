// ImageDecoder's codecs: each image format decoded to 8-bit RGB by the library Debian
// ships for it (libjpeg-turbo, libpng, libtiff, libwebp, OpenJPEG; stb_image for BMP and
// PNM). A library missing at build time leaves its format refused, by name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ember {

enum class ImageFormat { Unknown, Jpeg, Png, Tiff, Webp, Jpeg2000, Bmp, Pnm };

// The format the first bytes announce (Unknown when none).
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);
const char* image_format_name(ImageFormat format);

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major, R G B
};

// Images above this many pixels are refused before anything is allocated: a few bytes
// of header can claim any size.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Decodes `bytes` of `format` to RGB. Raises ember::Error with a message naming the
// format and what went wrong (truncated or corrupt data, an unsupported variant, the
// library ember was built without); the caller prefixes the node.
RgbImage decode_image(ImageFormat format, std::span<const uint8_t> bytes);

}  // namespace ember
