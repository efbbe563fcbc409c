// conformance_runner: runs the official ONNX backend test cases through ember::Session
// and says which pass, which fail, which ember refuses, and whether that matches the
// expected-failures list. See docs/conformance.md for the latest results.
#include "conformance/cases.h"
#include "conformance/isolate.h"
#include "conformance/report.h"
#include "conformance/run_case.h"

#include <ember/core/error.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

using namespace ember::conformance;

namespace {

struct Options {
  std::string data = "conformance-data";
  std::vector<std::string> sets = {"node", "simple", "pytorch-converted", "pytorch-operator"};
  std::string filter;
  std::string expected_failures;
  bool update_expected_failures = false;
  std::string report;
  std::string device = "cpu";
  IsolateOptions isolate;
  bool verbose = false;
};

std::string read_stamp(const std::string& data_dir) {
  std::ifstream in(data_dir + "/node.stamp");
  std::string version;
  std::getline(in, version);
  return version.empty() ? "(unknown version)" : version;
}

std::vector<Outcome> run_all(const Options& o) {
  std::vector<Outcome> outcomes;
  for (const auto& set : o.sets) {
    for (auto& c : discover_cases(o.data, set, o.filter))
      outcomes.push_back({std::move(c), {Status::OutOfScope, ""}});
  }
  std::vector<Case> to_run;
  std::vector<size_t> where;
  for (size_t i = 0; i < outcomes.size(); ++i)
    if (outcomes[i].c.out_of_scope.empty()) to_run.push_back(outcomes[i].c), where.push_back(i);
  const std::string device = o.device;
  run_isolated(
      to_run, [&](const Case& c) { return run_case(c.dir, c.non_tensor_io, device, Tolerance{}, {c.random_draws, c.seeded}); }, o.isolate,
      [&](size_t k, const Result& r) {
        Outcome& out = outcomes[where[k]];
        out.result = r;
        if (r.status != Status::Passed || o.verbose)
          std::printf("%-11s %s [%s] %s\n", status_name(r.status), out.c.id().c_str(), out.c.op.c_str(),
                      r.detail.c_str());
        std::fflush(stdout);
      });
  return outcomes;
}

void print_summary(const std::vector<Outcome>& outcomes, const std::vector<std::string>& sets) {
  auto line = [&](const std::string& label, const std::string& set) {
    int n[5] = {};
    for (const auto& o : outcomes)
      if (set.empty() || o.c.set == set) ++n[static_cast<int>(o.result.status)];
    const int in_scope = n[0] + n[1] + n[2] + n[3];
    std::printf("%-18s passed %d / %d in scope (%.1f%%), failed %d, crashed %d, unsupported %d, out of scope %d\n",
                label.c_str(), n[0], in_scope, in_scope ? 100.0 * n[0] / in_scope : 0.0, n[1], n[2], n[3], n[4]);
  };
  for (const auto& s : sets) line(s, s);
  line("total", "");
}

// Compares with the list; returns the number of surprises (printed loudly).
int check_expected(const std::vector<Outcome>& outcomes, const ExpectedFailures& expected) {
  int surprises = 0;
  for (const auto& o : outcomes) {
    const bool listed = expected.count(o.c.id()) > 0;
    const Status s = o.result.status;
    if (s == Status::OutOfScope) continue;
    if (s == Status::Passed && listed) {
      std::printf("UNEXPECTED PASS: %s is listed as expected to fail (%s); remove it from the list\n",
                  o.c.id().c_str(), expected.at(o.c.id()).c_str());
      ++surprises;
    } else if (s != Status::Passed && !listed) {
      std::printf("UNEXPECTED %s: %s [%s] %s\n", status_name(s), o.c.id().c_str(), o.c.op.c_str(),
                  o.result.detail.c_str());
      ++surprises;
    }
  }
  return surprises;
}

// The list after this run: this run's cases replaced, the others (filtered out) kept.
ExpectedFailures updated_list(const std::vector<Outcome>& outcomes, ExpectedFailures list) {
  for (const auto& o : outcomes) {
    if (o.result.status == Status::Passed)
      list.erase(o.c.id());
    else
      list[o.c.id()] = failure_reason(o);
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.isolate.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CLI::App app{"Runs the ONNX backend test cases through ember"};
  app.add_option("--data", o.data, "directory holding node/, simple/, ... (scripts: conformance_data.sh)");
  app.add_option("--sets", o.sets, "test sets to run")->delimiter(',');
  app.add_option("--filter", o.filter, "run only cases whose name contains this");
  app.add_option("--expected-failures", o.expected_failures, "list of cases expected not to pass");
  app.add_flag("--update-expected-failures", o.update_expected_failures,
               "rewrite the expected-failures list from this run's results");
  app.add_option("--report", o.report, "write a markdown report here");
  app.add_option("--device", o.device, "cpu, cuda or cuda:N");
  app.add_option("-j,--jobs", o.isolate.jobs, "cases run at once, each in its own process");
  app.add_option("--timeout", o.isolate.timeout_s, "seconds a case may take before it counts as crashed");
  app.add_flag("--no-fork", [&](int64_t) { o.isolate.fork = false; }, "run cases in this process (for debuggers)");
  app.add_flag("-v,--verbose", o.verbose, "print passing cases too");
  CLI11_PARSE(app, argc, argv);

  try {
    ExpectedFailures expected;
    if (!o.expected_failures.empty() && !(o.update_expected_failures && !std::ifstream(o.expected_failures)))
      expected = read_expected_failures(o.expected_failures);
    const std::vector<Outcome> outcomes = run_all(o);
    print_summary(outcomes, o.sets);
    if (!o.report.empty()) {
      std::ofstream out(o.report);
      out << markdown_report(outcomes, read_stamp(o.data));
      if (!out) throw ember::Error(o.report + ": cannot write the report");
    }
    if (o.update_expected_failures) {
      if (o.expected_failures.empty()) throw ember::Error("--update-expected-failures needs --expected-failures FILE");
      write_expected_failures(o.expected_failures, updated_list(outcomes, expected));
      std::printf("wrote %s\n", o.expected_failures.c_str());
      return 0;
    }
    if (o.expected_failures.empty()) return 0;
    const int surprises = check_expected(outcomes, expected);
    if (surprises)
      std::printf("FAILED: %d case(s) differ from %s (regenerate it with --update-expected-failures "
                  "when the change is intended)\n", surprises, o.expected_failures.c_str());
    return surprises ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conformance_runner: %s\n", e.what());
    return 2;
  }
}
