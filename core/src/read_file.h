// Reading a whole user-named file, with errors that name it. Internal to ember (not installed).
#pragma once

#include <ember/core/error.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ember {

inline std::string read_whole_file(const std::string& path, const char* expected) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(path + ": no such file");
  if (!std::filesystem::is_regular_file(status))
    throw Error(path + ": not a regular file, expected " + expected);
  std::ifstream in(path, std::ios::binary);
  const auto size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw Error(path + ": cannot open the file for reading");
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw Error(path + ": reading the file failed");
  return bytes;
}

}  // namespace ember
