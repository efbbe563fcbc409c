// Rows of an operand broadcast onto X (numpy rules, X not widened), for CPU kernels that
// walk X row by row along its last axis and read the operand's matching row: cos and
// sin of a rotary embedding ([1, 1, S, D] against [B, H, S, D]), an attention mask.
#pragma once

#include <ember/core/tensor.h>

#include <cstdint>
#include <vector>

namespace ember {

// For each of X's axes but the last: how many rows of X one step along it is, and how
// many rows of the operand (0 where the operand's dim is 1 or absent).
class BroadcastRows {
 public:
  BroadcastRows(const Shape& x, const Shape& operand) {
    const size_t outer = x.size() - 1, lead = x.size() - operand.size();
    dims_.assign(x.begin(), x.end() - 1);
    x_rows_.assign(outer, 1);
    operand_rows_.assign(outer, 0);
    for (size_t a = outer; a-- > 1;) x_rows_[a - 1] = x_rows_[a] * dims_[a];
    int64_t rows = 1;
    for (size_t a = outer; a-- > lead;) {
      const int64_t dim = operand[a - lead];
      operand_rows_[a] = dim == 1 ? 0 : rows;
      rows *= dim;
    }
  }

  // The operand's row for row `row` of X.
  int64_t operand_row(int64_t row) const {
    int64_t at = 0;
    for (size_t a = 0; a < dims_.size(); ++a) at += row / x_rows_[a] % dims_[a] * operand_rows_[a];
    return at;
  }

 private:
  std::vector<int64_t> dims_, x_rows_, operand_rows_;
};

}  // namespace ember
