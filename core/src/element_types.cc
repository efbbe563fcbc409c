#include <ember/core/element_types.h>

#include <cstring>

namespace ember {

bool scalar_bytes(double value, DType dtype, std::vector<uint8_t>& bytes) {
  return dispatch(AllTypes{}, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    bytes.resize(sizeof(T));
    std::memcpy(bytes.data(), &v, sizeof(T));
  });
}

}  // namespace ember
