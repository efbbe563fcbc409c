// What a service embedding ember needs from Session: models from bytes (with or
// without a folder for external data), the model's metadata, a per-session log sink,
// and runs that stop when cancelled or past their deadline, leaving the session usable.
#include "session_models.h"

#include <ember/ember.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;
using test::as_bytes;
using test::same_bits;

const std::string kModel = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";

using test::error_of;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// ---- from bytes

TEST(SessionFromBytes, GivesTheResultsOfTheSameFileBitForBit) {
  const std::string bytes = test::read_whole(kModel);
  Session from_file(kModel, {.num_threads = 1});
  Session from_bytes = Session::from_bytes(as_bytes(bytes), {.num_threads = 1});
  const Tensor x = test::random_float_tensor({2, 3, 32, 32}, 5);
  const auto want = from_file.run({{from_file.inputs()[0].name, x}});
  const auto got = from_bytes.run({{from_bytes.inputs()[0].name, x}});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "output " << i;
  EXPECT_EQ(from_bytes.inputs()[0].name, from_file.inputs()[0].name);
}

TEST(SessionFromBytes, BytesThatAreNotAModelAreAOneLineError) {
  const std::string garbage = "this is not an ONNX model, just some text \x01\x02\x03";
  std::string msg = error_of([&] { Session::from_bytes(as_bytes(garbage)); });
  EXPECT_NE(msg.find("model bytes: not an ONNX model"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  msg = error_of([&] { Session::from_bytes({}); });
  EXPECT_NE(msg.find("model bytes: empty (0 bytes), not an ONNX model"), std::string::npos) << msg;
  const std::string bytes = test::read_whole(kModel);
  msg = error_of([&] { Session::from_bytes(as_bytes(bytes.substr(0, bytes.size() / 2))); });
  EXPECT_NE(msg.find("model bytes: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// y = x + w, w [4] stored in w.bin beside the model.
std::string model_with_external_weight() {
  onnx::ModelProto m = test::new_model();
  auto& g = *m.mutable_graph();
  test::add_input(g, "x", {"4"});
  test::add_output(g, "y", {"4"});
  auto* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  test::add_node(g, "Add", {"x", "w"}, {"y"});
  return m.SerializeAsString();
}

TEST(SessionFromBytes, ExternalDataIsReadFromTheGivenFolderAndRefusedWithoutOne) {
  test::TempDir dir;
  const std::vector<float> w = {1.f, -2.f, 3.5f, 0.25f};
  test::write_file(dir / "w.bin", test::bytes_of(w));
  const std::string bytes = model_with_external_weight();

  const std::string msg = error_of([&] { Session::from_bytes(as_bytes(bytes)); });
  EXPECT_NE(msg.find("tensor 'w' is stored as external data in 'w.bin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no base folder for external data was given"), std::string::npos) << msg;

  Session session = Session::from_bytes(as_bytes(bytes), {}, dir.str());
  const Tensor x = test::random_float_tensor({4}, 1);
  const Tensor y = session.run({{"x", x}})[0];
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data_as<float>()[i], x.data_as<float>()[i] + w[i]) << i;
}

// ---- metadata

TEST(SessionMetadata, SaysWhatTheModelFileSaysAboutItself) {
  onnx::ModelProto m = test::new_model(9, 17);
  m.set_producer_name("ember-test");
  m.set_producer_version("1.2.3");
  m.set_domain("com.example");
  m.set_model_version(42);
  m.set_doc_string("a model that adds one");
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  for (auto [k, v] : {std::pair{"author", "someone"}, std::pair{"license", "MIT"}}) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  auto& g = *m.mutable_graph();
  g.set_name("adder");
  g.set_doc_string("the graph's own words");
  test::add_input(g, "x", {"batch", "4"});
  test::add_output(g, "y", {"batch", "4"});
  test::add_node(g, "Relu", {"x"}, {"y"});

  const Session session = Session::from_bytes(as_bytes(m.SerializeAsString()));
  const ModelMetadata& md = session.metadata();
  EXPECT_EQ(md.producer_name, "ember-test");
  EXPECT_EQ(md.producer_version, "1.2.3");
  EXPECT_EQ(md.domain, "com.example");
  EXPECT_EQ(md.model_version, 42);
  EXPECT_EQ(md.ir_version, 9);
  EXPECT_EQ(md.doc_string, "a model that adds one");
  EXPECT_EQ(md.graph_name, "adder");
  EXPECT_EQ(md.graph_doc_string, "the graph's own words");
  EXPECT_EQ(md.opset_imports, (std::map<std::string, int64_t>{{"", 17}, {"com.microsoft", 1}}));
  EXPECT_EQ(md.metadata_props, (std::map<std::string, std::string>{{"author", "someone"}, {"license", "MIT"}}));
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].dims, (std::vector<std::string>{"batch", "4"}));
}

// ---- graph optimization levels

TEST(SessionOptimization, EveryLevelGivesTheModelsResultsAndSaysWhatItRan) {
  const Tensor x = test::random_float_tensor({2, 3, 32, 32}, 6);
  std::vector<Tensor> results;
  for (GraphOptimization level : {GraphOptimization::None, GraphOptimization::Basic, GraphOptimization::All}) {
    std::vector<std::string> lines;
    Session session(kModel, {.num_threads = 1, .optimization = level, .log_level = LogLevel::Info,
                             .log_sink = [&](LogLevel, std::string_view line) { lines.emplace_back(line); }});
    results.push_back(session.run({{session.inputs()[0].name, x}})[0]);
    const std::string said = lines.size() > 1 ? lines[1] : "";
    if (level == GraphOptimization::None) {
      EXPECT_EQ(lines.size(), 1u) << "only the load line";
    }
    if (level == GraphOptimization::Basic) {
      EXPECT_EQ(said.rfind("graph passes (basic): ", 0), 0u) << said;
    }
    if (level == GraphOptimization::All) {
      EXPECT_EQ(said.rfind("graph passes (all): ", 0), 0u) << said;
    }
  }
  for (size_t k = 1; k < results.size(); ++k)
    for (int64_t i = 0; i < results[0].numel(); ++i)
      EXPECT_NEAR(results[k].data_as<float>()[i], results[0].data_as<float>()[i], 1e-4) << "level " << k << " at " << i;
}

// A MatMul bias written [1, 1, N] (a real exporter's output once failed here: the
// fusion made a node its schema refused). Through Session, every level gives the
// unfused result, shape included, at several batch shapes.
TEST(SessionOptimization, AMatMulBiasOfRankThreeRunsFusedAndMatches) {
  onnx::ModelProto m = test::new_model();
  onnx::GraphProto& g = *m.mutable_graph();
  test::add_input(g, "x", {"batch", "8"});
  test::add_unshaped(g.mutable_output(), "y", onnx::TensorProto::FLOAT);
  std::vector<float> w(8 * 16), bias(16);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : w) v = normal(rng);
  for (float& v : bias) v = normal(rng);
  *g.add_initializer() = test::float_tensor("w", {8, 16}, w);
  *g.add_initializer() = test::float_tensor("bias", {1, 1, 16}, bias);
  test::add_node(g, "MatMul", {"x", "w"}, {"m"}, "matmul");
  test::add_node(g, "Add", {"m", "bias"}, {"h"}, "add");
  test::add_node(g, "Relu", {"h"}, {"y"}, "relu");
  const std::string bytes = m.SerializeAsString();
  Session fused = Session::from_bytes(as_bytes(bytes), {.num_threads = 1});
  Session plain = Session::from_bytes(as_bytes(bytes), {.num_threads = 1, .optimization = GraphOptimization::None});
  for (int64_t batch : {1, 5}) {
    const Tensor x = test::random_float_tensor({batch, 8}, 4);
    const Tensor want = plain.run({{"x", x}})[0];
    const Tensor got = fused.run({{"x", x}})[0];
    ASSERT_EQ(got.shape(), (Shape{1, batch, 16}));
    ASSERT_EQ(want.shape(), got.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5) << "batch " << batch << " at " << i;
  }
  const Tensor x = test::random_float_tensor({5, 8}, 4);
  EXPECT_NE(fused.explain(std::span<const Tensor>(&x, 1)).find("FusedMatMul"), std::string::npos)
      << "the bias and Relu should have fused";
}

// ---- logging

struct Recorder {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogSink sink() {
    return [this](LogLevel level, std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(line));
    };
  }
  size_t count(LogLevel level, const std::string& part) {
    std::lock_guard lock(mutex);
    size_t n = 0;
    for (const auto& [l, text] : lines) n += l == level && text.find(part) != std::string::npos;
    return n;
  }
};

