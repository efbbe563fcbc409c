// CPU kernel for GridSample (opsets 16, 20, 22): samples X [N, C, D1..Dk] at the
// normalized points of grid [N, O1..Ok, k] (last dim ordered x, y, z..., i.e. the
// spatial dims reversed) with nearest, (bi/tri)linear or (bi)cubic interpolation.
//
// Each output point is separable: per spatial dim a few taps (index, weight), with the
// padding mode resolving out-of-range indices (zeros: the tap reads 0; border: clamp;
// reflection: mirror at the borders), then the sum over all tap combinations.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

constexpr int kMaxSpatial = 3;

enum class Mode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct GridParams {
  int64_t n = 0, c = 0, k = 0;          // batch, channels, spatial rank
  int64_t in[kMaxSpatial] = {};         // input spatial dims
  int64_t out_points = 0;               // product of the grid's spatial dims
  int64_t in_points = 0;
  Mode mode = Mode::Linear;
  Padding padding = Padding::Zeros;
  bool align_corners = false;
};

// Mirrors x into [lo, hi] by folding at the borders as often as needed.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double w[4]) {
  constexpr double a = -0.75;
  const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
  w[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
  w[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  w[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

struct Taps {
  int count = 0;
  int64_t index[4];  // -1: reads zero
  double weight[4];
};

class Sampler {
 public:
  explicit Sampler(const GridParams& p) : p_(p) {}

  // The taps along spatial dim d for normalized coordinate g.
  Taps taps(int d, double g) const {
    const int64_t size = p_.in[d];
    const double lo = p_.align_corners ? 0.0 : -0.5;
    const double hi = p_.align_corners ? double(size - 1) : double(size) - 0.5;
    double x = p_.align_corners ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
    if (p_.mode == Mode::Nearest) x = std::nearbyint(x);  // half to even, as numpy's rint
    if (x < lo || x > hi) {
      if (p_.padding == Padding::Border) x = std::clamp(x, 0.0, double(size - 1));
      if (p_.padding == Padding::Reflection) x = reflect(x, lo, hi);
    }
    Taps t;
    if (p_.mode == Mode::Nearest) {
      t.count = 1;
      t.index[0] = resolve(static_cast<int64_t>(x), size, lo, hi);
      t.weight[0] = 1;
      return t;
    }
    const double x0 = std::floor(x), f = x - x0;
    const int64_t i0 = static_cast<int64_t>(x0);
    if (p_.mode == Mode::Linear) {
      t.count = 2;
      t.weight[0] = 1 - f, t.weight[1] = f;
      for (int i = 0; i < 2; ++i) t.index[i] = resolve(i0 + i, size, lo, hi);
    } else {
      t.count = 4;
      cubic_coeffs(f, t.weight);
      for (int i = 0; i < 4; ++i) t.index[i] = resolve(i0 - 1 + i, size, lo, hi);
    }
    return t;
  }

 private:
  int64_t resolve(int64_t i, int64_t size, double lo, double hi) const {
    if (i >= 0 && i < size) return i;
    if (p_.padding == Padding::Zeros) return -1;
    if (p_.padding == Padding::Border) return std::clamp<int64_t>(i, 0, size - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(double(i), lo, hi)), 0, size - 1);
  }

  const GridParams& p_;
};

template <class T>
class GridSampleKernel final : public Kernel {
 public:
  explicit GridSampleKernel(GridParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* grid = args.inputs[1]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const Sampler sampler(p_);
    parallel_for(p_.n * p_.out_points, p_.c * 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / p_.out_points, o = r % p_.out_points;
        Taps taps[kMaxSpatial];
        for (int d = 0; d < p_.k; ++d)
          taps[d] = sampler.taps(d, convert<double>(grid[r * p_.k + (p_.k - 1 - d)]));
        for (int64_t c = 0; c < p_.c; ++c) {
          const T* plane = x + (n * p_.c + c) * p_.in_points;
          y[(n * p_.c + c) * p_.out_points + o] = T(sample(plane, taps, 0, 0, 1.0));
        }
      }
    });
  }

 private:
  // Sum over the taps of dims d.. given the offset and weight of dims before d.
  double sample(const T* plane, const Taps* taps, int d, int64_t offset, double weight) const {
    if (d >= p_.k || d >= kMaxSpatial) return weight * convert<double>(plane[offset]);
    double sum = 0;
    for (int i = 0; i < taps[d].count; ++i) {
      if (taps[d].index[i] < 0 || taps[d].weight[i] == 0) continue;
      sum += sample(plane, taps, d + 1, offset * p_.in[d] + taps[d].index[i], weight * taps[d].weight[i]);
    }
    return sum;
  }

  GridParams p_;
};

std::unique_ptr<Kernel> make_grid_sample(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const Shape& grid = init.inputs[1].shape;
  GridParams p;
  p.n = x[0], p.c = x[1], p.k = static_cast<int64_t>(x.size()) - 2;
  if (p.k < 1 || p.k > kMaxSpatial) {
    *why_not = "only 1 to 3 spatial dims are supported";
    return nullptr;
  }
  p.in_points = p.out_points = 1;
  for (int64_t d = 0; d < p.k; ++d) p.in[d] = x[d + 2], p.in_points *= x[d + 2];
  for (size_t d = 1; d + 1 < grid.size(); ++d) p.out_points *= grid[d];
  const auto& a = init.node.attributes;
  // Opset 16 names the modes bilinear/bicubic; 20 generalizes them to linear/cubic.
  const std::string mode = a.get_string_or("mode", init.opset < 20 ? "bilinear" : "linear");
  const bool old = init.opset < 20;
  if (mode == "nearest") p.mode = Mode::Nearest;
  else if (mode == (old ? "bilinear" : "linear")) p.mode = Mode::Linear;
  else if (mode == (old ? "bicubic" : "cubic")) p.mode = Mode::Cubic;
  else init.fail("unknown mode '" + mode + "'");
  const std::string padding = a.get_string_or("padding_mode", "zeros");
  if (padding == "zeros") p.padding = Padding::Zeros;
  else if (padding == "border") p.padding = Padding::Border;
  else if (padding == "reflection") p.padding = Padding::Reflection;
  else init.fail("unknown padding_mode '" + padding + "'");
  p.align_corners = a.get_int_or("align_corners", 0) != 0;
  const DType dtype = init.inputs[0].dtype;
  if (init.inputs[1].dtype != dtype) {
    *why_not = "grid and X of different dtypes";
    return nullptr;
  }
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<GridSampleKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("GridSample", "", 16, kMaxOpset, DeviceKind::Cpu, make_grid_sample);

}  // namespace ember
