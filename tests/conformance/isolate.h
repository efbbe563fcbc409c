// Running cases in forked children, a few at a time, so that a case that crashes or
// hangs the process is reported as "crashed" and the run goes on.
#pragma once

#include "conformance/cases.h"
#include "conformance/run_case.h"

#include <functional>
#include <vector>

namespace ember::conformance {

struct IsolateOptions {
  int jobs = 1;             // children at once
  double timeout_s = 60;    // per case; a child past it is killed
  bool fork = true;         // false runs each case in this process (for debuggers)
};

// Runs `run` on every case and calls `done(index, result)` in the parent as results
// arrive (in completion order). The parent itself runs no kernel when forking, so
// each child starts with untouched OpenMP and oneDNN state.
void run_isolated(const std::vector<Case>& cases, const std::function<Result(const Case&)>& run,
                  const IsolateOptions& options,
                  const std::function<void(size_t, const Result&)>& done);

}  // namespace ember::conformance
