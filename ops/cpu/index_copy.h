// A separable gather that many movement ops reduce to: output element
// (i_0, ..., i_{r-1}) is input element sum_d table_d[i_d], or a fill value where any
// table entry is negative. Transpose, Slice, Expand, Tile, Pad and nearest Resize
// build their tables at plan time; run copies with memcpy wherever runs are contiguous.
#pragma once

#include "ops/kernel.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember {

class IndexCopy {
 public:
  static constexpr size_t kMaxRank = 24;

  // What a row costs when run() decides whether to split the rows between threads: its
  // bytes (a copy of 32 KB or more is split; see run), or its elements (32k or more).
  enum class RowCost { Bytes, Elements };

  // tables[d] has one entry per output index along d: an element offset into the input,
  // or -1 for "fill". `fill` is one element's bytes (zeros when empty).
  IndexCopy(std::vector<std::vector<int64_t>> tables, size_t elem_size,
            std::vector<uint8_t> fill = {});

  // `fill` (one element's bytes), when given, replaces the fill value of the constructor.
  void run(const void* in, void* out, const void* fill = nullptr) const;

  IndexCopy& with_row_cost(RowCost cost) {
    row_cost_ = cost;
    return *this;
  }

  // A copy with nothing to do, for an empty output: its tables would be as long as its
  // other dims, which may be huge ([2^40, 0]; fuzzing: ASan out of memory).
  static IndexCopy nothing(size_t elem_size) { return IndexCopy({std::vector<int64_t>{}}, elem_size); }

  // Offsets start, start + stride, ...: n entries.
  static std::vector<int64_t> affine(int64_t n, int64_t start, int64_t stride);

 private:
  // A stretch of the innermost output dim: `len` elements read from in_off with
  // in_stride between them, or filled when in_off < 0.
  struct Run {
    int64_t out_begin, len, in_off, in_stride;
  };
  void copy_row(const uint8_t* in, int64_t row_off, uint8_t* out, const uint8_t* fill) const;
  void fill(uint8_t* out, int64_t count, const uint8_t* value) const;

  std::vector<std::vector<int64_t>> outer_;  // tables for all but the innermost dim
  std::vector<Run> runs_;
  int64_t base_ = 0, inner_ = 1, rows_ = 1;
  bool all_fill_ = false;
  RowCost row_cost_ = RowCost::Bytes;
  size_t elem_;
  std::vector<uint8_t> fill_;
};

// A kernel whose whole work is one IndexCopy from input 0 to output 0.
class IndexCopyKernel final : public Kernel {
 public:
  explicit IndexCopyKernel(IndexCopy copy) : copy_(std::move(copy)) {}
  void run(const RunArgs& args) const override {
    copy_.run(args.inputs[0]->data(), args.outputs[0]->data());
  }

 private:
  IndexCopy copy_;
};

}  // namespace ember
