// infer — run an ONNX model on .npy inputs (or random ones), print and save its
// outputs; benchmark it, profile it, explain its plan. Exit codes: 0 ok, 1 user error,
// 2 usage error.
#include <ember/ember.h>

#include "tools/infer_bench.h"
#include "tools/infer_inputs.h"
#include "tools/infer_io.h"
#include "tools/infer_report.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <unistd.h>

namespace {

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;  // --shape, for random inputs
  std::string output_dir;
  std::string device = "cpu";
  std::string precision = "fp32";
  std::string trace_path, summary_json, report;
  int threads = 0, repeat = 0, warmup = 3, batch = 0, concurrency = 1;
  double timeout_ms = 0;  // per run; 0: none
  double duration_s = 0;  // benchmark for this long; 0: --repeat runs
  std::string log_level = "warning";
  std::string io = "host";  // benchmark: where the timed runs' inputs and outputs live
  bool profile = false, explain = false, devices = false, no_optimize = false, list_ops = false;
  bool cuda_graph = false, info = false;
};

// No .npy files: random inputs of the declared dtypes and shapes (--shape sets what
// the model leaves symbolic); says what it made, and which dims it set to 1.
std::vector<ember::Tensor> random_inputs(const ember::Session& session, const Options& opt) {
  const infer::ShapeChoices choices = infer::parse_shape_choices(opt.shapes, session);
  std::mt19937 rng(1);
  std::vector<ember::Tensor> tensors;
  std::vector<std::string> defaulted;
  std::string made;
  for (const ember::ValueDesc& d : session.inputs()) {
    tensors.push_back(infer::random_input(d, infer::shape_for(d, choices, opt.batch, &defaulted), rng));
    made += (made.empty() ? "" : ", ") + d.name + " " + ember::dtype_name(d.dtype) + " " +
            ember::shape_to_string(tensors.back().shape()) +
            (d.index_bound > 0 ? " (below " + std::to_string(d.index_bound) + ")" : "");
  }
  std::cout << "random inputs: " << made << "\n";
  if (!defaulted.empty()) {
    std::string dims;
    for (const std::string& d : defaulted) dims += (dims.empty() ? "" : ", ") + d;
    std::cout << "set to 1: " << dims << " (choose with --shape NAME=N)\n";
  }
  return tensors;
}

// --batch N: repeats each input along its first dimension until it holds N items.
ember::Tensor rebatch(const ember::Tensor& t, int batch, const std::string& name) {
  if (t.rank() == 0 || t.shape()[0] == batch) return t;
  const int64_t have = t.shape()[0];
  if (have == 0 || batch % have != 0)
    throw ember::Error("--batch " + std::to_string(batch) + ": input '" + name + "' has " +
                       std::to_string(have) + " items, which does not divide it");
  ember::Shape shape = t.shape();
  shape[0] = batch;
  ember::Tensor out(t.dtype(), shape);
  for (int64_t k = 0; k < batch / have; ++k)
    std::memcpy(static_cast<char*>(out.data()) + k * t.nbytes(), t.data(), t.nbytes());
  return out;
}

void print_devices() {
  const ember::GpuReport r = ember::list_gpus();
  if (!r.problem.empty()) {
    std::cout << "no GPU available: " << r.problem << "\n";
    return;
  }
  std::cout << "driver " << r.driver_version << ", CUDA runtime " << r.runtime_version << ", cuDNN "
            << (r.cudnn_version.empty() ? "-" : r.cudnn_version) << ", cuBLAS "
            << (r.cublas_version.empty() ? "-" : r.cublas_version) << "\n";
  for (const auto& g : r.gpus)
    std::printf("cuda:%d  %s  %.1f GiB total, %.1f GiB free, compute capability %d.%d\n", g.index,
                g.name.c_str(), g.total_bytes / 1073741824.0, g.free_bytes / 1073741824.0,
                g.compute_major, g.compute_minor);
}


// What the session holds per device: on a GPU, weights plus run arenas, at peak.
// Then what the session holds by purpose, and the process beside it.
void print_memory(const ember::Session& session) {
  auto mib = [](size_t b) { return static_cast<double>(b) / 1048576.0; };
  for (const auto& m : session.memory()) {
    if (m.device == "cpu")
      std::printf("peak memory on cpu: %.2f MiB of run arenas\n", mib(m.peak_bytes));
    else
      std::printf("peak device memory on %s: %.2f MiB (weights %.2f MiB, now in use %.2f MiB)\n",
                  m.device.c_str(), mib(m.peak_bytes), mib(m.weight_bytes), mib(m.in_use_bytes));
  }
  const ember::MemoryReport report = session.memory_report();
  std::string parts;
  for (const auto& e : report.entries)
    if (e.bytes > 0) {
      char part[128];
      std::snprintf(part, sizeof part, "%s%s %s %.1f", parts.empty() ? "" : ", ", e.device.c_str(), e.purpose.c_str(),
                    mib(e.bytes));
      parts += part;
    }
  std::printf("session holds %.1f MiB (%s); process resident %.1f MiB\n", mib(report.total()), parts.c_str(),
              mib(report.process_resident_bytes));
}

