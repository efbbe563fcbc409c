// The geometry of the CUDA convolutions apart from cuDNN, so tests can check it on the
// CPU: cuDNN pads symmetrically, so a Conv with asymmetric pads runs on a zero-padded
// copy of X; a ConvTranspose whose pads differ per side (or with output_padding)
// runs unpadded into a full-size buffer that a shifted copy then crops. And the KRSC
// order of NHWC convolutions' filters, with zero channels added where float16 needs a
// multiple of 8 to reach the tensor cores.
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
