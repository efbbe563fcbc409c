// The image libraries behind ImageDecoder. Each decoder reads from memory, reports
// failure through ember::Error (never a longjmp past C++ frames, never a message on
// stderr) and checks the image size before allocating. EMBER_HAVE_<CODEC> comes from
// CMake, which says at configure time which libraries it did not find.
#include "ops/cpu/image_codecs.h"

#include <ember/core/error.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#if EMBER_HAVE_JPEG
#include <jpeglib.h>
#endif
#if EMBER_HAVE_PNG
#include <png.h>
#endif
#if EMBER_HAVE_TIFF
#include <tiffio.h>
#endif
#if EMBER_HAVE_WEBP
#include <webp/decode.h>
#endif
#if EMBER_HAVE_OPENJPEG
#include <openjpeg.h>
#endif
#if EMBER_HAVE_STB
#include <stb/stb_image.h>
#endif

namespace ember {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::initializer_list<uint8_t> magic, size_t at = 0) {
  if (bytes.size() < at + magic.size()) return false;
  return std::equal(magic.begin(), magic.end(), bytes.begin() + at);
}

[[noreturn]] void fail(ImageFormat format, const std::string& what) {
  throw Error(std::string(image_format_name(format)) + " data: " + what);
}

[[maybe_unused]] [[noreturn]] void missing(ImageFormat format, const char* library) {
  throw Error(std::string(image_format_name(format)) + " images need " + library +
              ", which this build of ember was made without (scripts/setup.sh installs it)");
}

RgbImage sized(ImageFormat format, int64_t height, int64_t width) {
  if (height <= 0 || width <= 0) fail(format, "the image is empty (" + std::to_string(height) + " x " + std::to_string(width) + ")");
  if (height > kMaxImagePixels / width)
    fail(format, std::to_string(height) + " x " + std::to_string(width) + " pixels is more than ember decodes (2^28)");
  RgbImage image;
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height * width * 3));
  return image;
}

#if EMBER_HAVE_JPEG
// libjpeg reports errors through error_exit, which must not return: it longjmps back to
// decode_jpeg, whose frame holds only trivially destructible state across the jump.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}  // warnings (a corrupt but readable file) are not printed

// Decodes into `image` (sized once the header is read); returns "" or the error.
std::string jpeg_decode_into(std::span<const uint8_t> bytes, RgbImage& image) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_quiet;
  err.message[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return err.message;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return "CMYK JPEG is not supported";
  }
  cinfo.out_color_space = JCS_RGB;  // libjpeg's defaults otherwise: islow DCT, fancy upsampling, as Pillow
  const int64_t height = cinfo.image_height, width = cinfo.image_width;
  if (height <= 0 || width <= 0 || height > kMaxImagePixels / width) {
    jpeg_destroy_decompress(&cinfo);
    return std::to_string(height) + " x " + std::to_string(width) + " pixels is not a size ember decodes";
  }
  image.height = height;
  image.width = width;
  image.pixels.resize(static_cast<size_t>(height * width * 3));
  jpeg_start_decompress(&cinfo);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return "";
}
#endif

RgbImage decode_jpeg(std::span<const uint8_t> bytes) {
#if EMBER_HAVE_JPEG
  RgbImage image;
  const std::string error = jpeg_decode_into(bytes, image);
  if (!error.empty()) fail(ImageFormat::Jpeg, error);
  return image;
#else
  missing(ImageFormat::Jpeg, "libjpeg (libjpeg62-turbo-dev)");
#endif
}

RgbImage decode_png(std::span<const uint8_t> bytes) {
#if EMBER_HAVE_PNG
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) fail(ImageFormat::Png, png.message);
  // Palettes, grey, 16 bits and alpha all become 8-bit RGB (alpha composited on black).
  png.format = PNG_FORMAT_RGB;
  RgbImage image;
  try {
    image = sized(ImageFormat::Png, png.height, png.width);
  } catch (...) {
    png_image_free(&png);
    throw;
  }
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    fail(ImageFormat::Png, message);
  }
  return image;
#else
  missing(ImageFormat::Png, "libpng (libpng-dev)");
#endif
}

#if EMBER_HAVE_TIFF
// libtiff reads through these callbacks from a span; errors collect in `error`.
struct TiffSource {
  std::span<const uint8_t> bytes;
  toff_t at = 0;
  std::string error;
};

