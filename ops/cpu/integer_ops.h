// Exact integer MatMul and Conv with zero points, shared by MatMulInteger/ConvInteger
// (which output the int32 sums) and QLinearMatMul/QLinearConv (which requantize them).
// Operands are 8-bit; each is copied minus its zero point into int32 workspace, then
// multiplied with int32 accumulation that wraps as ONNX allows ("accumulation may
// overflow if and only if in 32 bits").
#pragma once

#include "graph/schemas/window.h"
#include "ops/kernel.h"

#include <cstdint>
#include <vector>

namespace ember {

// Where a zero point or scale element sits for each element of its operand: element
// strides over the operand's dims (0 where the parameter is broadcast).
//   scalar / one element    -> all 0
//   1-D of the operand's `vector_dim` length -> 1 at that dim (per row / column / channel)
//   same rank as the operand -> numpy broadcasting
Shape param_strides(const KernelInit& init, const char* what, const Shape& param, const Shape& operand,
                    size_t vector_dim);
int64_t param_index(const Shape& strides, const Shape& operand, int64_t flat);

// numpy.matmul of two 8-bit operands after subtracting their (optional) zero points.
struct IntMatMul {
  int64_t m = 0, k = 0, n = 0;
  Shape a_shape, b_shape;              // as matrices: a vector operand gets a 1 dim
  std::vector<int64_t> a_mat, b_mat;   // per output batch: which a / b matrix it reads
  Shape a_zp_strides, b_zp_strides;    // empty when there is no zero point
  int a_in = 0, b_in = 0, a_zp_in = -1, b_zp_in = -1;

  // Validates shapes; false with *why_not for operand types other than int8/uint8.
  static bool make(const KernelInit& init, int a_in, int a_zp_in, int b_in, int b_zp_in, IntMatMul* out,
                   std::string* why_not);
  size_t workspace_bytes() const;
  int64_t batch() const { return static_cast<int64_t>(a_mat.size()); }
  // out: batch x m x n int32 sums.
  void run(const RunArgs& args, int32_t* out, void* workspace) const;
};

// N-d grouped convolution of two 8-bit operands after subtracting their zero points
// (x: scalar; w: scalar or per output channel). Padding contributes zero, that is x's
// zero point before the subtraction.
struct IntConv {
  WindowGeometry g;
  Shape x_shape, w_shape, y_shape;
  int64_t group = 1;
  int x_in = 0, w_in = 0, x_zp_in = -1, w_zp_in = -1;
  bool w_zp_per_channel = false;

  static bool make(const KernelInit& init, int x_in, int x_zp_in, int w_in, int w_zp_in, IntConv* out,
                   std::string* why_not);
  size_t workspace_bytes() const;
  // out: N x M x spatial int32 sums (y_shape).
  void run(const RunArgs& args, int32_t* out, void* workspace) const;
};

}  // namespace ember
