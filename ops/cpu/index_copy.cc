#include "ops/cpu/index_copy.h"

#include "ops/cpu/parallel.h"

#include <ember/core/error.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace ember {

namespace {

// An output dim: affine (start + i * stride) or an explicit table.
struct CopyDim {
  int64_t len;
  bool affine;
  int64_t start, stride;
  std::vector<int64_t> table;
  int64_t at(int64_t i) const { return affine ? start + i * stride : table[i]; }
};

CopyDim make_dim(std::vector<int64_t> table) {
  const int64_t n = static_cast<int64_t>(table.size());
  const int64_t stride = n > 1 ? table[1] - table[0] : 1;
  bool affine = true;
  for (int64_t i = 0; i < n && affine; ++i) affine = table[i] >= 0 && table[i] == table[0] + i * stride;
  if (affine) return CopyDim{n, true, table[0], stride, {}};
  return CopyDim{n, false, 0, 0, std::move(table)};
}

template <class T>
void copy_strided(const uint8_t* src, int64_t stride, uint8_t* dst, int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
}

struct Bytes16 {
  uint64_t lo, hi;
};

}  // namespace

std::vector<int64_t> IndexCopy::affine(int64_t n, int64_t start, int64_t stride) {
  std::vector<int64_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = start + i * stride;
  return t;
}

IndexCopy::IndexCopy(std::vector<std::vector<int64_t>> tables, size_t elem_size,
                     std::vector<uint8_t> fill)
    : elem_(elem_size), fill_(std::move(fill)) {
  if (fill_.empty()) fill_.assign(elem_, 0);

  // Size-1 dims fold into the base offset; an empty dim means there is nothing to do.
  std::vector<CopyDim> dims;
  for (auto& t : tables) {
    if (t.empty()) {
      rows_ = 0;
      return;
    }
    if (t.size() == 1) {
      if (t[0] < 0) all_fill_ = true;
      base_ += t[0];
      continue;
    }
    dims.push_back(make_dim(std::move(t)));
  }
  if (all_fill_) base_ = 0;
  // Merge neighbours that together walk the input affinely (dims that stay adjacent).
  std::vector<CopyDim> merged;
  for (auto& d : dims) {
    if (!merged.empty()) {
      CopyDim& prev = merged.back();
      if (prev.affine && d.affine && prev.stride == d.stride * d.len) {
        prev = CopyDim{prev.len * d.len, true, prev.start + d.start, d.stride, {}};
        continue;
      }
    }
    merged.push_back(std::move(d));
  }
  if (merged.empty()) merged.push_back(CopyDim{1, true, 0, 1, {}});

  const CopyDim& inner = merged.back();
  inner_ = inner.len;
  for (int64_t i = 0; i < inner.len;) {
    // Greedy: extend the run while the stride between neighbours stays the same.
    const int64_t off = inner.at(i);
    int64_t len = 1, stride = 1;
    if (i + 1 < inner.len && (off < 0) == (inner.at(i + 1) < 0)) stride = off < 0 ? 0 : inner.at(i + 1) - off;
    while (i + len < inner.len && (off < 0 ? inner.at(i + len) < 0 : inner.at(i + len) == off + len * stride))
      ++len;
    runs_.push_back(Run{i, len, off < 0 ? -1 : off, stride});
    i += len;
  }
  merged.pop_back();
  if (merged.size() > kMaxRank)
    throw Error("a movement kernel supports at most " + std::to_string(kMaxRank) + " dims");
  for (const auto& d : merged) {
    outer_.push_back(d.affine ? affine(d.len, d.start, d.stride) : d.table);
    rows_ *= d.len;
  }
}

void IndexCopy::fill(uint8_t* out, int64_t count, const uint8_t* value) const {
  bool zero = true;
  for (size_t i = 0; i < elem_; ++i) zero = zero && value[i] == 0;
  if (zero) {
    std::memset(out, 0, count * elem_);
    return;
  }
  for (int64_t i = 0; i < count; ++i) std::memcpy(out + i * elem_, value, elem_);
}

void IndexCopy::copy_row(const uint8_t* in, int64_t row_off, uint8_t* out,
                         const uint8_t* fill_value) const {
  for (const Run& r : runs_) {
    uint8_t* dst = out + r.out_begin * elem_;
    if (r.in_off < 0) {
      fill(dst, r.len, fill_value);
      continue;
    }
    const uint8_t* src = in + (row_off + r.in_off) * elem_;
    if (r.in_stride == 1 || r.len == 1) {
      std::memcpy(dst, src, r.len * elem_);
      continue;
    }
    switch (elem_) {
      case 1: copy_strided<uint8_t>(src, r.in_stride, dst, r.len); break;
      case 2: copy_strided<uint16_t>(src, r.in_stride, dst, r.len); break;
      case 4: copy_strided<uint32_t>(src, r.in_stride, dst, r.len); break;
      case 8: copy_strided<uint64_t>(src, r.in_stride, dst, r.len); break;
      case 16: copy_strided<Bytes16>(src, r.in_stride, dst, r.len); break;
      default:
        for (int64_t i = 0; i < r.len; ++i) std::memcpy(dst + i * elem_, src + i * r.in_stride * elem_, elem_);
    }
  }
}

void IndexCopy::run(const void* in_ptr, void* out_ptr, const void* fill_ptr) const {
  const auto* in = static_cast<const uint8_t*>(in_ptr);
  const auto* fill_value = fill_ptr ? static_cast<const uint8_t*>(fill_ptr) : fill_.data();
  auto* out = static_cast<uint8_t*>(out_ptr);
  const size_t row_bytes = inner_ * elem_;
  const size_t depth = outer_.size();
  // Counted in bytes (RowCost::Bytes; Expand counts elements, ops/cpu/expand_tile.cc),
  // so that a copy of 32 KB or more is split between the threads: the convolution
  // reading it next splits its rows between them too, and a copy made on one core alone
  // had the other read its half from that core's cache. ShuffleNetV2's channel Slices
  // (90 KB, channels-last) went that way, and the 1x1 convolutions after them took 0.065
  // ms instead of 0.025 (2-core Xeon).
  const int64_t row_cost = row_cost_ == RowCost::Bytes ? static_cast<int64_t>(row_bytes) : inner_;
  parallel_for(rows_, row_cost, [&](int64_t begin, int64_t end) {
    std::array<int64_t, kMaxRank> idx{};
    for (int64_t r = begin, d = static_cast<int64_t>(depth); d-- > 0;) {
      const int64_t n = static_cast<int64_t>(outer_[d].size());
      idx[d] = r % n;
      r /= n;
    }
    for (int64_t row = begin; row < end; ++row) {
      int64_t off = base_;
      bool filled = all_fill_;
      for (size_t d = 0; d < depth; ++d) {
        const int64_t o = outer_[d][idx[d]];
        filled = filled || o < 0;
        off += o;
      }
      uint8_t* dst = out + row * row_bytes;
      if (filled)
        fill(dst, inner_, fill_value);
      else
        copy_row(in, off, dst, fill_value);
      for (size_t d = depth; d-- > 0;) {
        if (++idx[d] < static_cast<int64_t>(outer_[d].size())) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace ember
