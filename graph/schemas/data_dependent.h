// The counting at the heart of NonZero, Compress and Unique: part of their shape rule
// (the counts size the outputs), and used by their CPU kernels to fill the outputs,
// so both always agree.
#pragma once

#include <ember/core/element_types.h>
#include <ember/core/tensor.h>

#include <algorithm>
#include <numeric>

namespace ember {

// Number of elements of x that are not zero (false); raises for unsupported dtypes.
int64_t count_nonzero(const Tensor& x);

// x seen as `slices` slices along one axis: slice j is every x[o, j, i] for o < outer,
// i < inner, compared lexicographically in (o, i) order.
struct SliceView {
  int64_t outer = 1, slices = 0, inner = 1;
};

// Unique's grouping of equal slices. Each array holds `slices` int64s; after
// group_unique_slices the first `groups` entries of first/count describe the unique
// slices in output order, and inverse[j] is slice j's position among them.
struct UniqueScratch {
  int64_t *order, *first, *count, *inverse, *rank, *tmp;
  static constexpr int kArrays = 6;
};

// Returns the number of unique slices. sorted: in ascending order, else in order of
// first occurrence.
template <class T>
int64_t group_unique_slices(const T* x, const SliceView& v, bool sorted, const UniqueScratch& s) {
  using C = compute_t<T>;
  auto compare = [&](int64_t a, int64_t b) {  // <0, 0, >0 like strcmp
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const C xa = C(x[(o * v.slices + a) * v.inner + i]), xb = C(x[(o * v.slices + b) * v.inner + i]);
        if (xa < xb) return -1;
        if (xb < xa) return 1;
      }
    return 0;
  };
  const int64_t n = v.slices;
  std::iota(s.order, s.order + n, int64_t{0});
  std::stable_sort(s.order, s.order + n, [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  int64_t groups = 0;
  for (int64_t p = 0; p < n; ++p) {
    if (p == 0 || compare(s.order[p - 1], s.order[p]) != 0) {
      s.first[groups] = s.order[p];  // stable sort: the lowest index of its group
      s.count[groups++] = 0;
    }
    ++s.count[groups - 1];
    s.inverse[s.order[p]] = groups - 1;
  }
  if (sorted) return groups;
  // Reorder the groups by first occurrence: rank[g] is group g's new position.
  std::iota(s.tmp, s.tmp + groups, int64_t{0});
  std::sort(s.tmp, s.tmp + groups, [&](int64_t a, int64_t b) { return s.first[a] < s.first[b]; });
  for (int64_t u = 0; u < groups; ++u) s.rank[s.tmp[u]] = u;
  for (int64_t j = 0; j < n; ++j) s.inverse[j] = s.rank[s.inverse[j]];
  for (int64_t u = 0; u < groups; ++u) s.order[u] = s.first[s.tmp[u]], s.rank[u] = s.count[s.tmp[u]];
  std::copy(s.order, s.order + groups, s.first);
  std::copy(s.rank, s.rank + groups, s.count);
  return groups;
}

// Unique's slicing of x: flattened without an axis, else along the (normalized) axis.
SliceView unique_view(const Shape& shape, bool has_axis, int64_t axis);

// The number of unique slices of x (allocating its own scratch); raises for
// unsupported dtypes.
int64_t count_unique_slices(const Tensor& x, const SliceView& v, bool sorted);

}  // namespace ember
