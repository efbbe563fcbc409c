// CPU kernels on string tensors: StringConcat, StringSplit, StringNormalizer,
// RegexFullMatch (RE2, the syntax the spec names), Equal on strings, and Cast between
// strings and numbers. Data movement on strings needs no kernel here
// (ops/string_movement.h). The shape rules they share are in graph/schemas/strings.h.
#include "graph/schemas/strings.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <re2/re2.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace ember {

namespace {

const std::string* strings_of(const Tensor& t) { return t.data_as<std::string>(); }
std::string* strings_of(Tensor& t) { return t.data_as<std::string>(); }

// Flat offset into a tensor of shape `in`, broadcast to `out`, of each element of `out`.
std::vector<int64_t> broadcast_offsets(const Shape& out, const Shape& in) {
  const size_t rank = out.size(), lead = rank - in.size();
  std::vector<int64_t> stride(rank, 0);
  for (int64_t d = static_cast<int64_t>(in.size()) - 1, s = 1; d >= 0; s *= in[d], --d)
    stride[lead + d] = in[d] == 1 ? 0 : s;
  std::vector<int64_t> offsets(static_cast<size_t>(shape_numel(out))), index(rank, 0);
  int64_t at = 0;
  for (int64_t& o : offsets) {
    o = at;
    for (size_t d = rank; d-- > 0;) {  // next index in C order
      at += stride[d];
      if (++index[d] < out[d]) break;
      at -= stride[d] * out[d];
      index[d] = 0;
    }
  }
  return offsets;
}

// f(a[i], b[i]) with numpy broadcasting; the offsets are fixed at plan time.
template <class Out, class F>
class StringBinaryKernel final : public Kernel {
 public:
  StringBinaryKernel(const KernelInit& init, F f)
      : a_(broadcast_offsets(init.outputs[0].shape, init.inputs[0].shape)),
        b_(broadcast_offsets(init.outputs[0].shape, init.inputs[1].shape)), f_(f) {}
  void run(const RunArgs& args) const override {
    const std::string* a = strings_of(*args.inputs[0]);
    const std::string* b = strings_of(*args.inputs[1]);
    Out* y = args.outputs[0]->data_as<Out>();
    for (size_t i = 0; i < a_.size(); ++i) y[i] = f_(a[a_[i]], b[b_[i]]);
  }

 private:
  std::vector<int64_t> a_, b_;
  F f_;
};

template <class Out, class F>
std::unique_ptr<Kernel> make_string_binary(KernelInit& init, std::string* why_not, F f) {
  if (init.inputs[0].dtype != DType::String || init.inputs[1].dtype != DType::String) {
    *why_not = init.node.op_type + " on strings takes two string tensors";
    return nullptr;
  }
  return std::make_unique<StringBinaryKernel<Out, F>>(init, f);
}

std::unique_ptr<Kernel> make_string_concat(KernelInit& init, std::string* why_not) {
  return make_string_binary<std::string>(init, why_not, [](const std::string& a, const std::string& b) { return a + b; });
}

std::unique_ptr<Kernel> make_string_equal(KernelInit& init, std::string* why_not) {
  return make_string_binary<bool>(init, why_not, [](const std::string& a, const std::string& b) { return a == b; });
}

class StringSplitKernel final : public Kernel {
 public:
  explicit StringSplitKernel(const Node& node)
      : delimiter_(node.attributes.get_string_or("delimiter", "")), maxsplit_(node.attributes.get_int_or("maxsplit", -1)) {}
  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    const int64_t width = y.shape().back();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::vector<std::string> parts = split_string(strings_of(x)[i], delimiter_, maxsplit_);
      std::copy(parts.begin(), parts.end(), strings_of(y) + i * width);  // the rest stay ""
      if (args.outputs.size() > 1 && args.outputs[1]) args.outputs[1]->data_as<int64_t>()[i] = static_cast<int64_t>(parts.size());
    }
  }

 private:
  std::string delimiter_;
  int64_t maxsplit_;
};

std::unique_ptr<Kernel> make_string_split(KernelInit& init, std::string*) {
  return std::make_unique<StringSplitKernel>(init.node);
}

class StringNormalizerKernel final : public Kernel {
 public:
  explicit StringNormalizerKernel(const KernelInit& init)
      : a_(init.attributes<StringNormalizerAttributes>()), label_(init.node.label()) {}
  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    const std::vector<std::string> kept = normalize_strings(*a_, strings_of(x), x.numel(), label_);
    std::copy(kept.begin(), kept.end(), strings_of(*args.outputs[0]));
  }

 private:
  std::shared_ptr<const StringNormalizerAttributes> a_;
  std::string label_;
};

std::unique_ptr<Kernel> make_string_normalizer(KernelInit& init, std::string*) {
  return std::make_unique<StringNormalizerKernel>(init);
}

class RegexFullMatchKernel final : public Kernel {
 public:
  explicit RegexFullMatchKernel(const std::string& pattern) : regex_(pattern, RE2::Quiet) {}
  const RE2& regex() const { return regex_; }
  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    bool* y = args.outputs[0]->data_as<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) y[i] = RE2::FullMatch(strings_of(x)[i], regex_);
  }

 private:
  RE2 regex_;
};

