#include "ops/cuda/movement_util.h"

#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"

#include <cassert>
#include <climits>

namespace ember::cuda {

size_t movement_elem(DType dtype, std::string* why_not) {
  const size_t elem = movement_elem_size(dtype);
  if (elem == 1 || elem == 2 || elem == 4 || elem == 8) return elem;
  *why_not = std::string(dtype_name(dtype)) + " is not supported on CUDA";
  return 0;
}

bool inputs_known(const KernelInit& init, std::initializer_list<size_t> which, const char* what,
                  std::string* why_not) {
  for (size_t i : which) {
    if (i < init.inputs.size() && init.inputs[i].present() && (i >= init.values.size() || !init.values[i])) {
      *why_not = std::string(what) + " must be a plan-time constant on CUDA";
      return false;
    }
  }
  return true;
}

size_t pow2_divisor(uint64_t bytes) {
  size_t unit = 16;
  while (unit > 1 && bytes % unit) unit /= 2;
  return unit;
}

bool aligned_to(size_t unit, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % unit) return false;
  return true;
}

namespace {

// Drops dims of length 1 and merges neighbours (outer, inner) whose input strides make
// them one dim (outer stride == inner stride * inner length; broadcast dims, stride 0,
// merge with each other). Never leaves rank 0. All dims must be non-empty.
void simplify(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
    } else {
      d.push_back(dims[i]);
      s.push_back(strides[i]);
    }
  }
  if (d.empty()) {
    d = {1};
    s = {1};
  }
  dims = std::move(d);
  strides = std::move(s);
}

StridedCopy to_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base,
                    size_t unit) {
  StridedCopy c;
  c.rank = static_cast<int32_t>(dims.size());
  c.unit = static_cast<int32_t>(unit);
  c.numel = 1;
  c.base = base;
  int64_t lowest = base, highest = base;
  for (size_t d = 0; d < dims.size(); ++d) {
    c.dims[d] = dims[d];
    c.strides[d] = strides[d];
    c.numel *= dims[d];
    const int64_t reach = (dims[d] - 1) * strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  assert(lowest >= 0 && "a strided copy must not read before its input");
  (void)lowest;
  c.in_extent = highest + 1;
  return c;
}

}  // namespace

bool StridedCopyPlan::build(std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t base, size_t elem,
                            std::string* why_not) {
  for (int64_t d : dims)
    if (d == 0) {
      empty_ = true;
      return true;
    }
  simplify(dims, strides);
  if (dims.size() > static_cast<size_t>(kMoveMaxRank)) {
    *why_not = "more than " + std::to_string(kMoveMaxRank) + " dims remain after merging (rank too large for CUDA)";
    return false;
  }
  narrow_ = wide_ = to_copy(dims, strides, base, elem);
  // Wider units: the innermost dim must be contiguous in the input and every offset a
  // multiple of the widening factor.
  const size_t r = dims.size();
  if (strides[r - 1] != 1) return true;
  for (size_t unit = 16; unit > elem; unit /= 2) {
    const int64_t k = static_cast<int64_t>(unit / elem);
    bool ok = dims[r - 1] % k == 0 && base % k == 0;
    for (size_t d = 0; d + 1 < r; ++d) ok = ok && strides[d] % k == 0;
    if (!ok) continue;
    std::vector<int64_t> wd = dims, ws = strides;
    wd[r - 1] /= k;
    for (size_t d = 0; d + 1 < r; ++d) ws[d] /= k;
    simplify(wd, ws);
    wide_ = to_copy(wd, ws, base / k, unit);
    break;
  }
  return true;
}

void StridedCopyPlan::allow_tiled_transpose() {
  const StridedCopy& c = narrow_;
  const int r = c.rank;
  if (empty_ || r < 2 || c.strides[r - 1] == 1) return;
  int a = -1;
  for (int d = 0; d < r; ++d)
    if (c.strides[d] == 1) a = d;
  if (a < 0) return;
  const int64_t size_a = c.dims[a], size_b = c.dims[r - 1];
  // Short dims leave most of a 32x32 tile idle; the plain copy does as well there.
  if (size_a < 8 || size_b < 8) return;
  const int64_t tiles = ((size_a + 31) / 32) * ((size_b + 31) / 32);
  if (tiles > INT_MAX) return;
  TiledTranspose t;
  t.unit = c.unit;
  t.size_a = size_a;
  t.size_b = size_b;
  t.in_stride_b = c.strides[r - 1];
  int64_t out_stride = 1;
  int64_t out_strides[kMoveMaxRank];
  for (int d = r - 1; d >= 0; --d) {
    out_strides[d] = out_stride;
    out_stride *= c.dims[d];
  }
  t.out_stride_a = out_strides[a];
  for (int d = 0; d < r - 1; ++d) {
    if (d == a) continue;
    t.batch_dims[t.batch_rank] = c.dims[d];
    t.batch_in_strides[t.batch_rank] = c.strides[d];
    t.batch_out_strides[t.batch_rank] = out_strides[d];
    t.batches *= c.dims[d];
    ++t.batch_rank;
  }
  tiled_ = t;
  use_tiled_ = true;
}

void StridedCopyPlan::run(const void* in, void* out, cudaStream_t stream, const char* what) const {
  if (empty_) return;
  if (use_tiled_) launch_tiled_transpose(tiled_, in, out, stream);
  else launch_strided_copy(aligned_to(static_cast<size_t>(wide_.unit), {in, out}) ? wide_ : narrow_, in, out, stream);
  check_launch(what);
}

void StridedCopyKernel::run(const RunArgs& args) const {
  plan_.run(args.inputs[0]->data(), args.outputs[0]->data(), stream_context(args).stream, what_.c_str());
}

}  // namespace ember::cuda
