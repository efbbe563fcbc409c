// ember::Error — the one exception type for bad user input and runtime failures.
#pragma once

#include <stdexcept>
#include <string>

namespace ember {

// Raised for anything a user can get wrong (model files, .npy files, shapes, options)
// and for device failures. The message names the thing and what was expected.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ember