std::unique_ptr<Kernel> make_regex_full_match(KernelInit& init, std::string*) {
  const std::string pattern = init.node.attributes.get_string("pattern");
  auto kernel = std::make_unique<RegexFullMatchKernel>(pattern);
  if (!kernel->regex().ok())
    init.fail("pattern '" + pattern + "' is not a valid RE2 regular expression: " + kernel->regex().error());
  return kernel;
}

// ---- Cast between strings and numbers ------------------------------------------------

// Numbers as text: integers in decimal, floats with the digits that read back to the
// same value (%.9g, %.17g), NaN and infinities as "NaN", "INF", "-INF" (what the
// spec's string-to-float rule reads), bools as "1" and "0".
template <class T>
std::string number_to_string(T x) {
  if constexpr (std::is_same_v<T, std::string>) {
    return x;
  } else if constexpr (std::is_same_v<T, bool>) {
    return x ? "1" : "0";
  } else if constexpr (std::is_floating_point_v<T> || is_reduced_float_v<T>) {
    const double v = static_cast<double>(static_cast<compute_t<T>>(x));
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, std::is_same_v<T, double> ? "%.17g" : "%.9g", v);
    return buffer;
  } else {
    return std::to_string(x);
  }
}

// Text as a number, as strtod/strtoll read it (so "1e3", "  7", "inf", "NaN"); the
// whole string must be read. Raises naming the node and the element otherwise.
template <class T>
T string_to_number(const std::string& s, const std::string& what) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  T value{};
  if constexpr (std::is_floating_point_v<T> || is_reduced_float_v<T>) {
    value = convert<T>(std::strtod(begin, &end));
  } else if constexpr (std::is_same_v<T, bool>) {
    value = std::strtod(begin, &end) != 0;
  } else if constexpr (std::is_signed_v<T>) {
    const long long v = std::strtoll(begin, &end, 10);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) errno = ERANGE;
    value = static_cast<T>(v);
  } else {
    const unsigned long long v = std::strtoull(begin, &end, 10);
    if (v > std::numeric_limits<T>::max() || s.find('-') != std::string::npos) errno = ERANGE;
    value = static_cast<T>(v);
  }
  if (end == begin || *end != '\0' || (errno == ERANGE && !std::is_floating_point_v<T>))
    throw Error(what + ": '" + s + "' is not a " + dtype_name(dtype_of<T>()));
  return value;
}

template <class T>
class CastToStringKernel final : public Kernel {
 public:
  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    std::string* y = strings_of(*args.outputs[0]);
    for (int64_t i = 0; i < args.inputs[0]->numel(); ++i) y[i] = number_to_string(x[i]);
  }
};

template <class T>
class CastFromStringKernel final : public Kernel {
 public:
  explicit CastFromStringKernel(std::string label) : label_(std::move(label)) {}
  void run(const RunArgs& args) const override {
    const std::string* x = strings_of(*args.inputs[0]);
    T* y = args.outputs[0]->data_as<T>();
    for (int64_t i = 0; i < args.inputs[0]->numel(); ++i)
      y[i] = string_to_number<T>(x[i], label_ + ": element " + std::to_string(i));
  }

 private:
  std::string label_;
};

std::unique_ptr<Kernel> make_string_cast_to(KernelInit& init, std::string* why_not, DType to) {
  const DType from = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  if (from == DType::String && to == DType::String) return std::make_unique<CastToStringKernel<std::string>>();
  if (from == DType::String)
    dispatch(AllTypes{}, to, [&](auto tag) {
      kernel = std::make_unique<CastFromStringKernel<typename decltype(tag)::type>>(init.node.label());
    });
  else if (to == DType::String)
    dispatch(AllTypes{}, from, [&](auto tag) { kernel = std::make_unique<CastToStringKernel<typename decltype(tag)::type>>(); });
  if (!kernel)
    *why_not = std::string("Cast from ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported on strings";
  return kernel;
}

std::unique_ptr<Kernel> make_string_cast(KernelInit& init, std::string* why_not) {
  return make_string_cast_to(init, why_not, init.outputs[0].dtype);
}

std::unique_ptr<Kernel> make_string_cast_like(KernelInit& init, std::string* why_not) {
  return make_string_cast_to(init, why_not, init.inputs[1].dtype);
}

}  // namespace

EMBER_KERNEL("StringConcat", "", 20, kMaxOpset, DeviceKind::Cpu, make_string_concat);
EMBER_KERNEL("StringSplit", "", 20, kMaxOpset, DeviceKind::Cpu, make_string_split);
EMBER_KERNEL("StringNormalizer", "", 10, kMaxOpset, DeviceKind::Cpu, make_string_normalizer);
EMBER_KERNEL("RegexFullMatch", "", 20, kMaxOpset, DeviceKind::Cpu, make_regex_full_match);
EMBER_KERNEL("Equal", "", 19, kMaxOpset, DeviceKind::Cpu, make_string_equal);
EMBER_KERNEL("Cast", "", 6, kMaxOpset, DeviceKind::Cpu, make_string_cast);
EMBER_KERNEL("CastLike", "", 15, kMaxOpset, DeviceKind::Cpu, make_string_cast_like);

}  // namespace ember
