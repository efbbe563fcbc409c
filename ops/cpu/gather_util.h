// Reading and bounds-checking the index tensors of Gather/Scatter kernels.
#pragma once

#include "ops/kernel.h"

#include <ember/core/error.h>

#include <string>

namespace ember {

class IndexReader {
 public:
  static bool supports(DType t) { return t == DType::Int64 || t == DType::Int32; }

  // `axis` only names the dimension in error messages (-1: none).
  IndexReader(const KernelInit& init, int64_t axis)
      : label_(init.node.label()), is64_(init.inputs[1].dtype == DType::Int64), axis_(axis) {}

  int64_t raw(const Tensor& t, int64_t k) const {
    return is64_ ? t.data_as<int64_t>()[k] : t.data_as<int32_t>()[k];
  }
  // Raises unless index k is in [-n, n).
  void checked(const Tensor& t, int64_t k, int64_t n) const {
    const int64_t v = raw(t, k);
    if (v < -n || v >= n)
      throw Error(label_ + ": index " + std::to_string(v) + " is out of range [" + std::to_string(-n) +
                  ", " + std::to_string(n) + ")" +
                  (axis_ >= 0 ? " for axis " + std::to_string(axis_) : std::string()));
  }
  // Index k mapped into [0, n); call checked first.
  int64_t wrapped(const Tensor& t, int64_t k, int64_t n) const {
    const int64_t v = raw(t, k);
    return v < 0 ? v + n : v;
  }

 private:
  std::string label_;
  bool is64_;
  int64_t axis_;
};

}  // namespace ember
