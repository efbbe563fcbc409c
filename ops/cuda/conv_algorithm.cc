#include "ops/cuda/conv_algorithm.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember::cuda {

namespace {

bool timing_asked() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_CUDNN_FIND");
    return v && std::string(v) == "1";
  }();
  return on;
}

// The timed choices so far, per geometry. Plans for many input shapes and many
// sessions share one, so a geometry is timed once per process; it grows only with
// distinct geometries, and past kMaxCached they are timed per plan instead.
constexpr size_t kMaxCached = 4096;
std::mutex cache_mutex;
std::unordered_map<std::string, ForwardAlgorithm>& cache() {
  static auto* map = new std::unordered_map<std::string, ForwardAlgorithm>;  // outlives every session
  return *map;
}

// The first of `perf` (best first) that ran, keeps ember's precision and fits the
// workspace limit, with `conv` set to its math type: the workspace query and the run
// must see the math type the algorithm was measured (or ranked) with.
bool first_usable(const StreamContext& ctx, const TensorDesc& x, const FilterDesc& w, const ConvDesc& conv,
                  const TensorDesc& y, bool half, const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf, int count,
                  ForwardAlgorithm* chosen) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || !usable_math_type(half, perf[i].mathType)) continue;
    check(cudnnSetConvolutionMathType(conv.get(), perf[i].mathType), "cudnnSetConvolutionMathType");
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, x.get(), w.get(), conv.get(), y.get(), perf[i].algo,
                                                &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > kConvWorkspaceLimit)
      continue;
    chosen->algo = perf[i].algo;
    chosen->math = perf[i].mathType;
    chosen->workspace = bytes;
    return true;
  }
  return false;
}

std::vector<cudnnConvolutionFwdAlgoPerf_t> perf_slots(const StreamContext& ctx) {
  int max_count = 0;
  check(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max_count),
        "cudnnGetConvolutionForwardAlgorithmMaxCount");
  return std::vector<cudnnConvolutionFwdAlgoPerf_t>(static_cast<size_t>(std::max(max_count, 1)));
}

// cudnnFind runs every algorithm on buffers it allocates itself (on the plan stream's
// device; it synchronizes) and returns them fastest first. Its failing (say, no memory
// for its buffers) is no error here: the heuristic follows.
bool timed(const StreamContext& ctx, const TensorDesc& x, const FilterDesc& w, const ConvDesc& conv,
           const TensorDesc& y, bool half, ForwardAlgorithm* chosen) {
  // set_conv_desc left the math type to measure with: FMA for float32 (no TF32),
  // tensor ops for float16.
  check(cudnnSetConvolutionMathType(conv.get(), half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf = perf_slots(ctx);
  int returned = 0;
  if (cudnnFindConvolutionForwardAlgorithm(ctx.cudnn, x.get(), w.get(), conv.get(), y.get(),
                                           static_cast<int>(perf.size()), &returned,
                                           perf.data()) != CUDNN_STATUS_SUCCESS) {
    cudaGetLastError();  // a failed allocation inside must not surface at a later launch check
    return false;
  }
  chosen->timed = true;
  return first_usable(ctx, x, w, conv, y, half, perf, returned, chosen);
}

bool heuristic(const StreamContext& ctx, const TensorDesc& x, const FilterDesc& w, const ConvDesc& conv,
               const TensorDesc& y, bool half, ForwardAlgorithm* chosen) {
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf = perf_slots(ctx);
  int returned = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, x.get(), w.get(), conv.get(), y.get(),
                                               static_cast<int>(perf.size()), &returned, perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7");
  chosen->timed = false;
  return first_usable(ctx, x, w, conv, y, half, perf, returned, chosen);
}

}  // namespace

bool choose_forward_algorithm(const StreamContext& ctx, const TensorDesc& x, const FilterDesc& w,
                              const ConvDesc& conv, const TensorDesc& y, bool half, const std::string& key,
                              ForwardAlgorithm* chosen) {
  if (!timing_asked()) return heuristic(ctx, x, w, conv, y, half, chosen);
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache().find(key); it != cache().end()) {
      *chosen = it->second;
      check(cudnnSetConvolutionMathType(conv.get(), chosen->math), "cudnnSetConvolutionMathType");
      return true;
    }
  }
  // Timed outside the lock: plans of other geometries go on meanwhile (two plans of
  // the same new geometry may both time it; the second result is dropped).
  if (timed(ctx, x, w, conv, y, half, chosen)) {
    std::lock_guard lock(cache_mutex);
    if (cache().size() < kMaxCached) cache().emplace(key, *chosen);
    return true;
  }
  return heuristic(ctx, x, w, conv, y, half, chosen);
}

}  // namespace ember::cuda
