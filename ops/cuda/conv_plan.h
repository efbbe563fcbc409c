// The geometry of the CUDA convolutions apart from cuDNN, so tests can check it on the
// CPU: cuDNN pads symmetrically, so a Conv with asymmetric pads runs on a zero-padded
// copy of X; a ConvTranspose whose pads differ per side (or with output_padding)
// runs unpadded into a full-size buffer that a shifted copy then crops. And the KRSC
// order of NHWC convolutions' filters, with zero channels added where float16 needs a
// multiple of 8 to reach the tensor cores, or, for an image stem, the same convolution
// rewritten by space-to-depth.
#pragma once

#include "graph/schemas/window.h"
#include "ops/cuda/conv_impl.h"

#include <ember/core/tensor.h>

#include <vector>

namespace ember::cuda {

struct ConvPadding {
  Shape padded_x;                  // X with the extra padding (X itself when !copy)
  std::vector<int64_t> symmetric;  // per spatial dim, for cuDNN
  bool copy = false;               // X goes through `copy_args` into padded_x first
  ShiftCopyArgs copy_args;         // x, y set per run
};

ConvPadding conv_padding(const Shape& x, const WindowGeometry& g);

// The same for an NHWC X ([N, H, W, C] in memory; `x` and padded_x give the dims in
// NCHW order, as cuDNN's descriptors take them): the copy also adds zero channels up to
// `channels` (>= C). cuDNN runs a float16 convolution on tensor cores only when C is a
// multiple of 8; ResNet's stem (C = 3) otherwise takes a path 10x slower.
ConvPadding conv_padding_nhwc(const Shape& x, const WindowGeometry& g, int64_t channels);

// A strided 2-D convolution over a few channels (ResNet's stem: 7x7, stride 2, C = 3)
// rewritten as a stride-1 convolution without pads over the input's s x s blocks: X'
// holds each block's s * s * C values as channels (zeros up to kSpaceToDepthChannels),
// W' [K, ceil(R / s), ceil(S / s), channels] the filter's taps regrouped the same way
// (zero past R and S). cuDNN's tensor-core kernels then reduce over 32 real-or-zero
// channels per tap instead of 8 channels of which 5 are zero: on an H200, ResNet-50's
// stem at batch 64 in float16 went from 331 to 141 us (PyTorch's cuDNN, the same
// rewrite). The pads, symmetric or not, go into the copy.
struct SpaceToDepthConv {
  Shape x;                // X' in NCHW order, as cuDNN's descriptors take it
  Shape w;                // W' as [K, channels, R', S'], likewise
  SpaceToDepthArgs copy;  // x, y set per run
};

// Whether `space_to_depth_conv` applies, and pays: 2-D, group 1, no dilation, the
// same stride s >= 2 both ways, a filter wider than the stride, s * s * C <= 32, and at
// most 1.5 times the multiply-adds of the zero-channel form.
bool space_to_depth_applies(const Shape& x, const Shape& w, const WindowGeometry& g, int64_t group);
SpaceToDepthConv space_to_depth_conv(const Shape& x, const Shape& w, const WindowGeometry& g);

// W [K, C, R, S] as W' in KRSC order [K, R', S', kSpaceToDepthChannels], on the host.
Tensor filter_to_space_to_depth_krsc(const Tensor& w, int64_t stride);

struct DeconvGeometry {
  bool direct = true;              // cuDNN writes Y with pads `pads` (symmetric)
  Shape full;                      // what cuDNN writes (Y's shape when direct)
  std::vector<int64_t> pads;       // per spatial dim, for cuDNN (0 unless direct)
  ShiftCopyArgs crop;              // full -> Y when !direct; x, y set per run
};

DeconvGeometry deconv_geometry(const Shape& x, const Shape& y, const TransposedWindow& t);

// A 2-D filter W [K, C, R, S] (any dtype) as KRSC [K, R, S, channels], on the host:
// what cuDNN's NHWC convolutions read. Channels past C (channels >= C) are zero.
Tensor filter_to_krsc(const Tensor& w, int64_t channels);

}  // namespace ember::cuda
