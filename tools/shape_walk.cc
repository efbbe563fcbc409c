// shape_walk — what a long-running service sees: one Session run at many input shapes.
// Walks one symbolic dimension (e.g. a sequence length) through a list of values and
// prints, per shape, the process's resident memory, the first run (which plans) and a
// steady run, then the session's memory report. Used to check that memory stays
// bounded and that a new shape costs little (README, "Memory").
//
//   shape_walk MODEL DIM FIRST LAST [STEP] [--threads N] [--max-plans N] [--rounds R]
//              [--input NAME=FILE.npy]...
//
// Every other symbolic dimension is 1. Inputs are random as infer makes them
// (tools/infer_inputs.h: token ids below their vocabulary, masks 0 or 1). An input
// given by --input is that file's tensor at every step (a model whose inputs need real
// values, such as a sample rate).
#include <ember/ember.h>

#include "tools/infer_inputs.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / (1 << 20);
}

double run_ms(ember::Session& session, const std::vector<ember::Tensor>& inputs) {
  std::vector<ember::Tensor> outputs = session.make_outputs(inputs);
  const auto start = std::chrono::steady_clock::now();
  session.run(inputs, outputs);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int usage() {
  std::fprintf(stderr,
               "usage: shape_walk MODEL DIM FIRST LAST [STEP] [--threads N] [--max-plans N] [--rounds R] "
               "[--input NAME=FILE.npy]...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  ember::SessionOptions options;
  int rounds = 1;
  std::map<std::string, std::string> input_files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--input" && i + 1 < argc) {
      const std::string given = argv[++i];
      const size_t eq = given.find('=');
      if (eq == std::string::npos) return usage();
      input_files[given.substr(0, eq)] = given.substr(eq + 1);
    } else if ((arg == "--threads" || arg == "--max-plans" || arg == "--rounds") && i + 1 < argc) {
      const int value = std::atoi(argv[++i]);
      if (arg == "--threads") options.num_threads = value;
      if (arg == "--max-plans") options.plan_cache_max_plans = static_cast<size_t>(value);
      if (arg == "--rounds") rounds = value;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 4 || positional.size() > 5) return usage();
  const std::string dim = positional[1];
  const int64_t first = std::stoll(positional[2]), last = std::stoll(positional[3]);
  const int64_t step = positional.size() == 5 ? std::stoll(positional[4]) : 1;
  try {
    const double before = resident_mib();
    ember::Session session(positional[0], options);
    std::printf("loaded: %.0f MiB resident (%.0f before)\n", resident_mib(), before);
    std::map<std::string, ember::Tensor> fixed;
    for (const auto& [name, file] : input_files) fixed[name] = ember::read_npy(file);
    std::mt19937 rng(1);
    double worst_ratio = 0, peak = 0;
    for (int round = 0; round < rounds; ++round) {
      for (int64_t v = first; v <= last; v += step) {
        std::vector<ember::Tensor> inputs;
        infer::ShapeChoices choices;
        choices.dims[dim] = v;
        std::vector<std::string> defaulted;  // every other symbolic dim: 1
        for (const ember::ValueDesc& d : session.inputs())
          inputs.push_back(fixed.count(d.name) ? fixed.at(d.name)
                                               : infer::random_input(d, infer::shape_for(d, choices, 0, &defaulted), rng));
        const double first_ms = run_ms(session, inputs);
        double steady_ms = run_ms(session, inputs);
        steady_ms = std::min(steady_ms, run_ms(session, inputs));
        const double rss = resident_mib();
        peak = std::max(peak, rss);
        worst_ratio = std::max(worst_ratio, first_ms / steady_ms);
        std::printf("%s=%-5lld resident %7.0f MiB  first run %8.2f ms  steady %8.2f ms  (x%.2f)\n", dim.c_str(),
                    static_cast<long long>(v), rss, first_ms, steady_ms, first_ms / steady_ms);
      }
    }
    std::printf("peak resident %.0f MiB; worst first/steady %.2f\n%s", peak, worst_ratio,
                session.memory_report().to_string().c_str());
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "shape_walk: %s\n", e.what());
    return 1;
  }
  return 0;
}