tsize_t tiff_read(thandle_t h, tdata_t buf, tsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  const toff_t left = s->at < s->bytes.size() ? s->bytes.size() - s->at : 0;
  const tsize_t count = static_cast<tsize_t>(std::min<toff_t>(left, static_cast<toff_t>(n)));
  if (count > 0) std::memcpy(buf, s->bytes.data() + s->at, static_cast<size_t>(count));
  s->at += count;
  return count;
}
tsize_t tiff_write(thandle_t, tdata_t, tsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  const toff_t base = whence == SEEK_CUR ? s->at : whence == SEEK_END ? s->bytes.size() : 0;
  s->at = base + off;
  return s->at;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->bytes.size(); }
int tiff_error(TIFF*, void* h, const char* module, const char* fmt, va_list args) {
  auto* s = static_cast<TiffSource*>(h);
  char line[512];
  std::vsnprintf(line, sizeof line, fmt, args);
  if (s->error.empty()) s->error = line;
  return 1;
}
int tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }
#endif

RgbImage decode_tiff(std::span<const uint8_t> bytes) {
#if EMBER_HAVE_TIFF
  TiffSource source{bytes, 0, {}};
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), tiff_error, &source);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), tiff_warning, &source);
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(
      TIFFClientOpenExt("memory", "rm", &source, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, nullptr,
                        nullptr, options.get()),
      TIFFClose);
  if (!tif) fail(ImageFormat::Tiff, source.error.empty() ? "not a readable TIFF" : source.error);
  uint32_t width = 0, height = 0;
  TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height);
  RgbImage image = sized(ImageFormat::Tiff, height, width);
  // libtiff's RGBA interface reads every photometric / bit depth / compression it knows.
  std::vector<uint32_t> rgba(static_cast<size_t>(image.height * image.width));
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, rgba.data(), ORIENTATION_TOPLEFT, 0))
    fail(ImageFormat::Tiff, source.error.empty() ? "the pixels could not be read" : source.error);
  for (size_t i = 0; i < rgba.size(); ++i) {
    image.pixels[3 * i] = static_cast<uint8_t>(TIFFGetR(rgba[i]));
    image.pixels[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(rgba[i]));
    image.pixels[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(rgba[i]));
  }
  return image;
#else
  missing(ImageFormat::Tiff, "libtiff (libtiff-dev)");
#endif
}

RgbImage decode_webp(std::span<const uint8_t> bytes) {
#if EMBER_HAVE_WEBP
  int width = 0, height = 0;
  if (!WebPGetInfo(bytes.data(), bytes.size(), &width, &height)) fail(ImageFormat::Webp, "not a readable WebP header");
  RgbImage image = sized(ImageFormat::Webp, height, width);
  if (!WebPDecodeRGBInto(bytes.data(), bytes.size(), image.pixels.data(), image.pixels.size(), width * 3))
    fail(ImageFormat::Webp, "the data is truncated or corrupt");
  return image;
#else
  missing(ImageFormat::Webp, "libwebp (libwebp-dev)");
#endif
}

#if EMBER_HAVE_OPENJPEG
struct OpjSource {
  std::span<const uint8_t> bytes;
  OPJ_OFF_T at = 0;
};
OPJ_SIZE_T opj_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<OpjSource*>(user);
  const OPJ_OFF_T left = static_cast<OPJ_OFF_T>(s->bytes.size()) - s->at;
  if (left <= 0) return static_cast<OPJ_SIZE_T>(-1);
  const OPJ_SIZE_T count = std::min<OPJ_SIZE_T>(n, static_cast<OPJ_SIZE_T>(left));
  std::memcpy(buf, s->bytes.data() + s->at, count);
  s->at += static_cast<OPJ_OFF_T>(count);
  return count;
}
OPJ_OFF_T opj_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<OpjSource*>(user);
  s->at += n;
  return n;
}
OPJ_BOOL opj_seek(OPJ_OFF_T at, void* user) {
  auto* s = static_cast<OpjSource*>(user);
  if (at < 0 || at > static_cast<OPJ_OFF_T>(s->bytes.size())) return OPJ_FALSE;
  s->at = at;
  return OPJ_TRUE;
}
void opj_message(const char* msg, void* user) {
  auto* error = static_cast<std::string*>(user);
  if (error->empty()) error->assign(msg, strcspn(msg, "\n"));
}
void opj_quiet(const char*, void*) {}

// One component's sample at `i` as 8 bits (a wider precision scaled down).
uint8_t opj_sample(const opj_image_comp_t& c, size_t i) {
  int v = c.data[i] + (c.sgnd ? 1 << (c.prec - 1) : 0);
  if (c.prec > 8) v >>= c.prec - 8;
  else if (c.prec < 8) v <<= 8 - c.prec;
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}
#endif

