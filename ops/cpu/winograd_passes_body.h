// The Winograd transforms and passes of ops/cpu/winograd_passes.h, written once over a
// vector of float lanes. Included by winograd_passes_avx2.cc and winograd_passes_avx512.cc
// inside a namespace of their own, after they define there, for their instruction set:
//   Vec, kLanes, load(p), store(p, a), zero(), splat(f), add(a, b), sub(a, b), mul(a, b),
//   fmadd(a, b, c) = a b + c, fnmadd(a, b, c) = c - a b, min(a, b), max(a, b).
// It includes nothing: an inline function of a shared header instantiated here would be
// compiled for the including file's instruction set, and the linker could hand that copy
// to every caller (an AVX-512 instruction on an AVX2 CPU).

// The transforms of F(m, 3), one column or row of vectors at a time: B^T d takes kIn
// inputs into the transform domain, A^T m its kIn products back to kOut outputs.
template <int kOut>
struct Transform;

// F(4x4, 3x3): 36 products per 16 outputs.
template <>
struct Transform<4> {
  static constexpr int kIn = 6;
  static void input(const Vec* d, Vec* r) {
    const Vec four = splat(4.f), five = splat(5.f), two = splat(2.f);
    r[0] = add(fnmadd(five, d[2], mul(four, d[0])), d[4]);
    const Vec a = fnmadd(four, d[2], d[4]), b = fnmadd(four, d[1], d[3]);
    r[1] = add(a, b);
    r[2] = sub(a, b);
    const Vec e = sub(d[4], d[2]), f = mul(two, sub(d[3], d[1]));
    r[3] = add(e, f);
    r[4] = sub(e, f);
    r[5] = add(fnmadd(five, d[3], mul(four, d[1])), d[5]);
  }
  static void output(const Vec* m, Vec* o) {
    const Vec s12 = add(m[1], m[2]), d12 = sub(m[1], m[2]);
    const Vec s34 = add(m[3], m[4]), d34 = sub(m[3], m[4]);
    o[0] = add(add(m[0], s12), s34);
    o[1] = fmadd(splat(2.f), d34, d12);
    o[2] = fmadd(splat(4.f), s34, s12);
    o[3] = add(fmadd(splat(8.f), d34, d12), m[5]);
  }
};

// F(2x2, 3x3): 16 products per 4 outputs.
template <>
struct Transform<2> {
  static constexpr int kIn = 4;
  static void input(const Vec* d, Vec* r) {
    r[0] = sub(d[0], d[2]);
    r[1] = add(d[1], d[2]);
    r[2] = sub(d[2], d[1]);
    r[3] = sub(d[1], d[3]);
  }
  static void output(const Vec* m, Vec* o) {
    o[0] = add(add(m[0], m[1]), m[2]);
    o[1] = sub(sub(m[1], m[2]), m[3]);
  }
};

// The kIn x kIn input tile at (y0, x0) of one block's plane, zero outside it (the pads).
template <int kIn>
void load_input_tile(const float* plane, int64_t h, int64_t w, int64_t y0, int64_t x0, Vec (&d)[kIn][kIn]) {
  if (y0 >= 0 && x0 >= 0 && y0 + kIn <= h && x0 + kIn <= w) {
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kIn; ++j) d[i][j] = load(plane + ((y0 + i) * w + x0 + j) * kLanes);
    return;
  }
  for (int i = 0; i < kIn; ++i)
    for (int j = 0; j < kIn; ++j) {
      const int64_t yy = y0 + i, xx = x0 + j;
      d[i][j] = yy >= 0 && yy < h && xx >= 0 && xx < w ? load(plane + (yy * w + xx) * kLanes) : zero();
    }
}

