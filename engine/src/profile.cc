#include <ember/profile.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace ember {

namespace {

struct NodeTotal {
  std::string node, op_type, device, shape;
  int64_t total_ns = 0;
  int64_t calls = 0;
  size_t first_seen = 0;
};

}  // namespace

std::vector<NodeSummary> Profile::by_node() const {
  std::map<std::string, NodeTotal> totals;
  for (const NodeTiming& t : timings) {
    auto [it, inserted] = totals.try_emplace(t.node + "\x1f" + t.device);
    NodeTotal& n = it->second;
    if (inserted) n = {t.node, t.op_type, t.device, t.output_shape, 0, 0, totals.size()};
    n.total_ns += t.duration_ns;
    n.calls += 1;
  }
  std::vector<NodeTotal> rows;
  int64_t busy_ns = 0;
  for (auto& [_, n] : totals) {
    rows.push_back(n);
    busy_ns += n.total_ns;
  }
  std::sort(rows.begin(), rows.end(), [](const NodeTotal& a, const NodeTotal& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.first_seen < b.first_seen;
  });
  const int n_runs = std::max(runs, 1);
  std::vector<NodeSummary> out;
  for (const NodeTotal& r : rows)
    out.push_back({r.node, r.op_type, r.device, r.shape, r.total_ns / 1e6 / n_runs,
                   busy_ns ? static_cast<double>(r.total_ns) / busy_ns : 0.0});
  return out;
}

std::string Profile::table() const {
  const std::vector<NodeSummary> rows = by_node();
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-20s %-7s %-22s %10s %7s\n", "node", "op", "device",
                "output shape", "mean ms", "share");
  os << line;
  double busy_ms = 0;
  for (const NodeSummary& r : rows) {
    std::snprintf(line, sizeof line, "%-40.40s %-20.20s %-7s %-22.22s %10.3f %6.1f%%\n", r.node.c_str(),
                  r.op_type.c_str(), r.device.c_str(), r.output_shape.c_str(), r.mean_ms, 100 * r.share);
    os << line;
    busy_ms += r.mean_ms;
  }
  std::snprintf(line, sizeof line, "%d run(s), mean %.3f ms per run, %.3f ms in nodes\n", runs,
                total_ns / 1e6 / std::max(runs, 1), busy_ms);
  os << line;
  return os.str();
}

// Events are laid end to end run after run, one track per device, so a trace of many
// runs reads like a timeline.
std::string Profile::chrome_trace() const {
  nlohmann::json events = nlohmann::json::array();
  int64_t run_offset_ns = 0, last_start = -1, run_end_ns = 0;
  for (const NodeTiming& t : timings) {
    if (t.start_ns < last_start) {  // a new run began
      run_offset_ns += run_end_ns;
      run_end_ns = 0;
    }
    last_start = t.start_ns;
    run_end_ns = std::max(run_end_ns, t.start_ns + t.duration_ns);
    events.push_back({{"name", t.node},
                      {"cat", t.op_type},
                      {"ph", "X"},
                      {"ts", (run_offset_ns + t.start_ns) / 1000.0},
                      {"dur", t.duration_ns / 1000.0},
                      {"pid", 1},
                      {"tid", t.device},
                      {"args", {{"op_type", t.op_type}, {"output_shape", t.output_shape}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(1);
}

}  // namespace ember
