// A session's logger: its level and sink from SessionOptions, stderr when the options
// give no sink. Lines are built only when their level passes (call enabled() first
// where building a line costs something).
#pragma once

#include <ember/log.h>

#include <string_view>

namespace ember {

class Logger {
 public:
  Logger() = default;
  Logger(LogLevel level, LogSink sink);

  bool enabled(LogLevel level) const { return level != LogLevel::None && level <= level_; }
  void log(LogLevel level, std::string_view line) const;
  void warning(std::string_view line) const { log(LogLevel::Warning, line); }
  void info(std::string_view line) const { log(LogLevel::Info, line); }
  void debug(std::string_view line) const { log(LogLevel::Debug, line); }

 private:
  LogLevel level_ = LogLevel::Warning;
  LogSink sink_;  // empty: stderr
};

}  // namespace ember
