// Cast and CastLike where the input or the output is a float8 type, Float8E8M0, a
// packed 4-bit or 2-bit integer or Float4E2M1. Every element goes through a double (exact
// for all the small types) plus, for integer sources, an int64 so that casts to the
// 4-bit and 2-bit integers wrap as ONNX's fixed-point rule says. The encodings themselves are
// the quantization ones in quant_util.h.
#include "ops/cpu/cast_small_floats.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/quant_util.h"
#include "ops/registry.h"

#include <bit>

namespace ember {
namespace {

struct Element {
  double value;
  int64_t integer;  // the exact value for integer sources, else value truncated
};

enum class RoundMode { Up, Down, Nearest };

struct CastOptions {
  bool saturate;
  RoundMode round_mode;
  bool integer_source;
};

using Reader = Element (*)(const void* data, int64_t i);
using Writer = void (*)(void* data, int64_t i, const Element& x, const CastOptions& options);

int64_t truncate(double v) {
  // Out-of-range floats are undefined in ONNX; NaN and overflow become 0 here
  // (as in ONNX's reference) instead of undefined C++ behaviour.
  return std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<int64_t>(v) : 0;
}

template <class T> Element read_standard(const void* data, int64_t i) {
  const T x = static_cast<const T*>(data)[i];
  if constexpr (std::is_integral_v<T>) return {static_cast<double>(x), static_cast<int64_t>(x)};
  else {
    const double v = convert<double>(x);
    return {v, truncate(v)};
  }
}

template <DType D> Element read_small(const void* data, int64_t i) {
  const double v = load_element(D, data, i);
  return {v, truncate(v)};
}

template <class T> void write_standard(void* data, int64_t i, const Element& x, const CastOptions& o) {
  T& out = static_cast<T*>(data)[i];
  if constexpr (std::is_integral_v<T>) out = o.integer_source ? convert<T>(x.integer) : convert<T>(x.value);
  else out = convert<T>(x.value);
}

template <DType D> void write_float8(void* data, int64_t i, const Element& x, const CastOptions& o) {
  static_cast<uint8_t*>(data)[i] = encode_minifloat(*minifloat_of(D), x.value, o.saturate);
}

void write_nibble(void* data, int64_t i, uint32_t nibble) {
  uint8_t& byte = static_cast<uint8_t*>(data)[i >> 1];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0f) | (nibble << 4)) : static_cast<uint8_t>(nibble);
}

void write_int4(void* data, int64_t i, const Element& x, const CastOptions&) {
  write_nibble(data, i, static_cast<uint32_t>(x.integer) & 0xf);
}

void write_int2(void* data, int64_t i, const Element& x, const CastOptions&) {
  store_crumb(data, i, static_cast<uint32_t>(x.integer) & 3u);
}

// E2M1 has neither Inf nor NaN: out-of-range values saturate whatever `saturate`
// says, and NaN (undefined in ONNX) becomes zero as in ONNX's reference.
void write_float4(void* data, int64_t i, const Element& x, const CastOptions&) {
  write_nibble(data, i, std::isnan(x.value) ? 0u : encode_minifloat(kE2M1, x.value, true));
}

// ONNX rounds the float32 value's exponent: `up` whenever there is a fraction,
// `nearest` on the guard bit (ties away from the smallest exponent), `down` never.
// Past the largest exponent it saturates to 2^127 or becomes NaN (0xff).
void write_e8m0(void* data, int64_t i, const Element& x, const CastOptions& o) {
  const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(x.value));
  const uint32_t exponent = (bits >> 23) & 0xff;
  bool up = false;
  if (o.round_mode == RoundMode::Up) {
    up = (bits & 0x7fffff) != 0;
  } else if (o.round_mode == RoundMode::Nearest) {
    const bool guard = bits & 0x400000, round = bits & 0x200000, sticky = bits & 0x1fffff;
    up = guard && (round || sticky || exponent > 0);
  }
  if (exponent == 0xff || (up && o.saturate && exponent == 0xfe)) up = false;
  static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(exponent + (up ? 1 : 0));
}

