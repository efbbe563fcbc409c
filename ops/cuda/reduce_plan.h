// Host side of the CUDA reductions' layout choice (reduce_impl.h describes the
// layouts): collapses the input shape and the reduced-dims mask at plan time.
#pragma once

#include "ops/cuda/reduce_impl.h"

#include <ember/core/tensor.h>

#include <vector>

namespace ember::cuda {

// False when the collapsed shape has more than kReduceMaxDims kept or reduced runs.
bool plan_reduce(const Shape& shape, const std::vector<bool>& reduced, ReduceLayout* layout);

}  // namespace ember::cuda
