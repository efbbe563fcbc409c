// ImageDecoder (opset 20): encoded image bytes -> uint8 [H, W, 3] (RGB or BGR) or
// [H, W, 1] (Grayscale). The format is sniffed from the first bytes and decoded by its
// library (ops/cpu/image_codecs.h). The output's size is in the data, so the node runs
// eagerly and allocates its output.
#include "ops/cpu/image_codecs.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <utility>

namespace ember {

namespace {

class ImageDecoderKernel final : public Kernel {
 public:
  explicit ImageDecoderKernel(const KernelInit& init)
      : node_(init.node), pixel_format_(init.node.attributes.get_string_or("pixel_format", "RGB")) {}

  void run(const RunArgs& args) const override {
    const Tensor& encoded = *args.inputs[0];
    const std::span<const uint8_t> bytes(encoded.data_as<uint8_t>(), static_cast<size_t>(encoded.numel()));
    const ImageFormat format = sniff_image_format(bytes);
    if (format == ImageFormat::Unknown)
      throw Error(node_.label() + ": the input is not an image ember can decode (expected JPEG, PNG, TIFF, WebP, "
                  "JPEG 2000, BMP or PNM data; the first bytes match none of them)");
    RgbImage image;
    try {
      image = decode_image(format, bytes);
    } catch (const Error& e) {
      throw Error(node_.label() + ": " + e.what());
    }
    if (args.outputs[0]) *args.outputs[0] = to_pixel_format(image);
  }

 private:
  Tensor to_pixel_format(const RgbImage& image) const {
    const int64_t count = image.height * image.width;
    const uint8_t* rgb = image.pixels.data();
    if (pixel_format_ == "Grayscale") {
      Tensor out(DType::UInt8, {image.height, image.width, 1});
      uint8_t* y = out.data_as<uint8_t>();
      // ITU-R 601-2 luma in 16-bit fixed point, rounded: Pillow's convert("L"), which
      // the ONNX reference uses (a grey source gives back its own values exactly).
      for (int64_t i = 0; i < count; ++i)
        y[i] = static_cast<uint8_t>((rgb[3 * i] * 19595u + rgb[3 * i + 1] * 38470u + rgb[3 * i + 2] * 7471u + 0x8000u) >> 16);
      return out;
    }
    Tensor out(DType::UInt8, {image.height, image.width, 3});
    uint8_t* y = out.data_as<uint8_t>();
    const bool bgr = pixel_format_ == "BGR";
    for (int64_t i = 0; i < count; ++i) {
      y[3 * i] = rgb[3 * i + (bgr ? 2 : 0)];
      y[3 * i + 1] = rgb[3 * i + 1];
      y[3 * i + 2] = rgb[3 * i + (bgr ? 0 : 2)];
    }
    return out;
  }

  const Node& node_;
  std::string pixel_format_;
};

std::unique_ptr<Kernel> make_image_decoder(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != DType::UInt8 || init.inputs[0].shape.size() != 1) {
    *why_not = "encoded_stream must be a 1-D uint8 tensor";
    return nullptr;
  }
  return std::make_unique<ImageDecoderKernel>(init);
}

}  // namespace

EMBER_KERNEL_FLAGS("ImageDecoder", "", 20, kMaxOpset, DeviceKind::Cpu, make_image_decoder,
                   KernelFlags{.sizes_own_outputs = true});

}  // namespace ember
