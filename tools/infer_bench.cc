#include "tools/infer_bench.h"

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

namespace infer {

namespace {

using Clock = std::chrono::steady_clock;


struct TimedRun {
  Clock::time_point start;
  double latency_ms;
};

// The runs of one thread: its own outputs, so threads share nothing but the session.
// `claim` says whether one more timed run may start.
template <class Claim>
void run_thread(ember::Session& session, const std::vector<ember::Tensor>& inputs, const BenchSettings& settings,
                Claim&& claim, std::vector<TimedRun>& runs, std::atomic<int64_t>& finished) {
  std::vector<ember::Tensor> outputs = session.make_outputs(inputs);
  if (settings.device_io)
    for (ember::Tensor& output : outputs)
      if (!output.empty()) output = session.to_device(output);  // an empty one's shape comes from the data
  for (int i = 0; i < settings.warmup; ++i) session.run(inputs, outputs, run_options_with_timeout(settings.timeout_ms));
  while (claim()) {
    ember::RunOptions o = run_options_with_timeout(settings.timeout_ms);
    o.profile = settings.profile;
    const auto start = Clock::now();
    session.run(inputs, outputs, o);
    runs.push_back({start, std::chrono::duration<double, std::milli>(Clock::now() - start).count()});
    ++finished;
  }
}

}  // namespace

size_t peak_resident_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

ember::RunOptions run_options_with_timeout(double timeout_ms) {
  ember::RunOptions o;
  if (timeout_ms > 0)
    o.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double, std::milli>(timeout_ms));
  return o;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::min(std::max<size_t>(rank, 1), values.size()) - 1];
}

BenchResult benchmark(ember::Session& session, const std::vector<ember::Tensor>& host_inputs,
                      const BenchSettings& settings) {
  if (settings.concurrency > 1 && settings.profile)
    throw ember::Error("--profile times one thread's runs: leave out --concurrency");
  std::vector<ember::Tensor> inputs = host_inputs;
  if (settings.device_io)
    for (ember::Tensor& input : inputs) input = session.to_device(input);
  BenchResult result;
  result.items_per_run = inputs.empty() || inputs[0].rank() == 0 ? 1 : inputs[0].shape()[0];
  const int threads = std::max(settings.concurrency, 1);
  std::atomic<int64_t> started{0};
  std::atomic<int> warmed{0};
  Clock::time_point begin, end_by;  // written once, before `timing` is set
  std::atomic<bool> timing{false};
  std::once_flag timing_starts;
  // Timing starts once every thread has warmed up, so the first timed runs do not
  // share the cores with warm-up runs.
  auto claim = [&] {
    if (warmed.load() < threads) {
      ++warmed;
      while (warmed.load() < threads) std::this_thread::yield();
    }
    std::call_once(timing_starts, [&] {
      begin = Clock::now();
      end_by = settings.duration_s > 0 ? begin + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(settings.duration_s))
                                       : Clock::time_point::max();
      timing = true;
    });
    if (settings.repeat > 0 && started.fetch_add(1) >= settings.repeat) return false;
    return Clock::now() < end_by;
  };
  std::vector<std::vector<TimedRun>> runs(threads);
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<int64_t> finished{0};
  std::atomic<bool> all_done{false};
  std::thread reporter;
  if (settings.progress)
    reporter = std::thread([&] {
      while (!all_done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        if (timing.load() && !all_done.load())
          settings.progress(finished.load(), std::chrono::duration<double>(Clock::now() - begin).count());
      }
    });
  // One thread's runs stay on the calling thread, the one that made the session: with
  // libgomp, every thread that starts parallel regions keeps an OpenMP team of its own,
  // and once a process has more such threads than CPUs, libgomp's idle workers spin
  // 1,000 times instead of 300,000 before they sleep, so every region then pays a
  // futex wake-up. Measured on this project's 2-core machine (2026-11-26): BERT-base
  // batch 1 ran 5% slower in float32 and 20% slower in bf16 on a second thread.
  if (threads == 1) {
    try {
      run_thread(session, inputs, settings, claim, runs[0], finished);
    } catch (...) {
      errors[0] = std::current_exception();
    }
  }
  std::vector<std::thread> pool;
  for (int k = 0; threads > 1 && k < threads; ++k)
    pool.emplace_back([&, k] {
      try {
        run_thread(session, inputs, settings, claim, runs[k], finished);
      } catch (...) {
        errors[k] = std::current_exception();
        warmed += threads;  // the others must not wait for this one
      }
    });
  for (std::thread& t : pool) t.join();
  all_done = true;
  if (reporter.joinable()) reporter.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  result.wall_s = std::chrono::duration<double>(Clock::now() - begin).count();
  std::vector<TimedRun> all;
  for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end(), [](const TimedRun& a, const TimedRun& b) { return a.start < b.start; });
  for (const TimedRun& r : all) {
    result.latencies_ms.push_back(r.latency_ms);
    result.starts_s.push_back(std::chrono::duration<double>(r.start - begin).count());
  }
  if (result.latencies_ms.empty()) throw ember::Error("no timed run finished: give --repeat or a longer --duration");
  return result;
}

