// What ember says while it works, and where it goes: each Session sends its lines to
// the sink in its SessionOptions (stderr by default), filtered by a level.
#pragma once

#include <functional>
#include <string_view>

namespace ember {

// From the fewest lines to the most; a session passes on lines at its level and below.
// None: no line at all.
enum class LogLevel { None, Error, Warning, Info, Debug };

// Receives one line (no trailing newline) with its level. Called from the thread that
// caused the line (a run, or the session's constructor), possibly several at once:
// a sink shared between threads must be thread-safe. Never called while a run is in
// its steady state (lines come from loading, planning and warnings).
using LogSink = std::function<void(LogLevel level, std::string_view line)>;

// "error", "warning", "info", "debug" ("none" for None).
const char* log_level_name(LogLevel level);

}  // namespace ember