Reader reader_for(DType d) {
  switch (d) {
    case DType::Float8E4M3FN: return read_small<DType::Float8E4M3FN>;
    case DType::Float8E4M3FNUZ: return read_small<DType::Float8E4M3FNUZ>;
    case DType::Float8E5M2: return read_small<DType::Float8E5M2>;
    case DType::Float8E5M2FNUZ: return read_small<DType::Float8E5M2FNUZ>;
    case DType::Float8E8M0: return read_small<DType::Float8E8M0>;
    case DType::Float4E2M1: return read_small<DType::Float4E2M1>;
    case DType::Int4: return read_small<DType::Int4>;
    case DType::UInt4: return read_small<DType::UInt4>;
    case DType::Int2: return read_small<DType::Int2>;
    case DType::UInt2: return read_small<DType::UInt2>;
    default: break;
  }
  Reader reader = nullptr;
  dispatch(AllTypes{}, d, [&](auto tag) { reader = read_standard<typename decltype(tag)::type>; });
  return reader;
}

Writer writer_for(DType d) {
  switch (d) {
    case DType::Float8E4M3FN: return write_float8<DType::Float8E4M3FN>;
    case DType::Float8E4M3FNUZ: return write_float8<DType::Float8E4M3FNUZ>;
    case DType::Float8E5M2: return write_float8<DType::Float8E5M2>;
    case DType::Float8E5M2FNUZ: return write_float8<DType::Float8E5M2FNUZ>;
    case DType::Float8E8M0: return write_e8m0;
    case DType::Float4E2M1: return write_float4;
    case DType::Int4:
    case DType::UInt4: return write_int4;
    case DType::Int2:
    case DType::UInt2: return write_int2;
    default: break;
  }
  Writer writer = nullptr;
  dispatch(AllTypes{}, d, [&](auto tag) { writer = write_standard<typename decltype(tag)::type>; });
  return writer;
}

class SmallCastKernel final : public Kernel {
 public:
  SmallCastKernel(Reader reader, Writer writer, CastOptions options)
      : read_(reader), write_(writer), options_(options) {}

  // Threads take whole groups of four elements so that no two write the same packed byte.
  void run(const RunArgs& args) const override {
    const void* x = args.inputs[0]->data();
    void* y = args.outputs[0]->data();
    const int64_t n = args.outputs[0]->numel();
    parallel_for((n + 3) / 4, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = 4 * begin; i < std::min(4 * end, n); ++i) write_(y, i, read_(x, i), options_);
    });
  }

 private:
  Reader read_;
  Writer write_;
  CastOptions options_;
};

RoundMode parse_round_mode(KernelInit& init) {
  const std::string mode = init.node.attributes.get_string_or("round_mode", "up");
  if (mode == "up") return RoundMode::Up;
  if (mode == "down") return RoundMode::Down;
  if (mode == "nearest") return RoundMode::Nearest;
  init.fail("round_mode '" + mode + "' is not up, down or nearest");
}

}  // namespace

bool is_small_cast_type(DType d) {
  return minifloat_of(d) != nullptr || d == DType::Float8E8M0 || d == DType::Int4 || d == DType::UInt4 ||
         d == DType::Int2 || d == DType::UInt2;
}

// Called by Cast's and CastLike's factories (cast.cc) when either side is a small type.
std::unique_ptr<Kernel> make_small_cast(KernelInit& init, std::string* why_not, DType from, DType to) {
  const Reader reader = reader_for(from);
  const Writer writer = writer_for(to);
  if (!reader || !writer) {
    *why_not = std::string("Cast from ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported";
    return nullptr;
  }
  const bool integer_source = from == DType::Int4 || from == DType::UInt4 || from == DType::Int2 ||
                              from == DType::UInt2 || from == DType::Bool ||
                              dispatch(IntTypes{}, from, [](auto) {});
  const CastOptions options{init.node.attributes.get_int_or("saturate", 1) != 0, parse_round_mode(init),
                            integer_source};
  return std::make_unique<SmallCastKernel>(reader, writer, options);
}

}  // namespace ember