// --info: what the model says about itself, and its inputs and outputs.
void print_info(const ember::Session& session) {
  const ember::ModelMetadata& m = session.metadata();
  std::cout << "graph: " << m.graph_name << "\n";
  if (!m.graph_doc_string.empty()) std::cout << "graph doc: " << m.graph_doc_string << "\n";
  std::cout << "producer: " << m.producer_name << " " << m.producer_version << "\n";
  std::cout << "ir version: " << m.ir_version << ", model version: " << m.model_version << "\n";
  if (!m.domain.empty()) std::cout << "domain: " << m.domain << "\n";
  if (!m.doc_string.empty()) std::cout << "doc: " << m.doc_string << "\n";
  std::cout << "opsets:";
  for (const auto& [domain, version] : m.opset_imports)
    std::cout << " " << (domain.empty() ? "ai.onnx" : domain) << " " << version;
  std::cout << "\n";
  for (const auto& [key, value] : m.metadata_props) std::cout << "metadata " << key << ": " << value << "\n";
  // A tensor's dims; a sequence's or optional's type too.
  auto describe = [](const ember::ValueDesc& v) {
    return ember::dtype_name(v.dtype) + (" " + infer::format_dims(v.dims)) +
           (v.type.starts_with("tensor(") ? "" : " (" + v.type + ")");
  };
  for (const auto& v : session.inputs()) std::cout << "input " << v.name << ": " << describe(v) << "\n";
  for (const auto& v : session.outputs()) std::cout << "output " << v.name << ": " << describe(v) << "\n";
}

// --report: the page, with a profile of the timed runs (--profile) or of a few runs
// made after them.
void write_report(ember::Session& session, const std::vector<ember::Tensor>& inputs, const infer::BenchResult& result,
                  const infer::BenchSettings& settings, const infer::RunDescription& run, const Options& opt,
                  const ember::Profile& bench_profile, std::ofstream& out) {
  ember::Profile separate;
  std::string how = "Profiled during the timed runs (--profile), whose times therefore include the profiler's cost.";
  if (!opt.profile) {
    constexpr int kRuns = 20;
    constexpr double kSeconds = 2;
    infer::profile_runs(session, inputs, separate, kRuns, kSeconds, opt.timeout_ms, settings.concurrency <= 1);
    how = "Profiled after the timed runs, on one thread, so the profiler does not slow them: " +
          std::to_string(separate.runs) + " run(s) (at most " + std::to_string(kRuns) + " runs or " +
          std::to_string(static_cast<int>(kSeconds)) + " s).";
  }
  out << infer::report_html({result, settings, run, opt.profile ? bench_profile : separate, how,
                             session.explain(inputs), session.memory_report(), infer::peak_resident_bytes()});
  out.close();
  if (!out) throw ember::Error("cannot write the report to " + opt.report);
  std::cout << "report written to " << opt.report << "\n";
}

ember::LogLevel parse_log_level(const std::string& name) {
  for (auto level : {ember::LogLevel::None, ember::LogLevel::Error, ember::LogLevel::Warning, ember::LogLevel::Info,
                     ember::LogLevel::Debug})
    if (name == ember::log_level_name(level)) return level;
  throw ember::Error("log level '" + name + "' is not valid");  // CLI::IsMember checked it already
}

// A model that passes sequences or optionals: one run through Session::run_values
// (benchmarking, --batch, --shape and --explain take tensors only).
int run_on_values(ember::Session& session, const Options& opt) {
  if (opt.repeat > 0 || opt.duration_s > 0 || opt.batch > 0 || !opt.shapes.empty() || opt.explain)
    throw ember::Error("the model passes sequences or optionals, which infer runs once: --repeat, --duration, "
                       "--batch, --shape and --explain take models of tensors only");
  const std::vector<std::string> paths = infer::input_paths(session, opt.inputs);
  const std::vector<ember::Value> values = infer::read_values(session, paths);
  std::vector<std::pair<std::string, ember::Value>> named;
  for (size_t i = 0; i < values.size(); ++i) named.emplace_back(session.inputs()[i].name, values[i]);
  ember::Profile profile;
  ember::RunOptions run_options = infer::run_options_with_timeout(opt.timeout_ms);
  if (opt.profile) run_options.profile = &profile;
  infer::show_values(session, session.run_values(named, run_options), opt.output_dir);
  if (opt.profile) std::cout << profile.table();
  return 0;
}

