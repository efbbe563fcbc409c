// Sliding-window geometry of Conv, ConvTranspose and the pooling ops, as ONNX defines
// it (auto_pad, pads, strides, dilations, ceil_mode, output_shape). Shared by their
// schemas and their kernels so both agree on every size.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

namespace ember {

// Where the channels are: ONNX's N x C x D1.. (first); the N x D1.. x C of com.ember's
// Nhwc* ops (last); or the N x C/b x D1.. x b of its Blocked* ops (blocked: channels in
// groups of b, each group's planes with b channels interleaved, oneDNN's nChw8c and
// nChw16c; the last dim is b). The CPU's layout planning (graph/passes/channels_last)
// puts those in place of convolutions and pooling.
enum class Layout { ChannelsFirst, ChannelsLast, ChannelsBlocked };

inline Shape spatial_dims(const Shape& s, Layout layout) {
  if (layout == Layout::ChannelsFirst) return Shape(s.begin() + 2, s.end());
  return layout == Layout::ChannelsLast ? Shape(s.begin() + 1, s.end() - 1) : Shape(s.begin() + 2, s.end() - 1);
}
inline int64_t channels_of(const Shape& s, Layout layout) {
  if (layout == Layout::ChannelsFirst) return s[1];
  return layout == Layout::ChannelsLast ? s.back() : s[1] * s.back();
}

struct WindowGeometry {
  Shape kernel;      // per spatial dim, undilated
  Shape strides;
  Shape dilations;
  Shape pads_begin;
  Shape pads_end;
  Shape out;         // output spatial sizes
};

// Conv and pooling. `spatial_in` are the input's spatial sizes; `kernel` comes from
// the kernel_shape attribute or, for Conv, from W. ceil_mode is pooling's rounding.
// Raises ember::Error naming the node on inconsistent attributes.
WindowGeometry forward_window(const Node& node, const Shape& spatial_in, const Shape& kernel,
                              bool ceil_mode);

// ConvTranspose (output_padding is returned separately: it enlarges `out` only at the
// end, where no input contributes).
struct TransposedWindow {
  WindowGeometry window;
  Shape output_padding;
};
TransposedWindow transposed_window(const Node& node, const Shape& spatial_in, const Shape& kernel);

// The kernel shape of a Conv/ConvTranspose: kernel_shape if set, else W's spatial dims.
Shape conv_kernel_shape(const Node& node, const Shape& w_shape);

}  // namespace ember