RgbImage decode_jpeg2000(std::span<const uint8_t> bytes) {
#if EMBER_HAVE_OPENJPEG
  // A JP2 file (boxes) or a bare J2K codestream.
  const bool codestream = starts_with(bytes, {0xFF, 0x4F, 0xFF, 0x51});
  std::unique_ptr<opj_codec_t, void (*)(opj_codec_t*)> codec(opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2),
                                                              opj_destroy_codec);
  std::string error;
  opj_set_error_handler(codec.get(), opj_message, &error);
  opj_set_warning_handler(codec.get(), opj_quiet, nullptr);
  opj_set_info_handler(codec.get(), opj_quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec.get(), &params)) fail(ImageFormat::Jpeg2000, "the decoder could not be set up");
  OpjSource source{bytes, 0};
  std::unique_ptr<opj_stream_t, void (*)(opj_stream_t*)> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE),
                                                                 opj_stream_destroy);
  opj_stream_set_user_data(stream.get(), &source, nullptr);
  opj_stream_set_user_data_length(stream.get(), bytes.size());
  opj_stream_set_read_function(stream.get(), opj_read);
  opj_stream_set_skip_function(stream.get(), opj_skip);
  opj_stream_set_seek_function(stream.get(), opj_seek);
  opj_image_t* raw = nullptr;
  if (!opj_read_header(stream.get(), codec.get(), &raw))
    fail(ImageFormat::Jpeg2000, error.empty() ? "not a readable header" : error);
  std::unique_ptr<opj_image_t, void (*)(opj_image_t*)> img(raw, opj_image_destroy);
  const int64_t width = static_cast<int64_t>(img->x1) - img->x0, height = static_cast<int64_t>(img->y1) - img->y0;
  RgbImage image = sized(ImageFormat::Jpeg2000, height, width);
  if (!opj_decode(codec.get(), stream.get(), img.get()) || !opj_end_decompress(codec.get(), stream.get()))
    fail(ImageFormat::Jpeg2000, error.empty() ? "the data is truncated or corrupt" : error);
  const uint32_t n = img->numcomps;
  if (n != 1 && n != 3 && n != 4) fail(ImageFormat::Jpeg2000, std::to_string(n) + " components are not supported (1, 3 or 4)");
  if (img->color_space == OPJ_CLRSPC_SYCC || img->color_space == OPJ_CLRSPC_CMYK || img->color_space == OPJ_CLRSPC_EYCC)
    fail(ImageFormat::Jpeg2000, "only RGB and greyscale images are supported");
  for (uint32_t c = 0; c < n; ++c) {
    const opj_image_comp_t& comp = img->comps[c];
    if (!comp.data || comp.w != static_cast<uint32_t>(width) || comp.h != static_cast<uint32_t>(height) ||
        comp.prec < 1 || comp.prec > 16)
      fail(ImageFormat::Jpeg2000, "subsampled components or precisions above 16 bits are not supported");
  }
  const size_t count = static_cast<size_t>(height * width);
  for (size_t i = 0; i < count; ++i)
    for (int c = 0; c < 3; ++c) image.pixels[3 * i + c] = opj_sample(img->comps[n >= 3 ? c : 0], i);
  return image;
#else
  missing(ImageFormat::Jpeg2000, "OpenJPEG (libopenjp2-7-dev)");
#endif
}