int run(const Options& opt) {
  if (opt.devices) {
    print_devices();
    return 0;
  }
  if (opt.list_ops) {
    for (const auto& op : ember::list_operators(opt.device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"))
      std::cout << op << "\n";
    return 0;
  }
  if (opt.model.empty()) throw CLI::RequiredError("MODEL");
  const bool bench = opt.repeat > 0 || opt.duration_s > 0;
  if (!opt.report.empty() && !bench)
    throw CLI::ValidationError("--report", "the report is of a benchmark: give --repeat N or --duration S too");
  if (opt.cuda_graph && opt.device.rfind("cuda", 0) != 0)
    throw ember::Error("--cuda-graph needs --device cuda or cuda:N (the device is " + opt.device + ")");
  if (opt.io == "device" && opt.device.rfind("cuda", 0) != 0)
    throw ember::Error("--io device needs --device cuda or cuda:N (the device is " + opt.device + ")");
  if (opt.io == "device" && !bench)
    throw CLI::ValidationError("--io", "--io device is for a benchmark: give --repeat N or --duration S too");

  ember::SessionOptions so;
  so.device = opt.device;
  so.num_threads = opt.threads;
  so.optimization = opt.no_optimize ? ember::GraphOptimization::None : ember::GraphOptimization::All;
  so.precision = opt.precision;
  so.cuda_graph = opt.cuda_graph;
  so.log_level = parse_log_level(opt.log_level);
  // Where a person watches stderr, a line says what the slow steps are doing.
  const bool watched = isatty(STDERR_FILENO) != 0;
  auto status = [&](const std::string& text) {
    if (watched) std::fprintf(stderr, "\r\033[K%s", text.c_str());
  };
  status("loading " + opt.model + " ...");
  ember::Session session(opt.model, so);
  status("");
  if (opt.info) {
    print_info(session);
    return 0;
  }

  if (!opt.inputs.empty() && !opt.shapes.empty())
    throw ember::Error("--shape sets the shapes of random inputs; the .npy files given have their own");
  const bool random = opt.inputs.empty() && !session.inputs().empty();
  if (infer::passes_values(session)) return run_on_values(session, opt);
  std::vector<ember::Tensor> inputs =
      random ? random_inputs(session, opt) : infer::read_tensors(session, infer::input_paths(session, opt.inputs));
  if (opt.batch > 0)
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = rebatch(inputs[i], opt.batch, session.inputs()[i].name);
  if (opt.explain) std::cout << session.explain(inputs);

  ember::Profile profile;
  ember::RunOptions run_options = infer::run_options_with_timeout(opt.timeout_ms);
  if (opt.profile && !bench) run_options.profile = &profile;
  std::vector<ember::Tensor> first;
  {
    std::vector<std::pair<std::string, ember::Tensor>> named;
    for (size_t i = 0; i < inputs.size(); ++i) named.emplace_back(session.inputs()[i].name, inputs[i]);
    status("planning and running once ...");
    first = session.run(named, run_options);
    status("");
  }
  if (bench) {
    infer::BenchSettings settings;
    settings.warmup = opt.warmup;
    settings.repeat = opt.repeat;
    settings.duration_s = opt.duration_s;
    settings.concurrency = opt.concurrency;
    settings.timeout_ms = opt.timeout_ms;
    settings.profile = opt.profile ? &profile : nullptr;
    settings.device_io = opt.io == "device";
    if (watched)
      settings.progress = [&](int64_t runs, double seconds) {
        std::fprintf(stderr, "\r\033[Kbenchmarking: %lld runs in %.1f s", static_cast<long long>(runs), seconds);
        if (opt.duration_s > 0) std::fprintf(stderr, " of %.1f", opt.duration_s);
        if (opt.repeat > 0) std::fprintf(stderr, " (of %d runs)", opt.repeat);
        std::fflush(stderr);
      };
    // Opened now, so a path that cannot be written fails before the benchmark, not after.
    std::ofstream report;
    if (!opt.report.empty()) {
      report.open(opt.report);
      if (!report) throw ember::Error("cannot write the report to " + opt.report);
    }
    const infer::BenchResult result = infer::benchmark(session, inputs, settings);
    status("");
    std::cout << infer::describe(result, settings);
    infer::RunDescription run{opt.model, opt.device, opt.precision, opt.threads, {}, random};
    for (size_t i = 0; i < inputs.size(); ++i) run.inputs.emplace_back(session.inputs()[i].name, inputs[i]);
    if (!opt.summary_json.empty()) {
      std::ofstream f(opt.summary_json);
      f << infer::summary_json(result, settings, run, session);
      if (!f) throw ember::Error("cannot write " + opt.summary_json);
    }
    if (!opt.report.empty()) write_report(session, inputs, result, settings, run, opt, profile, report);
  }

  for (size_t i = 0; i < first.size(); ++i) {
    const auto& name = session.outputs()[i].name;
    std::cout << name << ": " << ember::dtype_name(first[i].dtype()) << " "
              << ember::shape_to_string(first[i].shape()) << "  " << infer::summarize(first[i]) << "\n";
    if (!opt.output_dir.empty()) {
      std::filesystem::create_directories(opt.output_dir);
      ember::write_npy((std::filesystem::path(opt.output_dir) / (infer::escape_file_name(name) + ".npy")).string(),
                       first[i]);
    }
  }
  if (bench || opt.profile) print_memory(session);
  if (opt.profile) {
    std::cout << profile.table();
    if (!opt.trace_path.empty()) {
      std::ofstream f(opt.trace_path);
      f << profile.chrome_trace();
      if (!f) throw ember::Error("cannot write the trace to " + opt.trace_path);
      std::cout << "trace written to " << opt.trace_path << " (open it in Perfetto or chrome://tracing)\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"infer: run an ONNX model with ember"};
  app.add_option("model", opt.model, "the .onnx model file");
  app.add_option("inputs", opt.inputs, "inputs as file.npy (graph order) or name=file.npy; none: random inputs");
  app.add_option("--shape", opt.shapes,
                 "random inputs' shapes: symbolic dims (batch=8,sequence=128) or whole inputs (x=1x3x224x224)");
  app.add_option("-o,--output-dir", opt.output_dir, "write each output as DIR/<name>.npy");
  app.add_option("--device", opt.device, "cpu, cuda or cuda:N");
  app.add_option("--threads", opt.threads, "intra-op threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", opt.batch, "repeat the inputs along their first dimension to this batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", opt.precision,
                  "fp32; fp16 (float16 compute, float32 accumulation); bf16 (CPU: bfloat16 convolutions "
                  "and matmuls, float32 accumulation)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--io", opt.io,
                 "benchmark: where the timed runs' inputs and outputs are: host (copied each run) or device "
                 "(copied to the GPU once, so a run is the model alone)")
      ->check(CLI::IsMember({"host", "device"}));
  app.add_flag("--cuda-graph", opt.cuda_graph, "CUDA: record the device work once per input shape, then replay it");
  app.add_option("--repeat", opt.repeat, "benchmark: time this many runs (in all threads)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--duration", opt.duration_s, "benchmark: time runs for this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", opt.concurrency, "benchmark: threads running the one session at once (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", opt.warmup, "benchmark: untimed runs first, per thread (default 3)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--summary-json", opt.summary_json,
                 "benchmark: write latency, throughput and memory as JSON (schema ember.infer.summary/1)");
  app.add_option("--report", opt.report,
                 "benchmark: write an HTML page of it (latency histogram and timeline, per-node profile, memory)");
  app.add_flag("--profile", opt.profile, "per-node time table");
  app.add_option("--trace", opt.trace_path, "with --profile: write a Chrome trace JSON");
  app.add_flag("--explain", opt.explain, "print the execution plan");
  app.add_flag("--devices", opt.devices, "list the GPUs and exit");
  app.add_flag("--list-ops", opt.list_ops, "list the operators ember runs on --device and exit");
  app.add_flag("--no-optimize", opt.no_optimize, "skip the graph passes");
  app.add_flag("--info", opt.info, "print what the model says about itself (producer, opsets, metadata, inputs, outputs) and exit");
  app.add_option("--timeout-ms", opt.timeout_ms, "stop any run that takes longer than this (exit 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", opt.log_level, "none, error, warning (default), info or debug (one line per plan)")
      ->check(CLI::IsMember({"none", "error", "warning", "info", "debug"}));
  try {
    app.parse(argc, argv);
    if (!opt.trace_path.empty()) opt.profile = true;
    return run(opt);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is fine; any other parse error is usage
  } catch (const ember::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
