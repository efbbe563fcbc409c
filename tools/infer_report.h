// infer --report: one self-contained HTML page of a benchmark (no network: inline CSS,
// inline SVG charts drawn here, a little inline JS). The run's facts, a latency histogram
// and timeline, the per-node profile and time per op type, the plan's devices and memory.
#pragma once

#include "tools/infer_bench.h"

#include <ember/ember.h>

#include <string>
#include <vector>

namespace infer {

struct ReportData {
  const BenchResult& result;
  const BenchSettings& settings;
  const RunDescription& run;
  const ember::Profile& profile;
  std::string profile_how;  // which runs the profile comes from, said on the page
  std::string plan;         // Session::explain for the benchmark's inputs
  ember::MemoryReport memory;
  size_t peak_resident_bytes = 0;
};

std::string report_html(const ReportData& data);

// `text` with & < > " ' written as character references: safe in text and in quoted
// attributes.
std::string html_escape(const std::string& text);

// The charts, each an <svg> element, of values in ms (never an empty list of them).
struct Mark {
  std::string label;
  double value;
};
// Runs per latency bin, with a vertical line at each mark.
std::string histogram_svg(const std::vector<double>& values, const std::vector<Mark>& marks);
// One point per run at (start time, latency); over 2000 runs, the median and the maximum
// of each of 1000 groups of consecutive runs, as two lines.
std::string timeline_svg(const std::vector<double>& starts_s, const std::vector<double>& latencies_ms);
// One horizontal bar per entry, in the order given, labelled with its value and share.
std::string bar_chart_svg(const std::vector<Mark>& bars);

}  // namespace infer
