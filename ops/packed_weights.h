// Packed forms of a session's weights — reordered into a library's preferred layout,
// converted to bfloat16 — made once and shared by every plan that asks for the same
// form, so a session planned for many input shapes holds each form once. Where every
// reader of a weight reads it packed, the session gives the original back (its Tensor
// keeps dtype and shape, with no data) and later forms are made from a packed one.
#pragma once

#include <ember/core/tensor.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ember {

class PackedWeights {
 public:
  using Make = std::function<std::shared_ptr<void>()>;

  // The form `form` (any bytes that tell forms apart) of `weight`, which must live as
  // long as this cache: the one made before, or `make()`'s result, which holds `bytes`
  // on `device` (a GPU kernel's form lives in device memory).
  std::shared_ptr<void> get(const Tensor& weight, const std::string& form, size_t bytes, const Make& make,
                            Device device = {});

  // The forms of `weight` made so far, as (form, packed) pairs: where the original is
  // given back, a new form is made from one of these.
  std::vector<std::pair<std::string, std::shared_ptr<void>>> forms_of(const Tensor& weight) const;

  size_t bytes(Device device = {}) const;  // held on `device` by every form made so far
  size_t forms() const;                    // how many

 private:
  struct Form {
    std::shared_ptr<void> packed;
    size_t bytes = 0;
    Device device;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<const Tensor*, std::string>, Form> forms_;
};

}  // namespace ember
