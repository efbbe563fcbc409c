// Many threads on shared sessions, as a service runs them: 16 threads share one LSTM
// session and one CNN session, with input shapes that change from run to run (batch
// 1..4, sequence lengths 1..300), and runs that are cancelled from another thread or
// given deadlines, through plan caches too small to hold every shape. Every run that
// succeeds must give the single-threaded reference output bit for bit; a stopped run
// must raise RunCancelled (token) or DeadlineExceeded (deadline) and nothing else.
//
// The threads run for EMBER_STRESS_SECONDS seconds (default 3, what CI runs); a soak:
//   EMBER_STRESS_SECONDS=600 ./build/tests/test_engine --gtest_filter='SessionStress.*'
#include "session_models.h"

#include <ember/ember.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;
using test::same_bits;

const std::string kCnn = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";

double stress_seconds() {
  const char* env = std::getenv("EMBER_STRESS_SECONDS");
  return env ? std::atof(env) : 3.0;
}

// One input set of one session, with its single-threaded outputs.
struct Case {
  Session* session;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<Tensor> want;
  std::string name;
};

enum class Mode { Plain, Token, Deadline, PastDeadline };

struct Tally {
  std::atomic<int64_t> ok{0}, cancelled{0}, timed_out{0}, failures{0};
  std::mutex mutex;
  std::vector<std::string> messages;  // the first few failures

  void fail(const std::string& what) {
    ++failures;
    std::lock_guard lock(mutex);
    if (messages.size() < 10) messages.push_back(what);
  }
};

void run_one(const Case& c, Mode mode, CancelToken& token, std::mt19937& rng, Tally& tally) {
  RunOptions options;
  if (mode == Mode::Token) {
    token.reset();
    options.cancel = &token;
  }
  if (mode == Mode::Deadline)
    options.deadline = Clock::now() + std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng));
  if (mode == Mode::PastDeadline) options.deadline = Clock::now() - std::chrono::milliseconds(1);
  try {
    const std::vector<Tensor> got = c.session->run(c.inputs, options);
    if (mode == Mode::PastDeadline) return tally.fail(c.name + ": a run past its deadline ran");
    for (size_t i = 0; i < got.size(); ++i)
      if (!same_bits(got[i], c.want[i])) return tally.fail(c.name + ": output " + std::to_string(i) + " differs");
    ++tally.ok;
  } catch (const RunCancelled& e) {
    if (mode != Mode::Token) return tally.fail(c.name + ": cancelled without a token: " + e.what());
    ++tally.cancelled;
  } catch (const DeadlineExceeded& e) {
    if (mode != Mode::Deadline && mode != Mode::PastDeadline)
      return tally.fail(c.name + ": deadline without one: " + e.what());
    ++tally.timed_out;
  } catch (const std::exception& e) {
    tally.fail(c.name + ": " + e.what());
  }
}

TEST(SessionStress, SixteenThreadsOnTwoSessionsWithShiftingShapesCancelsAndDeadlines) {
  // Plan caches smaller than the shapes each session sees: plans are evicted and made
  // again while other threads run them.
  Session lstm = Session::from_bytes(test::as_bytes(test::lstm_model(8, 16)),
                                     {.num_threads = 1, .log_level = LogLevel::None, .plan_cache_max_plans = 5});
  Session cnn(kCnn, {.num_threads = 1, .log_level = LogLevel::None, .plan_cache_max_plans = 2});

  std::vector<Case> cases;
  uint32_t seed = 100;
  for (int64_t seq : {1, 7, 64, 300})
    for (int64_t batch : {1, 2, 3, 4}) {
      Case c{&lstm, {{"X", test::random_float_tensor({seq, batch, 8}, seed++)}}, {}, ""};
      c.name = "lstm seq " + std::to_string(seq) + " batch " + std::to_string(batch);
      cases.push_back(std::move(c));
    }
  for (int64_t batch : {1, 2, 3, 4}) {
    Case c{&cnn, {{cnn.inputs()[0].name, test::random_float_tensor({batch, 3, 32, 32}, seed++)}}, {}, ""};
    c.name = "cnn batch " + std::to_string(batch);
    cases.push_back(std::move(c));
  }
  for (Case& c : cases) c.want = c.session->run(c.inputs);  // one thread: the reference

  constexpr int kThreads = 16;
  std::vector<CancelToken> tokens(kThreads);
  std::atomic<bool> done{false};
  Tally tally;
  const auto end = Clock::now() + std::chrono::duration<double>(stress_seconds());

  // Cancels a random thread's token every 0..2 ms.
  std::thread canceller([&] {
    std::mt19937 rng(1);
    while (!done) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 2000)(rng)));
      tokens[std::uniform_int_distribution<int>(0, kThreads - 1)(rng)].cancel();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      while (Clock::now() < end) {
        const Case& c = cases[std::uniform_int_distribution<size_t>(0, cases.size() - 1)(rng)];
        const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
        const Mode mode = roll < 50 ? Mode::Plain : roll < 75 ? Mode::Token : roll < 95 ? Mode::Deadline
                                                                                        : Mode::PastDeadline;
        run_one(c, mode, tokens[t], rng, tally);
      }
    });
  for (auto& w : workers) w.join();
  done = true;
  canceller.join();

  for (const std::string& m : tally.messages) ADD_FAILURE() << m;
  EXPECT_EQ(tally.failures, 0);
  EXPECT_GT(tally.ok, 0);
  EXPECT_GT(tally.cancelled, 0) << "no run was cancelled: the test did not test cancelling";
  EXPECT_GT(tally.timed_out, 0);
  std::cout << "[ stress ] " << stress_seconds() << " s: " << tally.ok << " runs right, " << tally.cancelled
            << " cancelled, " << tally.timed_out << " past their deadline; plans evicted: "
            << lstm.memory_report().plans_evicted + cnn.memory_report().plans_evicted << "\n";
  EXPECT_GT(lstm.memory_report().plans_evicted, 0u) << "the plan cache never evicted: the test lost its point";

  // After all that, every case still gives its reference.
  for (const Case& c : cases) {
    const std::vector<Tensor> got = c.session->run(c.inputs);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], c.want[i])) << c.name;
  }
}

