// ImageDecoder (opset 20): a 1-D uint8 tensor of encoded bytes -> uint8 [H, W, C]. H and
// W are in the data, so the node always runs eagerly (DataDependentShape).
#include "graph/schema.h"

namespace ember {

namespace {

std::vector<TensorType> infer_image_decoder(const InferContext& ctx) {
  const TensorType& encoded = ctx.input(0);
  if (encoded.dtype != DType::UInt8 || encoded.shape.size() != 1)
    ctx.fail(std::string("encoded_stream must be a 1-D uint8 tensor, got ") + dtype_name(encoded.dtype) + " " +
             shape_to_string(encoded.shape));
  const std::string format = ctx.node.attributes.get_string_or("pixel_format", "RGB");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    ctx.fail("pixel_format must be \"RGB\", \"BGR\" or \"Grayscale\", got \"" + format + "\"");
  throw DataDependentShape(ctx.node.label() + ": the image's size is in its encoded bytes");
}

}  // namespace

EMBER_SCHEMA("ImageDecoder", "", infer_image_decoder);

}  // namespace ember
