// Stopping a run from outside it: a CancelToken another thread sets, and the errors a
// run stopped by it or by its deadline raises (RunOptions in <ember/session.h>). They
// live in core because the kernels with long loops (Loop, Scan, RNN/GRU/LSTM) check
// for a stop too.
#pragma once

#include <ember/core/error.h>

#include <atomic>
#include <string>

namespace ember {

// Set by any thread; every run given this token stops at its next check (between
// nodes, and between the iterations of loops and recurrences) with RunCancelled.
// One token may serve many runs; reset() makes it usable again.
class CancelToken {
 public:
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  void reset() noexcept { cancelled_.store(false, std::memory_order_relaxed); }
  // One relaxed load: the runs read it often, and a stop a few checks late is fine.
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

// A run that stopped before its end because it was asked to. The session stays usable:
// the next run starts from scratch and gives complete results.
class RunStopped : public Error {
 public:
  using Error::Error;
};

// Its CancelToken was cancelled.
class RunCancelled : public RunStopped {
 public:
  using RunStopped::RunStopped;
};

// It passed RunOptions::deadline.
class DeadlineExceeded : public RunStopped {
 public:
  using RunStopped::RunStopped;
};

}  // namespace ember
