// The infer command line as a user meets it: bad input of every kind gets one clear
// line on stderr and exit code 1 (usage errors 2); good input writes its outputs.
#include <ember/ember.h>

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result infer(const std::string& args) { return infer_with_env("", args); }

  // `env` as a shell's variable assignments (and `env -u NAME` to remove one).
  Result infer_with_env(const std::string& env, const std::string& args) {
    std::string cmd = env;
    cmd += std::string(" ") + EMBER_INFER + " " + args + " >" + (dir_ / "out.txt").string() + " 2>" +
           (dir_ / "err.txt").string();
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "out.txt"), slurp(dir_ / "err.txt")};
  }

  // x [n, 4] float -> Relu -> "y:out/1", plus whatever `edit` changes.
  std::string write_model(const std::string& file, void (*edit)(onnx::ModelProto&) = nullptr) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("relu");
    auto* in = g->add_input();
    in->set_name("x");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_param("n");
    shape->add_dim()->set_dim_value(4);
    auto* out = g->add_output();
    out->set_name("y:out/1");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("relu1");
    n->add_input("x");
    n->add_output("y:out/1");
    if (edit) edit(m);
    const fs::path p = dir_ / file;
    std::ofstream f(p, std::ios::binary);
    m.SerializeToOstream(&f);
    return p.string();
  }

  std::string write_input(const std::string& file, ember::DType dtype, ember::Shape shape) {
    ember::Tensor t(dtype, shape);
    std::mt19937 rng(5);
    if (dtype == ember::DType::Float32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(rng() % 200) / 10 - 10;
    const fs::path p = dir_ / file;
    ember::write_npy(p.string(), t);
    return p.string();
  }

  // One clear line, naming what is wrong.
  static void expect_one_line_error(const Result& r, const std::string& words) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << "stderr: " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  }

  fs::path dir_;
};

TEST_F(Cli, RunsAModelAndWritesEscapedOutputNames) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {3, 4});
  const Result r = infer(model + " " + x + " -o " + (dir_ / "outs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("y:out/1: float32 [3, 4]"), std::string::npos) << r.out;
  const ember::Tensor y = ember::read_npy((dir_ / "outs" / "y%3Aout%2F1.npy").string());
  const ember::Tensor xin = ember::read_npy(x);
  ASSERT_EQ(y.shape(), (ember::Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y.data_as<float>()[i], std::max(0.0f, xin.data_as<float>()[i]));
}

TEST_F(Cli, AFileThatIsNotAModelIsRefused) {
  std::ofstream(dir_ / "junk.onnx") << "this is not a protobuf at all \x01\x02\xff";
  expect_one_line_error(infer((dir_ / "junk.onnx").string() + " x.npy"), "junk.onnx");
}

TEST_F(Cli, ATruncatedModelIsRefused) {
  const auto model = write_model("m.onnx");
  const std::string bytes = slurp(model);
  std::ofstream(dir_ / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_one_line_error(infer((dir_ / "cut.onnx").string() + " x.npy"), "cut.onnx");
}

TEST_F(Cli, AModelWithACycleIsRefused) {
  const auto model = write_model("cycle.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    g->mutable_node(0)->set_input(0, "z");
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("relu2");
    n->add_input("y:out/1");
    n->add_output("z");
  });
  expect_one_line_error(infer(model + " x.npy"), "cycle");
}

TEST_F(Cli, AMissingInitializerIsRefused) {
  const auto model = write_model("missing.onnx", [](onnx::ModelProto& m) {
    m.mutable_graph()->mutable_node(0)->set_input(0, "weights_that_are_not_there");
  });
  expect_one_line_error(infer(model + " x.npy"), "weights_that_are_not_there");
}

TEST_F(Cli, UnsupportedOpsAreAllListedByNode) {
  const auto model = write_model("odd.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    for (const char* name : {"frob1", "frob2"}) {
      auto* n = g->add_node();
      n->set_op_type("Frobnicate");
      n->set_name(name);
      n->add_input("x");
      n->add_output(std::string(name) + "_out");
    }
  });
  const auto x = write_input("x.npy", ember::DType::Float32, {1, 4});
  const Result r = infer(model + " " + x);
  expect_one_line_error(r, "Frobnicate 'frob1'");
  EXPECT_NE(r.err.find("Frobnicate 'frob2'"), std::string::npos) << r.err;
}

