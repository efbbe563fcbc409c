// infer's benchmark: timed runs of one Session, from one thread or several at once,
// for a number of runs or a length of time; latency percentiles, throughput, memory,
// and the summary as JSON (README, "Benchmarking with infer", states the schema).
#pragma once

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

namespace infer {

struct BenchSettings {
  int warmup = 3;           // untimed runs per thread first
  int repeat = 0;           // timed runs in all (0: as many as `duration_s` allows)
  double duration_s = 0;    // run for this long (0: until `repeat` runs)
  int concurrency = 1;      // threads sharing the session
  double timeout_ms = 0;    // a run past this raises (0: none)
  ember::Profile* profile = nullptr;  // per-node times (one thread only)
  // Inputs and outputs in the session's device memory (Session::to_device), so the
  // timed runs are the model alone, with no host copies; else on the host.
  bool device_io = false;
  // Called about four times a second while timed runs go on, with the runs finished and
  // the seconds since timing began (a progress line).
  std::function<void(int64_t runs, double seconds)> progress;
};

struct BenchResult {
  std::vector<double> latencies_ms;  // one per timed run, in the order the runs started
  std::vector<double> starts_s;      // when each started, in seconds after timing began
  double wall_s = 0;                 // from the first timed run's start to the last's end
  int64_t items_per_run = 1;         // the batch: the first input's first dim
};

// Runs the benchmark. Raises ember::Error as a run would.
BenchResult benchmark(ember::Session& session, const std::vector<ember::Tensor>& inputs, const BenchSettings& settings);

// Profiles runs on one thread, untimed, after a benchmark (so the profiler's cost stays
// out of the timed runs): `max_runs` runs, or fewer once `max_seconds` have passed (at
// least one); on the calling thread when the benchmark's runs were there (concurrency 1).
void profile_runs(ember::Session& session, const std::vector<ember::Tensor>& inputs, ember::Profile& profile,
                  int max_runs, double max_seconds, double timeout_ms, bool on_calling_thread);

// Options for one run: a deadline `timeout_ms` from now (none when 0).
ember::RunOptions run_options_with_timeout(double timeout_ms);

// The most memory this process has held resident so far.
size_t peak_resident_bytes();

// Nearest-rank percentile of `values` (p in (0, 100]).
double percentile(std::vector<double> values, double p);

// The latency and throughput lines infer prints.
std::string describe(const BenchResult& result, const BenchSettings& settings);

// Everything a script needs to compare runs, as one JSON object.
struct RunDescription {
  std::string model, device, precision;
  int threads = 0;
  std::vector<std::pair<std::string, ember::Tensor>> inputs;  // name and tensor (dtype, shape)
  bool random_inputs = false;
};
std::string summary_json(const BenchResult& result, const BenchSettings& settings, const RunDescription& run,
                         const ember::Session& session);

}  // namespace infer
