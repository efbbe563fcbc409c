#include "ops/run_stop.h"

#include <cmath>
#include <string>

namespace ember {

namespace {

// Whole milliseconds, rounded: a deadline set "now + 100 ms" just before the run began
// reads as 100, not 99.
std::string ms(RunStop::Clock::duration d) {
  return std::to_string(std::llround(std::chrono::duration<double, std::milli>(d).count()));
}

}  // namespace

void RunStop::raise() const {
  const std::string progress = nodes_done == 0 ? "before its first node"
                                               : "after " + std::to_string(nodes_done) +
                                                     (nodes_done == 1 ? " node" : " nodes");
  if (cancel && cancel->cancelled()) throw RunCancelled("run cancelled " + progress);
  if (deadline <= start)
    throw DeadlineExceeded("run passed its deadline (" + ms(start - deadline) + " ms before the run began) " +
                           progress);
  throw DeadlineExceeded("run passed its deadline of " + ms(deadline - start) + " ms " + progress + " (" +
                         ms(Clock::now() - start) + " ms in)");
}

}  // namespace ember