// The rest of what a service calls on a shared session while runs go on: explain,
// make_outputs, the memory reports, profiled runs, runs into the caller's outputs, a
// log sink at Debug (every new plan logs), with two intra-op threads per run (the
// kernels' parallel regions and oneDNN's primitives run from several runs at once);
// and a Loop planned ahead (sub-plan state per run) and one run eagerly (eager tail).
TEST(SessionStress, ExplainsReportsAndProfiledRunsBesideRunsOnTwoIntraOpThreads) {
  std::atomic<int64_t> lines{0};
  const LogSink sink = [&](LogLevel, std::string_view) { ++lines; };
  Session lstm = Session::from_bytes(test::as_bytes(test::lstm_model(8, 16)),
                                     {.num_threads = 2, .log_level = LogLevel::Debug, .log_sink = sink,
                                      .plan_cache_max_plans = 3});
  Session cnn(kCnn, {.num_threads = 2, .log_level = LogLevel::Debug, .log_sink = sink, .plan_cache_max_plans = 2});
  Session planned_loop = Session::from_bytes(test::as_bytes(test::loop_model(true)),
                                             {.num_threads = 2, .log_level = LogLevel::Debug, .log_sink = sink});
  Session eager_loop = Session::from_bytes(test::as_bytes(test::loop_model(false)),
                                           {.num_threads = 2, .log_level = LogLevel::Debug, .log_sink = sink});

  std::vector<Case> cases;
  uint32_t seed = 500;
  for (int64_t seq : {1, 9, 40})
    for (int64_t batch : {1, 3}) {
      Case c{&lstm, {{"X", test::random_float_tensor({seq, batch, 8}, seed++)}}, {}, ""};
      c.name = "lstm seq " + std::to_string(seq) + " batch " + std::to_string(batch);
      cases.push_back(std::move(c));
    }
  for (int64_t batch : {1, 2, 3}) {
    Case c{&cnn, {{cnn.inputs()[0].name, test::random_float_tensor({batch, 3, 32, 32}, seed++)}}, {}, ""};
    c.name = "cnn batch " + std::to_string(batch);
    cases.push_back(std::move(c));
  }
  for (int64_t trips : {3, 17}) {
    const Tensor a0 = test::random_float_tensor({8}, seed++);
    cases.push_back({&planned_loop, {{"a0", a0}, {"steps", Tensor(DType::Float32, {trips})}}, {},
                     "planned loop of " + std::to_string(trips)});
    cases.push_back({&eager_loop, {{"a0", a0}, {"m", test::int64_scalar(trips)}}, {},
                     "eager loop of " + std::to_string(trips)});
  }
  for (Case& c : cases) c.want = c.session->run(c.inputs);

  Tally tally;
  std::atomic<int64_t> explained{0}, profiled{0}, reported{0};
  const auto end = Clock::now() + std::chrono::duration<double>(stress_seconds());
  auto same = [&](const Case& c, const std::vector<Tensor>& got, const char* how) {
    for (size_t i = 0; i < got.size(); ++i)
      if (!same_bits(got[i], c.want[i])) return tally.fail(c.name + ": " + how + " output " + std::to_string(i) + " differs");
    ++tally.ok;
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < 6; ++t)
    workers.emplace_back([&, t] {
      std::mt19937 rng(2000 + t);
      while (Clock::now() < end) {
        const Case& c = cases[std::uniform_int_distribution<size_t>(0, cases.size() - 1)(rng)];
        std::vector<Tensor> x;  // the inputs in graph order
        for (const auto& [name, t] : c.inputs) x.push_back(t);
        const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
        try {
          if (roll < 40) {
            same(c, c.session->run(c.inputs), "a run's");
          } else if (roll < 60) {
            std::vector<Tensor> out = c.session->make_outputs(x);
            c.session->run(x, out);
            same(c, out, "a run into the caller's outputs:");
          } else if (roll < 75) {
            Profile profile;
            RunOptions options;
            options.profile = &profile;
            same(c, c.session->run(c.inputs, options), "a profiled run's");
            if (profile.timings.empty() || profile.runs != 1) tally.fail(c.name + ": a profiled run timed nothing");
            ++profiled;
          } else if (roll < 85) {
            if (c.session->explain(x).empty()) tally.fail(c.name + ": an empty explanation");
            ++explained;
          } else {
            const MemoryReport report = c.session->memory_report();
            if (report.plans == 0 || c.session->memory().empty()) tally.fail(c.name + ": an empty memory report");
            ++reported;
          }
        } catch (const std::exception& e) {
          tally.fail(c.name + ": " + e.what());
        }
      }
    });
  for (auto& w : workers) w.join();

  for (const std::string& m : tally.messages) ADD_FAILURE() << m;
  EXPECT_EQ(tally.failures, 0);
  EXPECT_GT(tally.ok, 0);
  EXPECT_GT(lines, 0) << "no plan was logged: the sink was not exercised";
  std::cout << "[ stress ] " << stress_seconds() << " s: " << tally.ok << " runs right (" << profiled
            << " profiled), " << explained << " explained, " << reported << " memory reports, " << lines
            << " log lines\n";
}

}  // namespace
}  // namespace ember
