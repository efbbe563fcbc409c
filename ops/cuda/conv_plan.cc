#include "ops/cuda/conv_plan.h"

#include <algorithm>
#include <cstring>

namespace ember::cuda {

namespace {

// Per spatial dim: the symmetric part of ONNX's pads (for cuDNN) and the extra rows
// before and after, which the copy adds.
struct SpatialPads {
  std::vector<int64_t> symmetric, extra_begin, extra_end;
  bool extra = false;
};

SpatialPads split_pads(const WindowGeometry& g, size_t spatial) {
  SpatialPads s;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t sym = std::min(g.pads_begin[i], g.pads_end[i]);
    s.symmetric.push_back(sym);
    s.extra_begin.push_back(g.pads_begin[i] - sym);
    s.extra_end.push_back(g.pads_end[i] - sym);
    s.extra |= s.extra_begin.back() > 0 || s.extra_end.back() > 0;
  }
  return s;
}

}  // namespace

ConvPadding conv_padding(const Shape& x, const WindowGeometry& g) {
  const size_t sd = x.size() - 2, lead = 3 - sd;
  const SpatialPads s = split_pads(g, sd);
  ConvPadding p;
  p.padded_x = x;
  p.symmetric = s.symmetric;
  p.copy = s.extra;
  p.copy_args.planes = x[0] * x[1];
  for (size_t i = 0; i < sd; ++i) {
    p.padded_x[2 + i] += s.extra_begin[i] + s.extra_end[i];
    p.copy_args.in[lead + i] = x[2 + i];
    p.copy_args.out[lead + i] = p.padded_x[2 + i];
    p.copy_args.shift[lead + i] = s.extra_begin[i];
  }
  return p;
}

ConvPadding conv_padding_nhwc(const Shape& x, const WindowGeometry& g, int64_t channels) {
  const SpatialPads s = split_pads(g, 2);
  ConvPadding p;
  p.padded_x = {x[0], channels, x[2] + s.extra_begin[0] + s.extra_end[0], x[3] + s.extra_begin[1] + s.extra_end[1]};
  p.symmetric = s.symmetric;
  p.copy = s.extra || channels != x[1];
  // [N][H][W][C] -> [N][H'][W'][C'], the image shifted by the extra leading pads.
  p.copy_args.planes = x[0];
  const int64_t in[3] = {x[2], x[3], x[1]}, out[3] = {p.padded_x[2], p.padded_x[3], channels};
  const int64_t shift[3] = {s.extra_begin[0], s.extra_begin[1], 0};
  for (int i = 0; i < 3; ++i) {
    p.copy_args.in[i] = in[i];
    p.copy_args.out[i] = out[i];
    p.copy_args.shift[i] = shift[i];
  }
  return p;
}

bool space_to_depth_applies(const Shape& x, const Shape& w, const WindowGeometry& g, int64_t group) {
  if (x.size() != 4 || group != 1) return false;
  const int64_t s = g.strides[0];
  if (s < 2 || g.strides[1] != s || g.dilations[0] != 1 || g.dilations[1] != 1 || (w[2] <= s && w[3] <= s) ||
      s * s * x[1] > kSpaceToDepthChannels)
    return false;
  // The rewrite reduces over taps' * 32 values per output against R * S * C8 (C padded
  // to 8); past 1.5 times as many it lost on the H200: MobileNet's 3x3 stem (128 vs 72)
  // went 1.44 -> 1.46 ms at b64, where ResNet-50's 7x7 (512 vs 392) went 2.14 -> 1.97.
  const int64_t taps = ((w[2] + s - 1) / s) * ((w[3] + s - 1) / s);
  const int64_t padded = w[2] * w[3] * ((x[1] + 7) / 8 * 8);
  return 2 * taps * kSpaceToDepthChannels <= 3 * padded;
}

