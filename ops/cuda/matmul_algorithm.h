// cuBLASLt's algorithm for a matmul, chosen by timing when the plan is made.
//
// The heuristic's first pick (cublasLtMatmulAlgoGetHeuristic's best guess) is not the
// fastest for every shape and epilogue: on an H100, BERT-base's [8192, 768] x [768,
// 3072] product with a bias epilogue ran at a third of the speed of the same FLOPs
// the other way round. So the candidates the heuristic returns are each run a few
// times on scratch operands and the fastest is kept, once per process for each
// distinct problem (a bounded cache: plans for many input shapes, and many sessions,
// time each problem once). EMBER_CUBLASLT_HEURISTIC=1 keeps the heuristic's first pick.
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

// Whether plans time the candidates (EMBER_CUBLASLT_HEURISTIC unset or 0).
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
