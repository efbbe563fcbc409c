#include "conformance/report.h"

#include <ember/core/error.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ember::conformance {

ExpectedFailures read_expected_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read the expected-failures list");
  ExpectedFailures list;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    list[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return list;
}

void write_expected_failures(const std::string& path, const ExpectedFailures& list) {
  std::ofstream out(path);
  if (!out) throw Error(path + ": cannot write the expected-failures list");
  out << "# ONNX backend test cases ember is expected NOT to pass: <set>/<case> <reason>.\n"
         "# conformance_runner fails when a case not listed here does not pass, and when a\n"
         "# listed case passes. Regenerate after adding ops:\n"
         "#   build/tests/conformance_runner --data build/conformance-data \\\n"
         "#     --expected-failures tests/conformance/expected_failures.txt --update-expected-failures\n";
  for (const auto& [id, reason] : list) out << id << " " << reason << "\n";
}

std::string failure_reason(const Outcome& o) {
  if (o.result.status == Status::OutOfScope) return "out of scope: " + o.c.out_of_scope;
  std::string detail = o.result.detail;
  if (detail.size() > 160) detail = detail.substr(0, 157) + "...";
  return std::string(status_name(o.result.status)) + ": " + detail;
}

namespace {

struct Tally {
  int total = 0, passed = 0, failed = 0, crashed = 0, unsupported = 0, out_of_scope = 0;
  void add(Status s) {
    ++total;
    switch (s) {
      case Status::Passed: ++passed; break;
      case Status::Failed: ++failed; break;
      case Status::Crashed: ++crashed; break;
      case Status::Unsupported: ++unsupported; break;
      case Status::OutOfScope: ++out_of_scope; break;
    }
  }
  int in_scope() const { return total - out_of_scope; }
};

std::string percent(int part, int whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", whole ? 100.0 * part / whole : 0.0);
  return buffer;
}

std::string escape(std::string text) {
  for (size_t at = 0; (at = text.find('|', at)) != std::string::npos; at += 2) text.replace(at, 1, "\\|");
  return text;
}

void totals_table(std::ostringstream& md, const std::vector<Outcome>& outcomes) {
  std::map<std::string, Tally> sets;
  Tally all;
  for (const auto& o : outcomes) sets[o.c.set].add(o.result.status), all.add(o.result.status);
  md << "| set | cases | in scope | passed | failed | crashed | unsupported | out of scope | pass rate (in scope) |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  auto row = [&](const std::string& name, const Tally& t) {
    md << "| " << name << " | " << t.total << " | " << t.in_scope() << " | " << t.passed << " | " << t.failed
       << " | " << t.crashed << " | " << t.unsupported << " | " << t.out_of_scope << " | "
       << percent(t.passed, t.in_scope()) << " |\n";
  };
  for (const auto& [name, t] : sets) row(name, t);
  row("**all**", all);
  if (sets.count("node")) {
    const Tally& n = sets["node"];
    md << "\n**Node cases in scope: " << n.in_scope() << ", passed: " << n.passed
       << ", pass rate: " << percent(n.passed, n.in_scope()) << ".**\n";
  }
}

void scope_section(std::ostringstream& md, const std::vector<Outcome>& outcomes) {
  std::map<std::string, std::map<std::string, int>> categories;  // category -> op -> cases
  for (const auto& o : outcomes)
    if (o.result.status == Status::OutOfScope) ++categories[o.c.out_of_scope][o.c.op];
  md << "\n## Out of scope (not run)\n\n";
  for (const auto& [category, ops] : categories) {
    int count = 0;
    std::string names;
    for (const auto& [op, n] : ops) count += n, names += (names.empty() ? "" : ", ") + op + " (" + std::to_string(n) + ")";
    md << "- " << category << ": " << count << " cases — " << names << "\n";
  }
}

