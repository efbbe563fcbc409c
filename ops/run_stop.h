// How a run learns that it should stop: its CancelToken was cancelled or its deadline
// passed. The executor checks between nodes; kernels with long loops of their own
// (Loop, Scan, RNN/GRU/LSTM) check between iterations through RunArgs::stop. A check
// costs one relaxed load, plus a read of the steady clock when the run has a deadline;
// it never allocates.
#pragma once

#include <ember/core/cancel.h>

#include <chrono>
#include <cstddef>

namespace ember {

struct RunStop {
  using Clock = std::chrono::steady_clock;

  const CancelToken* cancel = nullptr;
  Clock::time_point deadline = Clock::time_point::max();  // max: none
  Clock::time_point start;  // when the run began, for the message
  // Nodes run so far (a loop body's once per iteration), for the message. Only the
  // thread driving the run writes it (kernels' worker threads only call requested()).
  mutable size_t nodes_done = 0;

  bool has_deadline() const { return deadline != Clock::time_point::max(); }
  bool requested() const {
    return (cancel && cancel->cancelled()) || (has_deadline() && Clock::now() >= deadline);
  }
  // Raises RunCancelled or DeadlineExceeded when a stop is requested.
  void check() const {
    if (requested()) raise();
  }
  // Counts one node done, then checks.
  void node_done() const {
    ++nodes_done;
    check();
  }
  [[noreturn]] void raise() const;
};

// check() on a stop that may be absent (RunArgs::stop is null outside a run: constant
// folding, kernel tests).
inline void check_stop(const RunStop* stop) {
  if (stop) stop->check();
}

}  // namespace ember