SpaceToDepthConv space_to_depth_conv(const Shape& x, const Shape& w, const WindowGeometry& g) {
  const int64_t s = g.strides[0];
  const int64_t taps_h = (w[2] + s - 1) / s, taps_w = (w[3] + s - 1) / s;
  SpaceToDepthConv c;
  // Output (oh, ow) reads blocks oh .. oh + taps_h - 1: a stride-1 convolution without pads.
  c.x = {x[0], kSpaceToDepthChannels, g.out[0] + taps_h - 1, g.out[1] + taps_w - 1};
  c.w = {w[0], kSpaceToDepthChannels, taps_h, taps_w};
  SpaceToDepthArgs& a = c.copy;
  a.n = x[0];
  a.c = x[1];
  a.h = x[2];
  a.w = x[3];
  a.out_h = c.x[2];
  a.out_w = c.x[3];
  a.stride = s;
  a.pad_top = g.pads_begin[0];
  a.pad_left = g.pads_begin[1];
  return c;
}

Tensor filter_to_space_to_depth_krsc(const Tensor& w, int64_t stride) {
  const Shape& sh = w.shape();
  const int64_t k = sh[0], c = sh[1], r = sh[2], s = sh[3];
  const int64_t taps_h = (r + stride - 1) / stride, taps_w = (s + stride - 1) / stride;
  const int64_t channels = kSpaceToDepthChannels;
  const size_t esize = static_cast<size_t>(dtype_bits(w.dtype()) / 8);
  Tensor out(w.dtype(), {k, taps_h, taps_w, channels});  // zero-filled
  const char* in = static_cast<const char*>(w.data());
  char* o = static_cast<char*>(out.data());
  // Tap (ri, si) of channel ci lands in block tap (ri / stride, si / stride), at channel
  // ((ri % stride) * stride + si % stride) * C + ci, as the copy lays X' out.
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ri = 0; ri < r; ++ri)
        for (int64_t si = 0; si < s; ++si) {
          const int64_t tap = (ki * taps_h + ri / stride) * taps_w + si / stride;
          const int64_t channel = ((ri % stride) * stride + si % stride) * c + ci;
          std::memcpy(o + (tap * channels + channel) * esize, in + (((ki * c + ci) * r + ri) * s + si) * esize, esize);
        }
  return out;
}

DeconvGeometry deconv_geometry(const Shape& x, const Shape& y, const TransposedWindow& t) {
  const WindowGeometry& g = t.window;
  const size_t sd = x.size() - 2, lead = 3 - sd;
  DeconvGeometry d;
  for (size_t i = 0; i < sd; ++i) d.direct &= g.pads_begin[i] == g.pads_end[i] && t.output_padding[i] == 0;
  d.full = y;
  d.pads.assign(sd, 0);
  d.crop.planes = y[0] * y[1];
  for (size_t i = 0; i < sd; ++i) {
    if (d.direct) {
      d.pads[i] = g.pads_begin[i];
      continue;
    }
    // Every output position an input reaches, unpadded: s * (in - 1) + dilated kernel.
    d.full[2 + i] = g.strides[i] * (x[2 + i] - 1) + (g.kernel[i] - 1) * g.dilations[i] + 1;
    d.crop.in[lead + i] = d.full[2 + i];
    d.crop.out[lead + i] = y[2 + i];
    d.crop.shift[lead + i] = -g.pads_begin[i];  // y[o] = full[o + pads_begin], 0 past the end
  }
  return d;
}

Tensor filter_to_krsc(const Tensor& w, int64_t channels) {
  const Shape& s = w.shape();
  const int64_t k = s[0], c = s[1], rs = s[2] * s[3];
  const size_t esize = static_cast<size_t>(dtype_bits(w.dtype()) / 8);
  Tensor out(w.dtype(), {k, s[2], s[3], channels});  // zero-filled
  const char* in = static_cast<const char*>(w.data());
  char* o = static_cast<char*>(out.data());
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p)
        std::memcpy(o + ((ki * rs + p) * channels + ci) * esize, in + ((ki * c + ci) * rs + p) * esize, esize);
  return out;
}

}  // namespace ember::cuda
