// Helpers for the elementwise kernel tests: a plain broadcasting reference, values as
// a dtype stores them, and case names; elements, random tensors, nodes and the tolerant
// comparison come from tests/test_util.h.
#pragma once

#include "ops/cpu/elementwise.h"
#include "ops/evaluate.h"
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace ember::test {

// v as it reads back once stored in `dtype` (the rounding a kernel's output gets).
inline double round_to(DType dtype, double v) {
  Tensor t(dtype, {});
  set_element(t, 0, v);
  return element(t, 0);
}

// "Add float32 [2, 3] [3]": names a case in failure messages.
template <class... Parts> std::string describe(const Parts&... parts) {
  std::ostringstream out;
  ((out << parts << ' '), ...);
  return out.str();
}

// Numpy's broadcast of two shapes (the tests' own, to check the schema against).
inline Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// Replaces every element by its nearest integer, so comparisons see ties.
inline void round_values(Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, std::round(element(t, i)));
}

// The flat index in an input of shape `in` that numpy broadcasting reads for output
// element `flat` of shape `out`.
inline int64_t broadcast_source(const Shape& in, const Shape& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  const size_t pad = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (d < pad) continue;
    const int64_t dim = in[d - pad];
    if (dim != 1) index += coord * stride;
    stride *= dim;
  }
  return index;
}

// Reference: out[i] = f(inputs at their broadcast positions), as doubles.
inline std::vector<double> reference(const std::vector<const Tensor*>& inputs, const Shape& out,
                                     const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> result;
  std::vector<double> args(inputs.size());
  for (int64_t i = 0; i < shape_numel(out); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k)
      args[k] = element(*inputs[k], broadcast_source(inputs[k]->shape(), out, i));
    result.push_back(f(args));
  }
  return result;
}

}  // namespace ember::test