TEST(SessionLog, DebugSaysOneLinePerPlanBuiltAndNothingReachesStderr) {
  Recorder recorder;
  testing::internal::CaptureStderr();
  {
    Session session(kModel, {.num_threads = 1, .log_level = LogLevel::Debug, .log_sink = recorder.sink()});
    for (int64_t batch : {1, 2, 1, 2}) session.run({{session.inputs()[0].name, test::random_float_tensor({batch, 3, 32, 32}, 1)}});
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(recorder.count(LogLevel::Debug, "planned inputs [1, 3, 32, 32]"), 1u);
  EXPECT_EQ(recorder.count(LogLevel::Debug, "planned inputs [2, 3, 32, 32]"), 1u);
  EXPECT_EQ(recorder.count(LogLevel::Debug, " steps, cpu arena "), 2u);
  EXPECT_EQ(recorder.count(LogLevel::Info, "loaded " + kModel), 1u);
  EXPECT_EQ(recorder.count(LogLevel::Info, "graph passes (all)"), 1u);
}

TEST(SessionLog, TheLevelFiltersWhatTheSinkGets) {
  Recorder recorder;
  Session session(kModel, {.num_threads = 1, .log_level = LogLevel::Warning, .log_sink = recorder.sink()});
  session.run({{session.inputs()[0].name, test::random_float_tensor({1, 3, 32, 32}, 1)}});
  EXPECT_TRUE(recorder.lines.empty()) << recorder.lines.front().second;
}

TEST(SessionLog, LevelNoneWithTheDefaultSinkPrintsNothing) {
  testing::internal::CaptureStderr();
  {
    Session session(kModel, {.num_threads = 1, .log_level = LogLevel::None});
    session.run({{session.inputs()[0].name, test::random_float_tensor({1, 3, 32, 32}, 1)}});
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(SessionLog, TheDefaultSinkIsStderrWithTheLevelNamed) {
  testing::internal::CaptureStderr();
  {
    Session session(kModel, {.num_threads = 1, .log_level = LogLevel::Info});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ember: info: loaded " + kModel), std::string::npos) << err;
}

TEST(SessionLog, AnEagerTailIsSaidAtDebug) {
  Recorder recorder;
  Session session = Session::from_bytes(as_bytes(test::loop_model(false)),
                                        {.num_threads = 1, .log_level = LogLevel::Debug, .log_sink = recorder.sink()});
  session.run({{"a0", test::random_float_tensor({4}, 1)}, {"m", test::int64_scalar(3)}});
  EXPECT_EQ(recorder.count(LogLevel::Debug, "eager tail of 1 node from Loop 'loop' on"), 1u);
  EXPECT_EQ(recorder.count(LogLevel::Debug, "Loop 'loop' runs eagerly: its trip count is known only at run time"), 1u);
}

// ---- cancel and deadline

// Runs `run` on this thread, cancels `token` from another after `after`; returns the
// milliseconds from the cancel to the run's end, and the error's message.
template <class Run>
std::pair<double, std::string> cancel_after(CancelToken& token, std::chrono::milliseconds after, Run run) {
  std::atomic<int64_t> cancelled_at{0};
  std::thread canceller([&] {
    std::this_thread::sleep_for(after);
    cancelled_at = Clock::now().time_since_epoch().count();
    token.cancel();
  });
  std::string message;
  try {
    run();
    ADD_FAILURE() << "the run was not cancelled";
  } catch (const RunCancelled& e) {
    message = e.what();
  }
  const auto ended = Clock::now().time_since_epoch().count();
  canceller.join();
  return {std::chrono::duration<double, std::milli>(Clock::duration(ended - cancelled_at.load())).count(), message};
}

// Planned and eager Loops: cancelled mid-way within 50 ms, and the next run is right.
TEST(SessionCancel, ALongLoopStopsPromptlyAndTheNextRunIsRight) {
  for (const bool planned : {true, false}) {
    SCOPED_TRACE(planned ? "planned Loop" : "eager Loop");
    Session session = Session::from_bytes(as_bytes(test::loop_model(planned)), {.num_threads = 1});
    const Tensor a0 = test::random_float_tensor({8}, 2);
    auto inputs_for = [&](int64_t trips) {
      return std::vector<std::pair<std::string, Tensor>>{
          {"a0", a0}, planned ? std::pair{std::string("steps"), Tensor(DType::Float32, {trips})}
                              : std::pair{std::string("m"), test::int64_scalar(trips)}};
    };
    // Long enough that it cannot end before the cancel: well over a second.
    const int64_t long_trips = planned ? 20'000'000 : 2'000'000;
    const auto long_inputs = inputs_for(long_trips);  // before the clock starts: 80 MB to fill
    CancelToken token;
    RunOptions options;
    options.cancel = &token;
    const auto [latency_ms, message] = cancel_after(token, std::chrono::milliseconds(100),
                                                    [&] { session.run(long_inputs, options); });
    EXPECT_LT(latency_ms, 50) << "from cancel() to the run's end";
    EXPECT_NE(message.find("run cancelled after "), std::string::npos) << message;
    EXPECT_NE(message.find(" nodes"), std::string::npos) << message;

    // Still cancelled: the next run with this token stops before it starts.
    const std::string again = error_of([&] { session.run(inputs_for(10), options); });
    EXPECT_EQ(again, "run cancelled before its first node");
    token.reset();
    for (int64_t trips : {1000, 10}) {
      const Tensor got = session.run(inputs_for(trips), options)[0];
      EXPECT_TRUE(same_bits(got, test::loop_reference(a0, trips))) << trips << " trips";
    }
  }
}

TEST(SessionCancel, ALongLstmStopsMidSequenceAndTheNextRunIsRight) {
  Session session = Session::from_bytes(as_bytes(test::lstm_model(8, 16)), {.num_threads = 2});
  const Tensor short_x = test::random_float_tensor({50, 2, 8}, 4);
  const Tensor want = session.run({{"X", short_x}})[0];
  const Tensor long_x = test::random_float_tensor({1'000'000, 2, 8}, 5);
  CancelToken token;
  RunOptions options;
  options.cancel = &token;
  const auto [latency_ms, message] =
      cancel_after(token, std::chrono::milliseconds(100), [&] { session.run({{"X", long_x}}, options); });
  EXPECT_LT(latency_ms, 50);
  EXPECT_NE(message.find("run cancelled"), std::string::npos) << message;
  token.reset();
  EXPECT_TRUE(same_bits(session.run({{"X", short_x}}, options)[0], want));
}

// A plan of little work runs on the calling thread alone (waking a second thread for it
// costs more than the split saves), saying so in the explanation; a plan of more work
// keeps the session's threads. Both give a one-thread session's bits.
TEST(SessionThreads, APlanTooSmallForASecondThreadRunsOnOne) {
  const std::string model = test::lstm_model(64, 64);
  Session two = Session::from_bytes(as_bytes(model), {.num_threads = 2});
  Session one = Session::from_bytes(as_bytes(model), {.num_threads = 1});
  // 0.26 MFLOP and 0.14 MB of weights; then 134 MFLOP.
  for (const auto& [shape, serial] : {std::pair{Shape{4, 1, 64}, true}, std::pair{Shape{64, 32, 64}, false}}) {
    SCOPED_TRACE("X " + shape_to_string(shape));
    const Tensor x = test::random_float_tensor(shape, 6);
    const std::string explanation = two.explain(std::span<const Tensor>(&x, 1));
    EXPECT_EQ(explanation.find("runs on one thread") != std::string::npos, serial) << explanation;
    EXPECT_TRUE(same_bits(two.run({{"X", x}})[0], one.run({{"X", x}})[0]));
  }
}

TEST(SessionDeadline, APassedDeadlineStopsTheRunBeforeAnyWork) {
  Recorder recorder;
  Session session = Session::from_bytes(as_bytes(test::loop_model(true)),
                                        {.num_threads = 1, .log_level = LogLevel::Debug, .log_sink = recorder.sink()});
  RunOptions options;
  options.deadline = Clock::now() - std::chrono::milliseconds(5);
  const Tensor a0 = test::random_float_tensor({8}, 2);
  std::string msg;
  try {
    session.run({{"a0", a0}, {"steps", Tensor(DType::Float32, {100})}}, options);
    ADD_FAILURE() << "no error";
  } catch (const DeadlineExceeded& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("run passed its deadline ("), std::string::npos) << msg;
  EXPECT_NE(msg.find("ms before the run began) before its first node"), std::string::npos) << msg;
  EXPECT_EQ(recorder.count(LogLevel::Debug, "planned inputs"), 0u) << "it planned";
  // The span form as well.
  std::vector<Tensor> in = {a0, Tensor(DType::Float32, {100})};
  options.deadline = Clock::time_point::max();
  std::vector<Tensor> out = session.make_outputs(in);
  options.deadline = Clock::now();
  EXPECT_THROW(session.run(in, out, options), DeadlineExceeded);
}

TEST(SessionDeadline, ADeadlineMidRunStopsItPromptlyAndTheNextRunIsRight) {
  Session session = Session::from_bytes(as_bytes(test::loop_model(true)), {.num_threads = 1});
  const Tensor a0 = test::random_float_tensor({8}, 2);
  const std::vector<std::pair<std::string, Tensor>> long_inputs = {{"a0", a0},
                                                                   {"steps", Tensor(DType::Float32, {20'000'000})}};
  RunOptions options;
  const auto start = Clock::now();
  options.deadline = start + std::chrono::milliseconds(100);
  std::string msg;
  try {
    session.run(long_inputs, options);
    ADD_FAILURE() << "no error";
  } catch (const DeadlineExceeded& e) {
    msg = e.what();
  }
  const double elapsed = ms_since(start);
  EXPECT_GE(elapsed, 100);
  EXPECT_LT(elapsed, 150) << "past the deadline by more than 50 ms";
  // "of 100 ms" (99 if this thread lost the CPU between setting the deadline and the run)
  EXPECT_NE(msg.find("run passed its deadline of "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" ms after "), std::string::npos) << msg;
  options.deadline = Clock::now() + std::chrono::seconds(60);
  EXPECT_TRUE(same_bits(session.run({{"a0", a0}, {"steps", Tensor(DType::Float32, {500})}}, options)[0],
                        test::loop_reference(a0, 500)));
}

// The checks between nodes, in the static plan of a model of many nodes.
TEST(SessionCancel, ACancelledTokenStopsAPlainModelAndItRunsAgainAfterReset) {
  Session session(kModel, {.num_threads = 1});
  const Tensor x = test::random_float_tensor({1, 3, 32, 32}, 9);
  const Tensor want = session.run({{session.inputs()[0].name, x}})[0];
  CancelToken token;
  token.cancel();
  RunOptions options;
  options.cancel = &token;
  EXPECT_THROW(session.run({{session.inputs()[0].name, x}}, options), RunCancelled);
  token.reset();
  EXPECT_TRUE(same_bits(session.run({{session.inputs()[0].name, x}}, options)[0], want));
}

// A caller's CUDA stream means nothing to a CPU session: one clear error, no run.
TEST(SessionRunOptions, ACudaStreamOnACpuSessionIsAClearError) {
  Session session(kModel, {.num_threads = 1});
  const Tensor x = test::random_float_tensor({1, 3, 32, 32}, 9);
  int not_a_stream = 0;
  RunOptions options;
  options.cuda_stream = &not_a_stream;
  const std::string msg = error_of([&] { session.run({{session.inputs()[0].name, x}}, options); });
  EXPECT_NE(msg.find("RunOptions::cuda_stream"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  options.cuda_stream = nullptr;
  EXPECT_EQ(session.run({{session.inputs()[0].name, x}}, options)[0].shape(), (Shape{1, 10}));
}

}  // namespace
}  // namespace ember
