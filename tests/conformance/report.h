// The expected-failures list and the markdown report.
#pragma once

#include "conformance/cases.h"
#include "conformance/run_case.h"

#include <map>
#include <string>
#include <vector>

namespace ember::conformance {

struct Outcome {
  Case c;
  Result result;
};

// "<set>/<case>" -> reason, from lines "<set>/<case> <reason>" ('#' starts a comment).
using ExpectedFailures = std::map<std::string, std::string>;
ExpectedFailures read_expected_failures(const std::string& path);
// Writes `list` sorted, with a header saying how to regenerate it.
void write_expected_failures(const std::string& path, const ExpectedFailures& list);
// The one-line reason a non-passing outcome gets in the list: "unsupported: op Loop".
std::string failure_reason(const Outcome& o);

// Per set totals, the in-scope node pass rate, the top missing ops, per-op results and
// every non-passing case with its reason.
std::string markdown_report(const std::vector<Outcome>& outcomes, const std::string& onnx_version);

}  // namespace ember::conformance