// stb_image reads past the end of the data as zeros: a truncated BMP or PNM would
// decode to a black tail. Their uncompressed pixel data has a size the header gives,
// checked here first ("" when the bytes hold it, else what is missing).
[[maybe_unused]] std::string missing_pixel_bytes(ImageFormat format, std::span<const uint8_t> bytes) {
  auto need = [&](uint64_t n) {
    return n <= bytes.size() ? std::string()
                             : "truncated: " + std::to_string(n) + " bytes expected, " + std::to_string(bytes.size()) + " given";
  };
  if (format == ImageFormat::Bmp) {
    if (bytes.size() < 34) return need(34);
    auto u32 = [&](size_t at) { return uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 | uint32_t(bytes[at + 3]) << 24; };
    const uint32_t offset = u32(10), compression = u32(30), bpp = uint32_t(bytes[28]) | uint32_t(bytes[29]) << 8;
    const int64_t width = static_cast<int32_t>(u32(18)), height = static_cast<int32_t>(u32(22));
    if (compression != 0 && compression != 3) return "";  // run-length data: stb_image checks it
    if (width <= 0 || bpp == 0 || bpp > 32) return "";  // stb_image refuses these itself
    const uint64_t row = (uint64_t(bpp) * uint64_t(width) + 31) / 32 * 4;
    return need(uint64_t(offset) + row * uint64_t(height < 0 ? -height : height));
  }
  // PNM: "P5" or "P6", then width, height and maxval as text (with # comments), one
  // whitespace byte, then the samples (2 bytes each when maxval > 255).
  if (bytes.size() < 2 || (bytes[1] != '5' && bytes[1] != '6')) return "only binary PGM and PPM (P5, P6) are supported";
  size_t at = 2;
  uint64_t fields[3] = {0, 0, 0};
  for (uint64_t& field : fields) {
    while (at < bytes.size() && (std::isspace(bytes[at]) || bytes[at] == '#'))
      if (bytes[at] == '#')
        while (at < bytes.size() && bytes[at] != '\n') ++at;
      else
        ++at;
    if (at >= bytes.size() || !std::isdigit(bytes[at])) return "the header is truncated or not numeric";
    while (at < bytes.size() && std::isdigit(bytes[at]) && field < (uint64_t{1} << 32)) field = field * 10 + (bytes[at++] - '0');
  }
  if (fields[0] > uint64_t(kMaxImagePixels) || fields[1] > uint64_t(kMaxImagePixels))
    return std::to_string(fields[1]) + " x " + std::to_string(fields[0]) + " pixels is more than ember decodes (2^28)";
  const uint64_t samples = fields[0] * fields[1] * (bytes[1] == '6' ? 3 : 1) * (fields[2] > 255 ? 2 : 1);
  return need(at + 1 + samples);
}

// BMP and binary PNM (P5, P6): stb_image, which Debian ships as a library; none of the
// codec libraries above reads either.
RgbImage decode_with_stb(ImageFormat format, std::span<const uint8_t> bytes) {
#if EMBER_HAVE_STB
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) fail(format, "more than 2 GiB of data");
  if (const std::string missing = missing_pixel_bytes(format, bytes); !missing.empty()) fail(format, missing);
  const int size = static_cast<int>(bytes.size());
  int width = 0, height = 0, channels = 0;
  if (!stbi_info_from_memory(bytes.data(), size, &width, &height, &channels)) fail(format, stbi_failure_reason());
  RgbImage image = sized(format, height, width);
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(bytes.data(), size, &width, &height, &channels, 3),
                                                   stbi_image_free);
  if (!pixels) fail(format, stbi_failure_reason());
  std::memcpy(image.pixels.data(), pixels.get(), image.pixels.size());
  return image;
#else
  missing(format, "stb_image (libstb-dev)");
#endif
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) return ImageFormat::Jpeg;
  if (starts_with(bytes, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A})) return ImageFormat::Png;
  if (starts_with(bytes, {'I', 'I', 0x2A, 0x00}) || starts_with(bytes, {'M', 'M', 0x00, 0x2A})) return ImageFormat::Tiff;
  if (starts_with(bytes, {'R', 'I', 'F', 'F'}) && starts_with(bytes, {'W', 'E', 'B', 'P'}, 8)) return ImageFormat::Webp;
  if (starts_with(bytes, {0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}) ||
      starts_with(bytes, {0xFF, 0x4F, 0xFF, 0x51}))
    return ImageFormat::Jpeg2000;
  if (starts_with(bytes, {'B', 'M'})) return ImageFormat::Bmp;
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') return ImageFormat::Pnm;
  return ImageFormat::Unknown;
}

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Tiff: return "TIFF";
    case ImageFormat::Webp: return "WebP";
    case ImageFormat::Jpeg2000: return "JPEG 2000";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Pnm: return "PNM";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

RgbImage decode_image(ImageFormat format, std::span<const uint8_t> bytes) {
  switch (format) {
    case ImageFormat::Jpeg: return decode_jpeg(bytes);
    case ImageFormat::Png: return decode_png(bytes);
    case ImageFormat::Tiff: return decode_tiff(bytes);
    case ImageFormat::Webp: return decode_webp(bytes);
    case ImageFormat::Jpeg2000: return decode_jpeg2000(bytes);
    case ImageFormat::Bmp:
    case ImageFormat::Pnm: return decode_with_stb(format, bytes);
    case ImageFormat::Unknown: break;
  }
  throw Error("the data is not an image format ember knows");
}

}  // namespace ember
