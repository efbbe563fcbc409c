#include "tools/infer_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <numeric>

namespace infer {

namespace {

// Chart geometry: the plot area sits inside the margins, axis labels outside it.
constexpr double kWidth = 760, kLeft = 64, kRight = 20, kTop = 20, kBottom = 40;

std::string num(double v, int digits = 3) {
  char s[64];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

std::string mib(size_t bytes) { return num(static_cast<double>(bytes) / 1048576.0, 1) + " MiB"; }

// About `count` round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double f : {2.0, 5.0, 10.0})
    if (raw > step) step = f * magnitude;
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
  return out;
}

// Maps [lo, hi] onto [a, b] (a degenerate range onto its middle).
struct Scale {
  double lo, hi, a, b;
  double operator()(double v) const { return hi > lo ? a + (v - lo) / (hi - lo) * (b - a) : (a + b) / 2; }
};

// Figures on the axes: no more digits than the tick step needs.
std::string tick_label(double v, double step) {
  const int digits = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  return num(v, std::min(digits, 6));
}

std::string svg_open(double height, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(kWidth, 0) + " " + num(height, 0) +
         "\" role=\"img\" aria-label=\"" + html_escape(label) + "\">\n";
}

// Both axes with ticks, labels and grid lines, for a plot of `height`.
std::string axes(const Scale& x, const Scale& y, double height, const std::string& x_title,
                 const std::string& y_title) {
  std::string s;
  const auto xt = ticks(x.lo, x.hi, 8), yt = ticks(y.lo, y.hi, 5);
  const double x_step = xt.size() > 1 ? xt[1] - xt[0] : 1, y_step = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : yt)
    s += "<line class=\"grid\" x1=\"" + num(kLeft, 1) + "\" x2=\"" + num(kWidth - kRight, 1) + "\" y1=\"" +
         num(y(t), 1) + "\" y2=\"" + num(y(t), 1) + "\"/><text class=\"tick\" x=\"" + num(kLeft - 6, 1) +
         "\" y=\"" + num(y(t) + 4, 1) + "\" text-anchor=\"end\">" + tick_label(t, y_step) + "</text>\n";
  for (double t : xt)
    s += "<text class=\"tick\" x=\"" + num(x(t), 1) + "\" y=\"" + num(height - kBottom + 16, 1) +
         "\" text-anchor=\"middle\">" + tick_label(t, x_step) + "</text>\n";
  s += "<line class=\"axis\" x1=\"" + num(kLeft, 1) + "\" x2=\"" + num(kWidth - kRight, 1) + "\" y1=\"" +
       num(height - kBottom, 1) + "\" y2=\"" + num(height - kBottom, 1) + "\"/>\n";
  s += "<text class=\"title\" x=\"" + num((kLeft + kWidth - kRight) / 2, 1) + "\" y=\"" + num(height - 6, 1) +
       "\" text-anchor=\"middle\">" + html_escape(x_title) + "</text>\n";
  s += "<text class=\"title\" transform=\"translate(14 " + num((kTop + height - kBottom) / 2, 1) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(y_title) + "</text>\n";
  return s;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::string row(const std::string& name, const std::string& value) {
  return "<tr><th>" + html_escape(name) + "</th><td>" + html_escape(value) + "</td></tr>\n";
}

std::string facts_table(const ReportData& d) {
  const BenchResult& r = d.result;
  const double runs_per_s = static_cast<double>(r.latencies_ms.size()) / r.wall_s;
  std::string inputs;
  for (const auto& [name, t] : d.run.inputs)
    inputs += (inputs.empty() ? "" : "; ") + name + " " + ember::dtype_name(t.dtype()) + " " +
              ember::shape_to_string(t.shape());
  std::string s = "<table class=\"facts\">\n";
  s += row("model", d.run.model);
  s += row("device", d.run.device);
  s += row("precision", d.run.precision);
  s += row("threads per run", d.run.threads > 0 ? std::to_string(d.run.threads) : "every core (default)");
  s += row("concurrency", std::to_string(std::max(d.settings.concurrency, 1)) + " thread(s) sharing the session");
  s += row("inputs", inputs.empty() ? "none" : inputs + (d.run.random_inputs ? " (random)" : " (from files)"));
  s += row("batch", std::to_string(r.items_per_run));
  s += row("warm-up", std::to_string(d.settings.warmup) + " untimed run(s) per thread");
  s += row("timed runs", std::to_string(r.latencies_ms.size()));
  s += row("wall time", num(r.wall_s, 2) + " s");
  s += row("throughput", num(runs_per_s * static_cast<double>(r.items_per_run), 2) + " items/s, " +
                             num(runs_per_s, 2) + " runs/s");
  return s + "</table>\n";
}

std::string latency_section(const BenchResult& r) {
  const std::vector<double>& ms = r.latencies_ms;
  const std::vector<Mark> stats = {{"min", *std::min_element(ms.begin(), ms.end())},
                                   {"mean", mean_of(ms)},
                                   {"p50", percentile(ms, 50)},
                                   {"p90", percentile(ms, 90)},
                                   {"p95", percentile(ms, 95)},
                                   {"p99", percentile(ms, 99)},
                                   {"max", *std::max_element(ms.begin(), ms.end())}};
  std::string head, cells;
  for (const Mark& m : stats) {
    head += "<th>" + m.label + "</th>";
    cells += "<td>" + num(m.value) + "</td>";
  }
  std::string s = "<h2>Latency (ms)</h2>\n<table class=\"stats\"><tr>" + head + "</tr><tr>" + cells + "</tr></table>\n";
  s += "<figure>" + histogram_svg(ms, {stats[2], stats[3], stats[5]}) +
       "<figcaption>Runs per latency bin; lines at p50, p90 and p99 (nearest-rank, over every thread's "
       "runs).</figcaption></figure>\n";
  s += "<h2>Latency of each run</h2>\n<figure>" + timeline_svg(r.starts_s, ms) +
       "<figcaption>Each timed run at its start time, so warm-up effects and outliers show.</figcaption>"
       "</figure>\n";
  return s;
}

std::string profile_section(const ReportData& d) {
  const std::vector<ember::NodeSummary> nodes = d.profile.by_node();
  std::string s = "<h2>Where the time goes</h2>\n<p>" + html_escape(d.profile_how) + "</p>\n";
  if (nodes.empty()) return s + "<p>No node ran.</p>\n";
  std::map<std::string, double> by_op;
  for (const auto& n : nodes) by_op[n.op_type] += n.mean_ms;
  std::vector<Mark> bars;
  for (const auto& [op, ms] : by_op) bars.push_back({op, ms});
  std::sort(bars.begin(), bars.end(), [](const Mark& a, const Mark& b) { return a.value > b.value; });
  s += "<h3>Time per op type (mean ms per run)</h3>\n<figure>" + bar_chart_svg(bars) + "</figure>\n";
  s += "<h3>Per node, slowest first</h3>\n"
       "<p><input id=\"node-filter\" type=\"search\" placeholder=\"filter nodes\"> <span id=\"node-count\"></span>"
       " (click a heading to sort)</p>\n"
       "<table id=\"nodes\"><thead><tr><th>node</th><th>op type</th><th>device</th><th>output shape</th>"
       "<th class=\"num\">mean ms</th><th class=\"num\">share</th></tr></thead><tbody>\n";
  for (const auto& n : nodes)
    s += "<tr><td>" + html_escape(n.node) + "</td><td>" + html_escape(n.op_type) + "</td><td>" +
         html_escape(n.device) + "</td><td>" + html_escape(n.output_shape) + "</td><td class=\"num\">" +
         num(n.mean_ms) + "</td><td class=\"num\">" + num(100 * n.share, 1) + "%</td></tr>\n";
  return s + "</tbody></table>\n";
}

std::string memory_section(const ReportData& d) {
  std::map<std::string, std::pair<int, double>> per_device;  // nodes, mean ms per run
  for (const auto& n : d.profile.by_node()) {
    per_device[n.device].first += 1;
    per_device[n.device].second += n.mean_ms;
  }
  std::string s = "<h2>Devices and memory</h2>\n<table class=\"facts\"><tr><th>device</th><th>nodes</th>"
                  "<th>mean ms per run</th></tr>\n";
  for (const auto& [device, v] : per_device)
    s += "<tr><td>" + html_escape(device) + "</td><td>" + std::to_string(v.first) + "</td><td>" +
         num(v.second) + "</td></tr>\n";
  s += "</table>\n<table class=\"facts\"><tr><th>device</th><th>purpose</th><th>held by the session</th></tr>\n";
  for (const auto& e : d.memory.entries)
    s += "<tr><td>" + html_escape(e.device) + "</td><td>" + html_escape(e.purpose) + "</td><td>" + mib(e.bytes) +
         "</td></tr>\n";
  s += "<tr><th colspan=\"2\">session, in all</th><td>" + mib(d.memory.total()) + "</td></tr>\n";
  s += "<tr><th colspan=\"2\">process resident now</th><td>" + mib(d.memory.process_resident_bytes) + "</td></tr>\n";
  s += "<tr><th colspan=\"2\">process peak resident</th><td>" + mib(d.peak_resident_bytes) + "</td></tr>\n";
  s += "</table>\n<details><summary>The plan (infer --explain)</summary><pre>" + html_escape(d.plan) +
       "</pre></details>\n";
  return s;
}

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 820px; color: #222; }
h1 { font-size: 1.4em; word-break: break-all; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } th, td { padding: 2px 10px; text-align: left; }
table.facts th { color: #555; font-weight: normal; } table.stats td, td.num, th.num { text-align: right; }
#nodes { width: 100%; font-size: 13px; } #nodes th { cursor: pointer; border-bottom: 1px solid #999; }
#nodes td:first-child { word-break: break-all; } #nodes tr:nth-child(even) { background: #f6f6f6; }
figure { margin: .5em 0; } figcaption, .note { color: #666; font-size: 12px; }
svg { width: 100%; height: auto; font-size: 11px; }
.bar { fill: #4878a8; } .bar:hover { fill: #e07020; } .point { fill: #4878a8; fill-opacity: .6; }
.line { fill: none; stroke: #4878a8; stroke-width: 1.2; } .line.max { stroke: #e07020; }
.grid { stroke: #eee; } .axis { stroke: #999; } .tick { fill: #666; } .title { fill: #444; }
text.note { fill: #666; } .mark { stroke: #c03030; stroke-dasharray: 4 3; } .mark-label { fill: #c03030; }
pre { font-size: 11px; overflow-x: auto; background: #f6f6f6; padding: .5em; }
)";

// Filters and sorts the per-node table; says how many nodes show. The last line marks
// the page rendered, which the browser test checks.
constexpr const char* kScript = R"(
(function () {
  const table = document.getElementById('nodes');
  if (table) {
    const body = table.tBodies[0], rows = Array.from(body.rows);
    const filter = document.getElementById('node-filter'), count = document.getElementById('node-count');
    const show = function () {
      const q = filter.value.toLowerCase();
      let shown = 0;
      for (const r of rows) {
        r.hidden = !r.textContent.toLowerCase().includes(q);
        if (!r.hidden) shown++;
      }
      count.textContent = shown + ' of ' + rows.length + ' nodes shown';
    };
    filter.addEventListener('input', show);
    Array.from(table.tHead.rows[0].cells).forEach(function (th, col) {
      th.addEventListener('click', function () {
        // First click: numbers largest first, text A to Z; each further click reverses.
        const numeric = th.classList.contains('num');
        const sign = th.dataset.sign ? -Number(th.dataset.sign) : (numeric ? -1 : 1);
        th.dataset.sign = sign;
        const key = function (r) {
          const t = r.cells[col].textContent;
          return numeric ? parseFloat(t) : t.toLowerCase();
        };
        rows.sort(function (a, b) {
          const x = key(a), y = key(b);
          return (x < y ? -1 : x > y ? 1 : 0) * sign;
        });
        for (const r of rows) body.appendChild(r);
      });
    });
    show();
  }
  document.body.dataset.rendered = 'ok';
})();
)";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string histogram_svg(const std::vector<double>& values, const std::vector<Mark>& marks) {
  const double height = 260;
  const double lo = *std::min_element(values.begin(), values.end());
  const double hi = *std::max_element(values.begin(), values.end());
  const int bins = hi > lo ? std::clamp(static_cast<int>(std::ceil(std::sqrt(values.size()))), 1, 50) : 1;
  const double width = hi > lo ? (hi - lo) / bins : 1;
  std::vector<int> counts(bins);
  for (double v : values) counts[std::min(static_cast<int>((v - lo) / width), bins - 1)] += 1;
  const Scale x{lo, lo + bins * width, kLeft, kWidth - kRight};
  const Scale y{0, static_cast<double>(*std::max_element(counts.begin(), counts.end())), height - kBottom, kTop};
  std::string s = svg_open(height, "latency histogram") + axes(x, y, height, "latency (ms)", "runs");
  for (int b = 0; b < bins; ++b) {
    const double a = lo + b * width;
    s += "<rect class=\"bar\" x=\"" + num(x(a) + 0.5, 1) + "\" y=\"" + num(y(counts[b]), 1) + "\" width=\"" +
         num(std::max(x(a + width) - x(a) - 1, 1.0), 1) + "\" height=\"" + num(y(0) - y(counts[b]), 1) +
         "\"><title>" + num(a) + " to " + num(a + width) + " ms: " + std::to_string(counts[b]) +
         " run(s)</title></rect>\n";
  }
  for (size_t i = 0; i < marks.size(); ++i) {
    const double at = x(marks[i].value);
    const bool left = at > kWidth - kRight - 100;  // a label near the right edge goes left of its line
    s += "<line class=\"mark\" x1=\"" + num(at, 1) + "\" x2=\"" + num(at, 1) + "\" y1=\"" + num(kTop - 6, 1) +
         "\" y2=\"" + num(height - kBottom, 1) + "\"/><text class=\"mark-label\" x=\"" + num(left ? at - 3 : at + 3, 1) +
         "\" text-anchor=\"" + (left ? "end" : "start") + "\" y=\"" + num(kTop + 8 + 12 * static_cast<double>(i), 1) + "\">" + html_escape(marks[i].label) + " " +
         num(marks[i].value) + "</text>\n";
  }
  return s + "</svg>";
}

std::string timeline_svg(const std::vector<double>& starts_s, const std::vector<double>& latencies_ms) {
  const double height = 260;
  const size_t n = latencies_ms.size();
  const double end = starts_s.back() + latencies_ms.back() / 1000;
  const Scale x{0, std::max(end, 1e-3), kLeft, kWidth - kRight};
  const Scale y{0, *std::max_element(latencies_ms.begin(), latencies_ms.end()), height - kBottom, kTop};
  std::string s = svg_open(height, "latency of each run") + axes(x, y, height, "start time (s)", "latency (ms)");
  if (n <= 2000) {
    for (size_t i = 0; i < n; ++i)
      s += "<circle class=\"point\" cx=\"" + num(x(starts_s[i]), 1) + "\" cy=\"" + num(y(latencies_ms[i]), 1) +
           "\" r=\"2\"><title>run " + std::to_string(i + 1) + " at " + num(starts_s[i]) +
           " s: " + num(latencies_ms[i]) + " ms</title></circle>\n";
    return s + "</svg>";
  }
  std::string median = "<polyline class=\"line\" points=\"", max = "<polyline class=\"line max\" points=\"";
  const size_t groups = 1000;
  for (size_t g = 0; g < groups; ++g) {
    const size_t a = g * n / groups, b = (g + 1) * n / groups;
    const std::vector<double> group(latencies_ms.begin() + a, latencies_ms.begin() + b);
    const std::string at = num(x(starts_s[a]), 1) + ",";
    median += at + num(y(percentile(group, 50)), 1) + " ";
    max += at + num(y(*std::max_element(group.begin(), group.end())), 1) + " ";
  }
  return s + median + "\"/>\n" + max + "\"/>\n<text class=\"note\" x=\"" + num(kLeft + 8, 1) + "\" y=\"" +
         num(kTop + 4, 1) + "\">" + std::to_string(n) +
         " runs in 1000 groups of consecutive runs: median (blue) and maximum (orange) of each</text>\n</svg>";
}

std::string bar_chart_svg(const std::vector<Mark>& bars) {
  const double bar = 20, label = 150, room = 150;  // bar height, label and value widths
  const double height = kTop + bar * static_cast<double>(bars.size()) + 8;
  double total = 0, most = 0;
  for (const Mark& m : bars) {
    total += m.value;
    most = std::max(most, m.value);
  }
  const Scale x{0, most, label, kWidth - room};
  std::string s = svg_open(height, "time per op type");
  for (size_t i = 0; i < bars.size(); ++i) {
    const double top = kTop + bar * static_cast<double>(i);
    const std::string share = num(total > 0 ? 100 * bars[i].value / total : 0, 1) + "%";
    s += "<text class=\"tick\" x=\"" + num(label - 6, 1) + "\" y=\"" + num(top + 14, 1) + "\" text-anchor=\"end\">" +
         html_escape(bars[i].label) + "</text><rect class=\"bar\" x=\"" + num(label, 1) + "\" y=\"" +
         num(top + 3, 1) + "\" width=\"" + num(std::max(x(bars[i].value) - label, 1.0), 1) + "\" height=\"" +
         num(bar - 6, 1) + "\"><title>" + html_escape(bars[i].label) + ": " + num(bars[i].value) + " ms, " + share +
         "</title></rect><text class=\"tick\" x=\"" + num(std::max(x(bars[i].value), label) + 6, 1) + "\" y=\"" +
         num(top + 14, 1) + "\">" + num(bars[i].value) + " ms (" + share + ")</text>\n";
  }
  return s + "</svg>";
}

std::string report_html(const ReportData& d) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>ember infer: " +
         html_escape(d.run.model) + "</title>\n<style>" + kStyle +
         "</style>\n<script>window.addEventListener('error', function (e) { document.body.dataset.error = "
         "String(e.message); });</script>\n</head>\n<body>\n<h1>ember infer: " +
         html_escape(d.run.model) + "</h1>\n<p class=\"note\">Benchmark report written by infer at " + when +
         ".</p>\n<h2>The run</h2>\n" + facts_table(d) + latency_section(d.result) + profile_section(d) +
         memory_section(d) + "<script>" + kScript + "</script>\n</body>\n</html>\n";
}

}  // namespace infer
