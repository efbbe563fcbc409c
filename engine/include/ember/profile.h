// ember::Profile — where the time of a run went, node by node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

struct NodeTiming {
  std::string node;        // node name (or "op_type#index" when the model has none)
  std::string op_type;
  std::string device;      // "cpu", "cuda:0"
  std::string output_shape;
  int64_t start_ns = 0;    // from the start of the run
  int64_t duration_ns = 0;
};

// One node over every run of a profile.
struct NodeSummary {
  std::string node, op_type, device, output_shape;
  double mean_ms = 0;  // per run
  double share = 0;    // of the time in nodes, in [0, 1]
};

struct Profile {
  std::vector<NodeTiming> timings;  // appended run after run
  int runs = 0;
  int64_t total_ns = 0;             // wall time of the runs, summed

  // Per node (and device): mean time per run and share of the time in nodes, slowest first.
  std::vector<NodeSummary> by_node() const;
  // by_node() as a text table, with the mean run time below it.
  std::string table() const;
  // Chrome trace event JSON (chrome://tracing, Perfetto).
  std::string chrome_trace() const;
};

}  // namespace ember
