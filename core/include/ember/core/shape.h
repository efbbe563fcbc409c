// ember::Shape — a tensor's dimensions, outermost first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& shape);  // raises ember::Error when the count overflows int64
std::string shape_to_string(const Shape& shape);  // "[1, 3, 224, 224]"

}  // namespace ember
