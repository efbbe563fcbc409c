// cuBLASLt's algorithm for a matmul, optionally chosen by timing when the plan is made.
//
// By default a plan takes the heuristic's first pick (cublasLtMatmulAlgoGetHeuristic's
// best guess). With EMBER_CUBLASLT_TIMING=1 the candidates the heuristic returns are
// each run a few times on scratch operands and the fastest is kept, once per process
// for each distinct problem (a bounded cache: plans for many input shapes, and many
// sessions, time each problem once). Measured on an H100 (batch 64, float16, CUDA
// graph, 2026-11-26): BERT-base 4.85-4.93 ms timed against 4.81-4.83 heuristic, ViT-B/16
// equal; a product timed alone is not the product inside the network, so timing is
// opt-in.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::cuda {

struct LtAlgorithm {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;  // bytes it needs
};

// Whether plans time the candidates (EMBER_CUBLASLT_TIMING=1).
bool lt_timing_enabled();

// The algorithm timed before for the problem `key` (every parameter that decides the
// choice, as text), if any.
std::optional<LtAlgorithm> cached_lt_algorithm(const std::string& key);

// Runs the matmul once on the scratch operands with `algorithm`, its workspace at
// `workspace`, on the stream given to fastest_lt_algorithm.
using LtTrial = std::function<cublasStatus_t(const LtAlgorithm& algorithm, void* workspace)>;

// The fastest of `candidates` (non-empty, the heuristic's order) by cudaEvent time on
// `stream`, remembered under `key`. Falls back to the first candidate when the stream
// is capturing a CUDA graph, the workspace cannot be allocated, or no trial succeeds.
LtAlgorithm fastest_lt_algorithm(const std::string& key, const std::vector<LtAlgorithm>& candidates,
                                 cudaStream_t stream, const LtTrial& trial);

}  // namespace ember::cuda