TEST_F(Cli, AnInputOfTheWrongDtypeIsRefused) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Int64, {2, 4});
  expect_one_line_error(infer(model + " " + x), "input 'x' must be float32, got int64");
}

TEST_F(Cli, AnInputOfTheWrongShapeIsRefused) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 5});
  expect_one_line_error(infer(model + " " + x), "input 'x' must have shape [n, 4], got [2, 5]");
}

// Given some inputs, every input must be given; given none, infer makes them.
TEST_F(Cli, AMissingInputIsRefused) {
  const auto model = write_model("m.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    auto* in = g->add_input();
    *in = g->input(0);
    in->set_name("x2");
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->add_input("x2");
    n->add_output("y2");
    auto* out = g->add_output();
    *out = g->output(0);
    out->set_name("y2");
  });
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  expect_one_line_error(infer(model + " " + x), "input 'x2'");
}

TEST_F(Cli, WithNoInputFilesItRunsOnRandomInputsOfTheShapesAsked) {
  const auto model = write_model("m.onnx");
  Result r = infer(model + " --shape n=3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("random inputs: x float32 [3, 4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("y:out/1: float32 [3, 4]"), std::string::npos) << r.out;
  r = infer(model + " --shape x=5x4");
  EXPECT_NE(r.out.find("random inputs: x float32 [5, 4]"), std::string::npos) << r.out;
  r = infer(model);  // n unset: 1, and said so
  EXPECT_NE(r.out.find("random inputs: x float32 [1, 4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("set to 1: n"), std::string::npos) << r.out;
  expect_one_line_error(infer(model + " --shape m=3"), "'m' is neither an input nor a symbolic dim");
  expect_one_line_error(infer(model + " --shape n=-3"), "is not a size");
  expect_one_line_error(infer(model + " --shape x=5x4x1"), "the input has rank 2, got 3 dims");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  expect_one_line_error(infer(model + " " + x + " --shape n=3"), "--shape sets the shapes of random inputs");
}

// Token ids stay below the vocabulary they index: a Gather of a [10, 4] table.
TEST_F(Cli, RandomIndicesStayBelowTheTableTheyIndex) {
  const auto model = write_model("m.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    auto* table = g->add_initializer();
    table->set_name("table");
    table->set_data_type(onnx::TensorProto::FLOAT);
    table->add_dims(10);
    table->add_dims(4);
    for (int i = 0; i < 40; ++i) table->add_float_data(static_cast<float>(i));
    auto* relu = g->mutable_node(0);
    relu->set_input(0, "rows");
    auto* gather = g->add_node();
    gather->set_op_type("Gather");
    gather->add_input("table");
    gather->add_input("x");
    gather->add_output("rows");
    g->mutable_node()->SwapElements(0, 1);
  });
  const Result r = infer(model + " --shape n=200 -o " + (dir_ / "outs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("x int64 [200, 4] (below 10)"), std::string::npos) << r.out;
}

// The benchmark: runs from several threads for a time, every statistic, the summary.
TEST_F(Cli, BenchmarksFromSeveralThreadsAndWritesTheSummary) {
  const auto model = write_model("m.onnx");
  const auto summary = (dir_ / "summary.json").string();
  Result r = infer(model + " --shape n=8 --concurrency 3 --repeat 30 --summary-json " + summary);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("latency over 30 runs (3 calling threads"), std::string::npos) << r.out;
  for (const char* word : {"min ", "mean ", "p50 ", "p90 ", "p95 ", "p99 ", "max ", "items/s"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " in " << r.out;
  const std::string json = slurp(summary);
  for (const char* key : {"\"schema\": \"ember.infer.summary/1\"", "\"concurrency\": 3", "\"runs\": 30",
                          "\"p95\"", "\"items_per_s\"", "\"process_peak_resident_bytes\"", "\"random_inputs\": true"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  r = infer(model + " --duration 0.3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // It times runs for at least 0.3 s; on a loaded machine the last run may end well after.
  const size_t over = r.out.find(" over ", r.out.find("throughput:"));
  ASSERT_NE(over, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(over + 6)), 0.3) << r.out;
  expect_one_line_error(infer(model + " --duration 0.2 --concurrency 2 --profile"), "leave out --concurrency");
}

// --report: one page with nothing fetched from elsewhere, every name from the model
// escaped (a node, an op's input, the graph input can hold markup).
TEST_F(Cli, ReportIsOneSelfContainedPageWithEveryModelStringEscaped) {
  const auto model = write_model("m.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    g->mutable_input(0)->set_name("x<i>&");
    g->mutable_node(0)->set_input(0, "x<i>&");
    g->mutable_node(0)->set_name("<img src=x onerror=\"alert(1)\">&'");
  });
  const auto page = (dir_ / "r.html").string();
  const Result r = infer(model + " --shape n=8 --concurrency 2 --repeat 40 --report " + page);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report written to " + page), std::string::npos) << r.out;
  const std::string html = slurp(page);
  for (const char* part : {"<!DOCTYPE html>", "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;",
                           "x&lt;i&gt;&amp; float32 [8, 4] (random)", "<th>p99</th>", "<rect class=\"bar\"",
                           "<circle class=\"point\"", "Profiled after the timed runs", "<td>40</td>",
                           "process peak resident", "The plan (infer --explain)"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("x<i>"), std::string::npos);
  // Nothing to fetch: no links, no sources; the one URL is SVG's namespace name.
  for (const char* fetch : {"<link", "src=\"", "https:", "@import"}) EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
}

TEST_F(Cli, ReportNeedsABenchmarkAndAWritablePath) {
  const auto model = write_model("m.onnx");
  const Result usage = infer(model + " --shape n=2 --report " + (dir_ / "r.html").string());
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("--repeat N or --duration S"), std::string::npos) << usage.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
  expect_one_line_error(infer(model + " --shape n=2 --repeat 3 --report " + (dir_ / "no" / "r.html").string()),
                        "cannot write the report to");
}

TEST_F(Cli, AnUnknownInputNameIsRefused) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  expect_one_line_error(infer(model + " nosuch=" + x), "no input named 'nosuch'");
}

TEST_F(Cli, AMalformedNpyFileIsRefused) {
  const auto model = write_model("m.onnx");
  std::ofstream(dir_ / "bad.npy") << "\x93NUMPY garbage";
  expect_one_line_error(infer(model + " " + (dir_ / "bad.npy").string()), "bad.npy");
}

TEST_F(Cli, ExternalDataOutsideTheModelFolderIsRefused) {
  const auto model = write_model("ext.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    auto* t = g->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value("../../etc/passwd");
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("r2");
    n->add_input("w");
    n->add_output("w2");
  });
  const Result r = infer(model + " x.npy");
  expect_one_line_error(r, "../../etc/passwd");
}

TEST_F(Cli, CudaWithoutAGpuIsAClearError) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  const ember::GpuReport gpus = ember::list_gpus();
  if (gpus.problem.empty()) GTEST_SKIP() << "this machine has a GPU; the no-GPU error cannot be shown";
  expect_one_line_error(infer("--device cuda " + model + " " + x), "device 'cuda' is not available");
  expect_one_line_error(infer("--device cuda:3 " + model + " " + x), "device 'cuda:3'");
  const Result listing = infer("--devices");
  EXPECT_EQ(listing.exit_code, 0);
  EXPECT_NE(listing.out.find("no GPU available"), std::string::npos) << listing.out;
}

TEST_F(Cli, ListsTheOperatorsItRuns) {
  const Result r = infer("--list-ops");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* op : {"\nConv\n", "\nLayerNormalization\n", "\nLoop\n", "com.ember::FusedConv\n"})
    EXPECT_NE(("\n" + r.out).find(op), std::string::npos) << op;
}

// engine/src/openmp_spin_default.cc: libgomp's idle threads spin 1,000 pauses, not
// 300,000, unless the user says otherwise; OMP_DISPLAY_ENV has libgomp print what it read.
TEST_F(Cli, OpenMpIdleThreadsSpinBrieflyUnlessTheUserChooses) {
  const std::string display = "OMP_DISPLAY_ENV=verbose";
  Result r = infer_with_env("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY " + display, "--devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("GOMP_SPINCOUNT = '1000'"), std::string::npos) << r.out << r.err;
  r = infer_with_env("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=77 " + display, "--devices");
  EXPECT_NE((r.out + r.err).find("GOMP_SPINCOUNT = '77'"), std::string::npos) << r.out << r.err;
  r = infer_with_env("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active " + display, "--devices");
  EXPECT_NE((r.out + r.err).find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("GOMP_SPINCOUNT = '1000'"), std::string::npos) << r.out << r.err;
}

TEST_F(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(infer("--no-such-flag").exit_code, 2);
  EXPECT_EQ(infer("--threads -3 m.onnx").exit_code, 2);
  EXPECT_EQ(infer("--device tpu " + write_model("m.onnx")).exit_code, 1);
  EXPECT_EQ(infer("--precision fp8 " + write_model("m.onnx")).exit_code, 2);
}

TEST_F(Cli, CudaGraphOnTheCpuIsAClearError) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  expect_one_line_error(infer("--cuda-graph " + model + " " + x), "--cuda-graph needs --device cuda");
}

TEST_F(Cli, DeviceIoOnTheCpuOrWithoutABenchmarkIsAClearError) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  expect_one_line_error(infer("--io device --repeat 2 " + model + " " + x), "--io device needs --device cuda");
  EXPECT_EQ(infer("--io gpu " + model + " " + x).exit_code, 2);
}

TEST_F(Cli, Fp16KeepsTheModelsInterfaceAndReportsTheConversion) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {3, 4});
  const Result r = infer("--precision fp16 --explain " + model + " " + x + " -o " + (dir_ / "o").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fp16: 1 nodes in float16"), std::string::npos) << r.out;
  const ember::Tensor y = ember::read_npy((dir_ / "o" / "y%3Aout%2F1.npy").string());
  EXPECT_EQ(y.dtype(), ember::DType::Float32);  // outputs stay float32
  EXPECT_EQ(y.shape(), (ember::Shape{3, 4}));
}