void profile_runs(ember::Session& session, const std::vector<ember::Tensor>& inputs, ember::Profile& profile,
                  int max_runs, double max_seconds, double timeout_ms, bool on_calling_thread) {
  // Where the timed runs were (see benchmark()): after runs on other threads, the
  // calling thread's idle OpenMP team made the CPU runs up to 100 times slower.
  std::exception_ptr error;
  const auto runs = [&] {
    try {
      std::vector<ember::Tensor> outputs = session.make_outputs(inputs);
      const auto end_by =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(max_seconds));
      for (int i = 0; i < max_runs && (i == 0 || Clock::now() < end_by); ++i) {
        ember::RunOptions o = run_options_with_timeout(timeout_ms);
        o.profile = &profile;
        session.run(inputs, outputs, o);
      }
    } catch (...) {
      error = std::current_exception();
    }
  };
  if (on_calling_thread) runs();
  else std::thread(runs).join();
  if (error) std::rethrow_exception(error);
}

std::string describe(const BenchResult& r, const BenchSettings& settings) {
  const std::vector<double>& ms = r.latencies_ms;
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const double runs_per_s = static_cast<double>(ms.size()) / r.wall_s;
  char text[512];
  std::snprintf(text, sizeof text,
                "latency over %zu runs (%d calling thread%s, after %d warm-up each): min %.3f ms  mean %.3f  p50 %.3f  "
                "p90 %.3f  p95 %.3f  p99 %.3f  max %.3f\n"
                "throughput: %.2f items/s, %.2f runs/s (batch %lld) over %.2f s%s\n",
                ms.size(), std::max(settings.concurrency, 1), settings.concurrency > 1 ? "s" : "", settings.warmup,
                *std::min_element(ms.begin(), ms.end()), mean, percentile(ms, 50), percentile(ms, 90),
                percentile(ms, 95), percentile(ms, 99), *std::max_element(ms.begin(), ms.end()),
                runs_per_s * static_cast<double>(r.items_per_run), runs_per_s,
                static_cast<long long>(r.items_per_run), r.wall_s,
                settings.device_io ? "; inputs and outputs in device memory (--io device)" : "");
  return text;
}

std::string summary_json(const BenchResult& r, const BenchSettings& settings, const RunDescription& run,
                         const ember::Session& session) {
  using nlohmann::json;
  const std::vector<double>& ms = r.latencies_ms;
  const double runs_per_s = static_cast<double>(ms.size()) / r.wall_s;
  json inputs = json::array();
  for (const auto& [name, t] : run.inputs)
    inputs.push_back({{"name", name}, {"dtype", ember::dtype_name(t.dtype())}, {"shape", t.shape()}});
  const ember::MemoryReport memory = session.memory_report();
  json by_purpose = json::object();
  for (const auto& e : memory.entries) by_purpose[e.device + " " + e.purpose] = e.bytes;
  json out = {
      {"schema", "ember.infer.summary/1"},
      {"model", run.model},
      {"device", run.device},
      {"precision", run.precision},
      {"threads", run.threads},
      {"concurrency", std::max(settings.concurrency, 1)},
      {"io", settings.device_io ? "device" : "host"},
      {"batch", r.items_per_run},
      {"inputs", inputs},
      {"random_inputs", run.random_inputs},
      {"warmup", settings.warmup},
      {"runs", ms.size()},
      {"wall_s", r.wall_s},
      {"throughput", {{"items_per_s", runs_per_s * static_cast<double>(r.items_per_run)}, {"runs_per_s", runs_per_s}}},
      {"latency_ms",
       {{"min", *std::min_element(ms.begin(), ms.end())},
        {"mean", std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size())},
        {"p50", percentile(ms, 50)},
        {"p90", percentile(ms, 90)},
        {"p95", percentile(ms, 95)},
        {"p99", percentile(ms, 99)},
        {"max", *std::max_element(ms.begin(), ms.end())}}},
      {"memory",
       {{"process_peak_resident_bytes", peak_resident_bytes()},
        {"session_bytes", memory.total()},
        {"session_by_purpose", by_purpose}}},
  };
  return out.dump(2) + "\n";
}

}  // namespace infer