template <int kOut>
void transform_inputs_of(const Grid& g, const float* x, float* v, int64_t first, int64_t begin, int64_t end) {
  using T = Transform<kOut>;
  constexpr int kIn = T::kIn;
  const int64_t channels = g.blocks_in * kLanes, point_stride = g.chunk * channels;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t tile = item / g.blocks_in, block = item % g.blocks_in;
    const int64_t image = (first + tile) / (g.tiles_h * g.tiles_w), at = (first + tile) % (g.tiles_h * g.tiles_w);
    const int64_t y0 = at / g.tiles_w * kOut - g.pad_h, x0 = at % g.tiles_w * kOut - g.pad_w;
    Vec d[kIn][kIn];
    load_input_tile<kIn>(x + (image * g.blocks_in + block) * g.h * g.w * kLanes, g.h, g.w, y0, x0, d);
    Vec col[kIn], r[kIn][kIn];
    for (int j = 0; j < kIn; ++j) {
      for (int i = 0; i < kIn; ++i) col[i] = d[i][j];
      Vec out[kIn];
      T::input(col, out);
      for (int i = 0; i < kIn; ++i) r[i][j] = out[i];
    }
    float* to = v + tile * channels + block * kLanes;
    for (int i = 0; i < kIn; ++i) {
      Vec out[kIn];
      T::input(r[i], out);
      for (int j = 0; j < kIn; ++j) store(to + (i * kIn + j) * point_stride, out[j]);
    }
  }
}

template <int kOut>
void transform_outputs_of(const Grid& g, const float* m, const Epilogue& e, float* y, int64_t first, int64_t begin,
                          int64_t end) {
  using T = Transform<kOut>;
  constexpr int kIn = T::kIn;
  const int64_t filters = g.blocks_out * kLanes, point_stride = g.chunk * filters;
  const Vec lo = splat(e.lo), hi = splat(e.hi);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t tile = item / g.blocks_out, block = item % g.blocks_out;
    const int64_t image = (first + tile) / (g.tiles_h * g.tiles_w), at = (first + tile) % (g.tiles_h * g.tiles_w);
    const int64_t y0 = at / g.tiles_w * kOut, x0 = at % g.tiles_w * kOut;
    const float* from = m + tile * filters + block * kLanes;
    Vec col[kIn], r[kOut][kIn];
    for (int j = 0; j < kIn; ++j) {
      for (int i = 0; i < kIn; ++i) col[i] = load(from + (i * kIn + j) * point_stride);
      Vec out[kOut];
      T::output(col, out);
      for (int i = 0; i < kOut; ++i) r[i][j] = out[i];
    }
    const Vec b = e.bias ? load(e.bias + block * kLanes) : zero();
    const int64_t plane = (image * g.blocks_out + block) * g.oh * g.ow * kLanes;
    const int64_t rows = g.oh - y0 < kOut ? g.oh - y0 : kOut, cols = g.ow - x0 < kOut ? g.ow - x0 : kOut;
    for (int64_t i = 0; i < rows; ++i) {
      Vec out[kOut];
      T::output(r[i], out);
      const int64_t row = plane + ((y0 + i) * g.ow + x0) * kLanes;
      for (int64_t j = 0; j < cols; ++j) {
        Vec value = add(out[j], b);
        if (e.residual) value = add(value, load(e.residual + row + j * kLanes));
        // The bound first: NaN stays NaN, as through max(0, x).
        store(y + row + j * kLanes, min(hi, max(lo, value)));
      }
    }
  }
}

void transform_inputs(Form f, const Grid& g, const float* x, float* v, int64_t first, int64_t begin, int64_t end) {
  if (f == Form::F2x2) transform_inputs_of<2>(g, x, v, first, begin, end);
  else transform_inputs_of<4>(g, x, v, first, begin, end);
}

void transform_outputs(Form f, const Grid& g, const float* m, const Epilogue& e, float* y, int64_t first,
                       int64_t begin, int64_t end) {
  if (f == Form::F2x2) transform_outputs_of<2>(g, m, e, y, first, begin, end);
  else transform_outputs_of<4>(g, m, e, y, first, begin, end);
}
