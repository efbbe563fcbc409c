// The device side of the CUDA Resize/Upsample, as the host code sees it
// (ops/cuda/resize_impl.cu). A plain C++ header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

enum class ResizeCoord : int32_t { HalfPixel, Asymmetric, AlignCorners, PytorchHalfPixel, TfHalfPixelForNN };
enum class ResizeNearest : int32_t { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

// One of the two resized dims.
struct ResizeAxis {
  int64_t in_len = 1, out_len = 1;
  double scale = 1;   // as the coordinate transforms use it
  double length = 1;  // the unrounded output length (align_corners divides by it)
  bool identity = true;  // left as it is: output index i reads input index i
};

// The input viewed as [planes, h.in_len, w.in_len], the output as [planes, h.out_len,
// w.out_len]. Nearest moves elements of `elem` bytes (1, 2, 4 or 8); linear reads and
// writes float (elem 4) or half (elem 2) and weighs in float. Source coordinates are
// computed in double, with the CPU kernel's formulas and operation order, so nearest
// picks exactly the CPU's input element.
struct ResizeDesc {
  int32_t elem = 4;
  bool linear = false;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  ResizeNearest nearest = ResizeNearest::RoundPreferFloor;
  int64_t planes = 1;
  ResizeAxis h, w;
};
void launch_resize(const ResizeDesc& d, const void* in, void* out, cudaStream_t stream);

}  // namespace ember::cuda
