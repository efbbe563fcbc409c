#include "ops/cuda/conv_plan.h"

#include <algorithm>
#include <cstring>

namespace ember::cuda {

ConvPadding conv_padding(const Shape& x, const WindowGeometry& g) {
  ConvPadding p;
  const size_t sd = x.size() - 2, lead = 3 - sd;
  p.padded_x = x;
  p.symmetric.resize(sd);
  p.copy_args.planes = x[0] * x[1];
  for (size_t i = 0; i < sd; ++i) {
    const int64_t sym = std::min(g.pads_begin[i], g.pads_end[i]);
    const int64_t extra_begin = g.pads_begin[i] - sym, extra_end = g.pads_end[i] - sym;
    p.copy |= extra_begin > 0 || extra_end > 0;
    p.symmetric[i] = sym;
    p.padded_x[2 + i] += extra_begin + extra_end;
    p.copy_args.in[lead + i] = x[2 + i];
    p.copy_args.out[lead + i] = p.padded_x[2 + i];
    p.copy_args.shift[lead + i] = extra_begin;
  }
  return p;
}

DeconvGeometry deconv_geometry(const Shape& x, const Shape& y, const TransposedWindow& t) {
  const WindowGeometry& g = t.window;
  const size_t sd = x.size() - 2, lead = 3 - sd;
  DeconvGeometry d;
  for (size_t i = 0; i < sd; ++i) d.direct &= g.pads_begin[i] == g.pads_end[i] && t.output_padding[i] == 0;
  d.full = y;
  d.pads.assign(sd, 0);
  d.crop.planes = y[0] * y[1];
  for (size_t i = 0; i < sd; ++i) {
    if (d.direct) {
      d.pads[i] = g.pads_begin[i];
      continue;
    }
    // Every output position an input reaches, unpadded: s * (in - 1) + dilated kernel.
    d.full[2 + i] = g.strides[i] * (x[2 + i] - 1) + (g.kernel[i] - 1) * g.dilations[i] + 1;
    d.crop.in[lead + i] = d.full[2 + i];
    d.crop.out[lead + i] = y[2 + i];
    d.crop.shift[lead + i] = -g.pads_begin[i];  // y[o] = full[o + pads_begin], 0 past the end
  }
  return d;
}

Tensor filter_to_krsc(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t k = s[0], c = s[1], rs = s[2] * s[3];
  const size_t esize = static_cast<size_t>(dtype_bits(w.dtype()) / 8);
  Tensor out(w.dtype(), {k, s[2], s[3], c});
  const char* in = static_cast<const char*>(w.data());
  char* o = static_cast<char*>(out.data());
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p)
        std::memcpy(o + ((ki * rs + p) * c + ci) * esize, in + ((ki * c + ci) * rs + p) * esize, esize);
  return out;
}

}  // namespace ember::cuda
