#include "graph/schemas/window.h"

#include <ember/core/error.h>

#include <string>

namespace ember {

namespace {

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw Error(node.label() + ": " + message);
}

Shape ints_or_ones(const Node& node, const char* name, size_t rank, int64_t fallback) {
  Shape v = node.attributes.get_ints_or(name, Shape(rank, fallback));
  if (v.size() != rank)
    fail(node, std::string(name) + " has " + std::to_string(v.size()) + " values, expected " +
                   std::to_string(rank));
  for (int64_t x : v)
    if (x < (fallback == 0 ? 0 : 1)) fail(node, std::string(name) + " has an invalid value " + std::to_string(x));
  return v;
}

// Common attributes; pads are read only where auto_pad is NOTSET.
WindowGeometry read_window(const Node& node, const Shape& kernel, const std::string& auto_pad) {
  const size_t rank = kernel.size();
  WindowGeometry g;
  g.kernel = kernel;
  for (int64_t k : kernel)
    if (k < 1) fail(node, "kernel_shape has an invalid value " + std::to_string(k));
  g.strides = ints_or_ones(node, "strides", rank, 1);
  g.dilations = ints_or_ones(node, "dilations", rank, 1);
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  if (auto_pad == "NOTSET") {
    const Shape pads = ints_or_ones(node, "pads", 2 * rank, 0);
    g.pads_begin.assign(pads.begin(), pads.begin() + rank);
    g.pads_end.assign(pads.begin() + rank, pads.end());
  } else if (auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    fail(node, "auto_pad '" + auto_pad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  return g;
}

// Splits a total padding the way ONNX's SAME_UPPER (extra at the end) or SAME_LOWER
// (extra at the start) does.
void split_padding(int64_t total, bool upper, int64_t& begin, int64_t& end) {
  const int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2)
  const int64_t large = total - small;
  begin = upper ? small : large;
  end = upper ? large : small;
}

}  // namespace

Shape conv_kernel_shape(const Node& node, const Shape& w_shape) {
  if (w_shape.size() < 3) fail(node, "W must have rank 3 or more, got " + shape_to_string(w_shape));
  const Shape from_w(w_shape.begin() + 2, w_shape.end());
  const Shape kernel = node.attributes.get_ints_or("kernel_shape", from_w);
  if (kernel != from_w)
    fail(node, "kernel_shape " + shape_to_string(kernel) + " does not match W " + shape_to_string(w_shape));
  return kernel;
}

WindowGeometry forward_window(const Node& node, const Shape& spatial_in, const Shape& kernel,
                              bool ceil_mode) {
  if (kernel.size() != spatial_in.size())
    fail(node, "kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
                   std::to_string(spatial_in.size()));
  const std::string auto_pad = node.attributes.get_string_or("auto_pad", "NOTSET");
  WindowGeometry g = read_window(node, kernel, auto_pad);
  g.out.resize(kernel.size());
  for (size_t i = 0; i < kernel.size(); ++i) {
    const int64_t in = spatial_in[i], s = g.strides[i], dk = (kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + dk - in);
      split_padding(total, auto_pad == "SAME_UPPER", g.pads_begin[i], g.pads_end[i]);
      continue;
    }
    const int64_t span = in + g.pads_begin[i] + g.pads_end[i] - dk;
    if (span < 0)
      fail(node, "the window (" + std::to_string(dk) + ") is larger than the padded input (" +
                     std::to_string(in + g.pads_begin[i] + g.pads_end[i]) + ")");
    g.out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // ceil_mode never starts a window in the end padding.
    if (ceil_mode && (g.out[i] - 1) * s >= in + g.pads_begin[i]) --g.out[i];
  }
  return g;
}

TransposedWindow transposed_window(const Node& node, const Shape& spatial_in, const Shape& kernel) {
  const size_t rank = kernel.size();
  if (rank != spatial_in.size())
    fail(node, "W has " + std::to_string(rank) + " spatial dims, X has " + std::to_string(spatial_in.size()));
  const std::string auto_pad = node.attributes.get_string_or("auto_pad", "NOTSET");
  TransposedWindow t{read_window(node, kernel, auto_pad),
                     ints_or_ones(node, "output_padding", rank, 0)};
  WindowGeometry& g = t.window;
  Shape wanted = node.attributes.get_ints_or("output_shape", {});
  if (wanted.size() > rank) wanted.erase(wanted.begin(), wanted.end() - rank);  // N, C given too
  if (!wanted.empty() && wanted.size() != rank)
    fail(node, "output_shape " + shape_to_string(wanted) + " does not fit " + std::to_string(rank) + " spatial dims");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (wanted.empty() && same)
    for (size_t i = 0; i < rank; ++i) wanted.push_back(spatial_in[i] * g.strides[i]);
  g.out.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dk = (kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t full = g.strides[i] * (spatial_in[i] - 1) + t.output_padding[i] + dk;
    if (!wanted.empty()) {
      // An explicit output shape overrides pads; NOTSET splits like SAME_LOWER (as
      // ONNX Runtime does). A negative total (a larger output) splits with floor
      // division as the ONNX reference does: -1 is 0 at the start, -1 at the end,
      // i.e. extra rows at the end like output_padding.
      const int64_t total = full - wanted[i];
      split_padding(total, auto_pad == "SAME_UPPER", g.pads_begin[i], g.pads_end[i]);
      if (g.pads_begin[i] < 0)
        fail(node, "output_shape " + shape_to_string(wanted) + " would need negative padding at the start");
    }
    g.out[i] = full - g.pads_begin[i] - g.pads_end[i];
    if (g.out[i] < 1) fail(node, "the output would be empty");
  }
  return t;
}

}  // namespace ember
