#include "ops/cuda/reduce_plan.h"

namespace ember::cuda {

namespace {

struct Run {
  int64_t size, stride;  // stride: of the run's innermost dim, in elements
  bool reduced;
};

bool fill(StridedDims* dims, const std::vector<Run>& runs, bool reduced) {
  for (const Run& r : runs) {
    if (r.reduced != reduced) continue;
    if (dims->n == kReduceMaxDims) return false;
    dims->size[dims->n] = r.size;
    dims->stride[dims->n] = r.stride;
    ++dims->n;
  }
  return true;
}

}  // namespace

bool plan_reduce(const Shape& shape, const std::vector<bool>& reduced, ReduceLayout* layout) {
  // Element strides of the row-major input.
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  // Size-1 dims are dropped (they change no offset); neighbours of one kind merge.
  std::vector<Run> runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced[d]) {
      runs.back().size *= shape[d];
      runs.back().stride = strides[d];
    } else {
      runs.push_back({shape[d], strides[d], static_cast<bool>(reduced[d])});
    }
  }
  *layout = ReduceLayout{};
  auto kinds_are = [&](std::initializer_list<bool> kinds) {
    if (runs.size() != kinds.size()) return false;
    size_t i = 0;
    for (bool k : kinds)
      if (runs[i++].reduced != k) return false;
    return true;
  };
  if (runs.empty()) {  // a single element
    layout->kind = ReduceLayoutKind::Rows;
  } else if (kinds_are({true})) {
    layout->kind = ReduceLayoutKind::Rows;
    layout->rows = {1, runs[0].size};
  } else if (kinds_are({false, true})) {
    layout->kind = ReduceLayoutKind::Rows;
    layout->rows = {runs[0].size, runs[1].size};
  } else if (kinds_are({false})) {  // nothing reduced (noop_with_empty_axes): n = 1
    layout->kind = ReduceLayoutKind::Columns;
    layout->columns = {1, 1, runs[0].size};
  } else if (kinds_are({true, false})) {
    layout->kind = ReduceLayoutKind::Columns;
    layout->columns = {1, runs[0].size, runs[1].size};
  } else if (kinds_are({false, true, false})) {
    layout->kind = ReduceLayoutKind::Columns;
    layout->columns = {runs[0].size, runs[1].size, runs[2].size};
  } else {
    layout->kind = ReduceLayoutKind::General;
    GeneralLayout& g = layout->general;
    if (!fill(&g.kept, runs, false) || !fill(&g.reduced, runs, true)) return false;
    for (int d = 0; d < g.kept.n; ++d) g.out_count *= g.kept.size[d];
    for (int d = 0; d < g.reduced.n; ++d) g.reduce_count *= g.reduced.size[d];
  }
  return true;
}

}  // namespace ember::cuda