// Cases of ops that draw random values: passed on checks, not on compared values.
void random_section(std::ostringstream& md, const std::vector<Outcome>& outcomes) {
  std::vector<const Outcome*> random;
  for (const auto& o : outcomes)
    if (o.c.random_draws && o.result.status != Status::OutOfScope) random.push_back(&o);
  if (random.empty()) return;
  md << "\n## Random ops: checked, not compared\n\n"
        "The expected outputs of these cases are one random draw of the ONNX reference (NumPy's "
        "generator), which no other generator reproduces. They count as passed when every output "
        "has the expected dtype and shape and holds only 0 and 1, and, for a seeded model, a "
        "second run gives the same values bit for bit; their values are not compared with the "
        "expected ones. The distribution itself (the mean over a large input near p) is checked "
        "by the unit tests (`tests/ops/cpu/test_random.cc`).\n\n";
  for (const Outcome* o : random)
    md << "- `" << o->c.id() << "` (" << (o->c.seeded ? "seeded" : "unseeded") << ") — "
       << status_name(o->result.status) << "\n";
}

void missing_ops_section(std::ostringstream& md, const std::vector<Outcome>& outcomes) {
  std::map<std::string, int> ops;
  for (const auto& o : outcomes)
    if (o.result.status != Status::Passed && o.result.status != Status::OutOfScope) ++ops[o.c.op];
  std::vector<std::pair<std::string, int>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  md << "\n## Ops with the most non-passing cases\n\n| op | non-passing cases |\n| --- | ---: |\n";
  for (size_t i = 0; i < sorted.size() && i < 30; ++i)
    md << "| " << escape(sorted[i].first) << " | " << sorted[i].second << " |\n";
}

void per_op_section(std::ostringstream& md, const std::vector<Outcome>& outcomes) {
  std::map<std::string, Tally> ops;
  std::map<std::string, std::vector<const Outcome*>> failing;
  for (const auto& o : outcomes) {
    const std::string key = o.c.set == "node" ? o.c.op : o.c.set + ": " + o.c.op;
    ops[key].add(o.result.status);
    if (o.result.status != Status::Passed) failing[key].push_back(&o);
  }
  md << "\n## Per op\n\n| op | passed | in scope | failed | crashed | unsupported | out of scope |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& [op, t] : ops)
    md << "| " << escape(op) << " | " << t.passed << " | " << t.in_scope() << " | " << t.failed << " | "
       << t.crashed << " | " << t.unsupported << " | " << t.out_of_scope << " |\n";
  md << "\n## Non-passing cases\n";
  for (const auto& [op, list] : failing) {
    md << "\n### " << op << "\n\n";
    for (const Outcome* o : list) md << "- `" << o->c.id() << "` — " << failure_reason(*o) << "\n";
  }
}

}  // namespace

std::string markdown_report(const std::vector<Outcome>& outcomes, const std::string& onnx_version) {
  std::ostringstream md;
  md << "# ONNX conformance\n\n"
        "Generated by `tests/conformance/conformance_runner` on the ONNX backend test data of onnx "
     << onnx_version
     << " (CPU, one thread). A case passes when every output has the expected dtype and shape and "
        "values within atol 1e-7 + rtol 1e-3 × |expected| (integers and booleans exact). "
        "*Unsupported*: ember refused the model (an operator, a dtype or a type it does not "
        "have); *failed*: it ran and gave a wrong result or raised an error; *crashed*: the case "
        "killed or hung its process.\n\n"
        "Regenerate (after `cmake --build build --target conformance_runner`):\n\n"
        "```\ntests/conformance/conformance_data.sh build/conformance-data\n"
        "build/tests/conformance_runner --data build/conformance-data --report docs/conformance.md \\\n"
        "  --expected-failures tests/conformance/expected_failures.txt --update-expected-failures\n```\n\n";
  totals_table(md, outcomes);
  scope_section(md, outcomes);
  random_section(md, outcomes);
  missing_ops_section(md, outcomes);
  per_op_section(md, outcomes);
  return md.str();
}

}  // namespace ember::conformance
