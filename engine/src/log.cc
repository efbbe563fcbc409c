#include "engine/src/log.h"

#include <cstdio>
#include <string>
#include <utility>

namespace ember {

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::None: return "none";
    case LogLevel::Error: return "error";
    case LogLevel::Warning: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "?";
}

Logger::Logger(LogLevel level, LogSink sink) : level_(level), sink_(std::move(sink)) {}

void Logger::log(LogLevel level, std::string_view line) const {
  if (!enabled(level)) return;
  if (sink_) {
    sink_(level, line);
    return;
  }
  // One write per line, so that lines from threads running at once do not interleave.
  const std::string text = std::string("ember: ") + log_level_name(level) + ": " + std::string(line) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace ember