TEST_F(Cli, RepeatProfileAndExplainReport) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  const auto trace = (dir_ / "trace.json").string();
  const auto summary = (dir_ / "summary.json").string();
  const Result r = infer(model + " " + x + " --repeat 5 --profile --explain --trace " + trace +
                         " --summary-json " + summary);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("p50"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relu1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak arena on cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodes per device: cpu 1 (of 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak memory on cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("session holds "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("process resident "), std::string::npos) << r.out;
  EXPECT_NE(slurp(trace).find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(slurp(summary).find("\"p99\""), std::string::npos);
}

TEST_F(Cli, InfoPrintsWhatTheModelSaysAboutItself) {
  const auto model = write_model("m.onnx", [](onnx::ModelProto& m) {
    m.set_producer_name("tester");
    m.set_producer_version("0.1");
    auto* p = m.add_metadata_props();
    p->set_key("license");
    p->set_value("MIT");
  });
  const Result r = infer(model + " --info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("graph: relu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("producer: tester 0.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("opsets: ai.onnx 17"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("metadata license: MIT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("input x: float32 [n, 4]"), std::string::npos) << r.out;
}

TEST_F(Cli, LogLevelDebugSaysEachPlanOnStderrAndNoneSaysNothing) {
  const auto model = write_model("m.onnx");
  const auto x = write_input("x.npy", ember::DType::Float32, {2, 4});
  Result r = infer(model + " " + x + " --log-level debug");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ember: debug: planned inputs [2, 4]"), std::string::npos) << r.err;
  r = infer(model + " " + x + " --log-level none");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_one_line_error(infer(model + " " + x + " --timeout-ms 0.000001"), "run passed its deadline");
}

}  // namespace

namespace {

// seq (a sequence of float tensors [n, 4]) and x [n, 4] in; the sequence with Relu(x)
// appended out as "grown", and its tensors concatenated along axis 0 as "all".
void make_sequence_model(onnx::ModelProto& m) {
  auto* g = m.mutable_graph();
  auto* seq = g->mutable_input()->Add();
  seq->set_name("seq");
  seq->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  g->mutable_input()->SwapElements(0, 1);  // seq first, then x
  auto* grown = g->add_output();
  grown->set_name("grown");
  grown->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  auto* all = g->add_output();
  all->set_name("all");
  all->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* insert = g->add_node();
  insert->set_op_type("SequenceInsert");
  insert->add_input("seq");
  insert->add_input("y:out/1");
  insert->add_output("grown");
  auto* concat = g->add_node();
  concat->set_op_type("ConcatFromSequence");
  concat->add_input("grown");
  concat->add_output("all");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
}

}  // namespace

TEST_F(Cli, SequencesAreFoldersOfNpyFilesInAndOut) {
  const auto model = write_model("seq.onnx", make_sequence_model);
  fs::create_directories(dir_ / "seq");
  const auto a = write_input("seq/0.npy", ember::DType::Float32, {2, 4});
  const auto b = write_input("seq/1.npy", ember::DType::Float32, {1, 4});
  const auto x = write_input("x.npy", ember::DType::Float32, {3, 4});
  const Result r = infer(model + " seq=" + (dir_ / "seq").string() + " x=" + x + " -o " + (dir_ / "outs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("grown: sequence of 3 float32 values"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all: float32 [6, 4]"), std::string::npos) << r.out;
  const ember::Tensor last = ember::read_npy((dir_ / "outs" / "grown" / "2.npy").string());
  const ember::Tensor xin = ember::read_npy(x);
  ASSERT_EQ(last.shape(), (ember::Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(last.data_as<float>()[i], std::max(0.0f, xin.data_as<float>()[i]));
  EXPECT_EQ(ember::read_npy((dir_ / "outs" / "all.npy").string()).shape(), (ember::Shape{6, 4}));
}

TEST_F(Cli, ASequenceInputThatIsNotAFolderOfNumberedFilesIsRefused) {
  const auto model = write_model("seq.onnx", make_sequence_model);
  const auto x = write_input("x.npy", ember::DType::Float32, {3, 4});
  expect_one_line_error(infer(model + " seq=" + x + " x=" + x), "input 'seq' is a seq(tensor(float32)): pass a folder");
  fs::create_directories(dir_ / "gap");
  write_input("gap/0.npy", ember::DType::Float32, {1, 4});
  write_input("gap/2.npy", ember::DType::Float32, {1, 4});
  expect_one_line_error(infer(model + " seq=" + (dir_ / "gap").string() + " x=" + x), "no 1.npy");
  expect_one_line_error(infer(model + " x=" + x), "input 'seq' (seq(tensor(float32))) is missing");
}

// x is bfloat16 (an ml_dtypes array as np.save writes it: '<V2'), cast to float32.
TEST_F(Cli, ABfloat16InputSavedByNumpyIsReadAsTheModelDeclaresIt) {
  const auto model = write_model("bf16.onnx", [](onnx::ModelProto& m) {
    auto* g = m.mutable_graph();
    g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BFLOAT16);
    auto* n = g->mutable_node(0);
    n->set_op_type("Cast");
    auto* to = n->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
  });
  ember::Tensor x(ember::DType::BFloat16, {1, 4});
  const uint16_t bits[4] = {0x3F80, 0xC000, 0x4049, 0x0000};  // 1, -2, 3.140625, 0
  std::memcpy(x.data(), bits, sizeof bits);
  ember::write_npy((dir_ / "x.npy").string(), x);
  const Result r = infer(model + " " + (dir_ / "x.npy").string() + " -o " + (dir_ / "outs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ember::Tensor y = ember::read_npy((dir_ / "outs" / "y%3Aout%2F1.npy").string());
  const float want[4] = {1.0f, -2.0f, 3.140625f, 0.0f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data_as<float>()[i], want[i]);
}

namespace {

// words [n] string -> StringConcat(words, words) "twice"; scores [n, 2] float -> ZipMap
// over labels 3 and 8 "maps"; features map<string, float> -> DictVectorizer "vector".
void make_strings_and_maps_model(onnx::ModelProto& m) {
  auto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(1);
  m.mutable_opset_import(0)->set_version(20);
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_input();
  g->clear_output();
  const auto tensor_value = [](onnx::ValueInfoProto* v, const char* name, int elem_type) {
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  };
  tensor_value(g->add_input(), "words", onnx::TensorProto::STRING);
  tensor_value(g->add_input(), "scores", onnx::TensorProto::FLOAT);
  auto* features = g->add_input();
  features->set_name("features");
  auto* map = features->mutable_type()->mutable_map_type();
  map->set_key_type(onnx::TensorProto::STRING);
  map->mutable_value_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  tensor_value(g->add_output(), "twice", onnx::TensorProto::STRING);
  auto* maps = g->add_output();
  maps->set_name("maps");
  auto* seq_map = maps->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_map_type();
  seq_map->set_key_type(onnx::TensorProto::INT64);
  seq_map->mutable_value_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  tensor_value(g->add_output(), "vector", onnx::TensorProto::FLOAT);
  auto* concat = g->add_node();
  concat->set_op_type("StringConcat");
  concat->add_input("words");
  concat->add_input("words");
  concat->add_output("twice");
  auto* zip = g->add_node();
  zip->set_op_type("ZipMap");
  zip->set_domain("ai.onnx.ml");
  zip->add_input("scores");
  zip->add_output("maps");
  auto* labels = zip->add_attribute();
  labels->set_name("classlabels_int64s");
  labels->set_type(onnx::AttributeProto::INTS);
  labels->add_ints(3);
  labels->add_ints(8);
  auto* dv = g->add_node();
  dv->set_op_type("DictVectorizer");
  dv->set_domain("ai.onnx.ml");
  dv->add_input("features");
  dv->add_output("vector");
  auto* vocabulary = dv->add_attribute();
  vocabulary->set_name("string_vocabulary");
  vocabulary->set_type(onnx::AttributeProto::STRINGS);
  for (const char* w : {"b", "a", "c"}) vocabulary->add_strings(w);
}

}  // namespace

TEST_F(Cli, StringsAreStrNpyFilesAndMapsAreJsonInAndOut) {
  const auto model = write_model("maps.onnx", make_strings_and_maps_model);
  ember::Tensor words(ember::DType::String, {2});
  words.data_as<std::string>()[0] = "été";
  words.data_as<std::string>()[1] = "";
  ember::write_npy((dir_ / "words.npy").string(), words);
  ember::Tensor scores(ember::DType::Float32, {2, 2});
  for (int i = 0; i < 4; ++i) scores.data_as<float>()[i] = 0.25f * static_cast<float>(i);
  ember::write_npy((dir_ / "scores.npy").string(), scores);
  std::ofstream(dir_ / "features.json") << R"({"a": 1.5, "c": -2, "zz": 9})";
  const std::string args = model + " words=" + (dir_ / "words.npy").string() + " scores=" +
                           (dir_ / "scores.npy").string() + " features=" + (dir_ / "features.json").string();
  const Result r = infer(args + " -o " + (dir_ / "outs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("twice: string [2]  first [\"étéété\", \"\"]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"(maps: sequence of 2 float32 values  [{"3":0.0,"8":0.25},{"3":0.5,"8":0.75}])"),
            std::string::npos) << r.out;
  const ember::Tensor twice = ember::read_npy((dir_ / "outs" / "twice.npy").string());
  EXPECT_EQ(twice.data_as<std::string>()[0], "étéété");
  EXPECT_EQ(slurp(dir_ / "outs" / "maps.json"), "[{\"3\":0.0,\"8\":0.25},{\"3\":0.5,\"8\":0.75}]\n");
  const ember::Tensor vector = ember::read_npy((dir_ / "outs" / "vector.npy").string());
  ASSERT_EQ(vector.shape(), (ember::Shape{1, 3}));
  EXPECT_EQ(vector.data_as<float>()[0], 0.0f);
  EXPECT_EQ(vector.data_as<float>()[1], 1.5f);
  EXPECT_EQ(vector.data_as<float>()[2], -2.0f);

  // A map entry of the wrong type, and numbers where strings are declared.
  std::ofstream(dir_ / "bad.json") << R"({"a": "text"})";
  expect_one_line_error(infer(model + " words=" + (dir_ / "words.npy").string() + " scores=" + (dir_ / "scores.npy").string() +
                              " features=" + (dir_ / "bad.json").string()),
                        "entry 'a': expected a float32 value, got string");
  expect_one_line_error(infer(model + " words=" + (dir_ / "scores.npy").string() + " scores=" + (dir_ / "scores.npy").string() +
                              " features=" + (dir_ / "features.json").string()),
                        "input 'words' must be string, got float32");
}
