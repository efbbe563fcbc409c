// The geometry of the CUDA convolutions apart from cuDNN, so tests can check it on the
// CPU: cuDNN pads symmetrically, so a Conv with asymmetric pads runs on a zero-padded
// copy of X; a ConvTranspose whose pads differ per side (or with output_padding)
// runs unpadded into a full-size buffer that a shifted copy then crops. And the KRSC
// order of NHWC convolutions' filters.
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

struct DeconvGeometry {
  bool direct = true;              // cuDNN writes Y with pads `pads` (symmetric)
  Shape full;                      // what cuDNN writes (Y's shape when direct)
  std::vector<int64_t> pads;       // per spatial dim, for cuDNN (0 unless direct)
  ShiftCopyArgs crop;              // full -> Y when !direct; x, y set per run
};

DeconvGeometry deconv_geometry(const Shape& x, const Shape& y, const TransposedWindow& t);

// A 2-D filter W [K, C, R, S] (any dtype) as KRSC [K, R, S, C], on the host: what
// cuDNN's NHWC convolutions read.
Tensor filter_to_krsc(const Tensor& w);

}  // namespace ember::cuda
