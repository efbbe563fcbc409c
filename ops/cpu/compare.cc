// Comparisons (bool output, numpy broadcasting) and the logical ops on bool.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

namespace ember {
namespace {

// Reduced floats compare as float, so +0 == -0 and NaN compares false, as in IEEE.
struct EqualOp {
  template <class T> bool operator()(T a, T b) const { return a == b; }
};
struct LessOp {
  template <class T> bool operator()(T a, T b) const { return a < b; }
};
struct GreaterOp {
  template <class T> bool operator()(T a, T b) const { return a > b; }
};
struct LessOrEqualOp {
  template <class T> bool operator()(T a, T b) const { return a <= b; }
};
struct GreaterOrEqualOp {
  template <class T> bool operator()(T a, T b) const { return a >= b; }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct NotOp {
  bool operator()(bool a) const { return !a; }
};

using BoolType = TypeList<bool>;

std::unique_ptr<Kernel> make_equal(KernelInit& init, std::string* why_not) {
  return make_binary<true>(init, why_not, AllTypes{}, EqualOp{});
}
std::unique_ptr<Kernel> make_less(KernelInit& init, std::string* why_not) {
  return make_binary<true>(init, why_not, NumericTypes{}, LessOp{});
}
std::unique_ptr<Kernel> make_greater(KernelInit& init, std::string* why_not) {
  return make_binary<true>(init, why_not, NumericTypes{}, GreaterOp{});
}
std::unique_ptr<Kernel> make_less_or_equal(KernelInit& init, std::string* why_not) {
  return make_binary<true>(init, why_not, NumericTypes{}, LessOrEqualOp{});
}
std::unique_ptr<Kernel> make_greater_or_equal(KernelInit& init, std::string* why_not) {
  return make_binary<true>(init, why_not, NumericTypes{}, GreaterOrEqualOp{});
}
std::unique_ptr<Kernel> make_and(KernelInit& init, std::string* why_not) {
  return make_binary(init, why_not, BoolType{}, AndOp{});
}
std::unique_ptr<Kernel> make_or(KernelInit& init, std::string* why_not) {
  return make_binary(init, why_not, BoolType{}, OrOp{});
}
std::unique_ptr<Kernel> make_xor(KernelInit& init, std::string* why_not) {
  return make_binary(init, why_not, BoolType{}, XorOp{});
}
std::unique_ptr<Kernel> make_not(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, BoolType{}, NotOp{});
}

}  // namespace

// Opsets before 7 broadcast only with the legacy `broadcast`/`axis` attributes; later
// versions only add dtypes (Equal 19: string, in strings.cc).
EMBER_KERNEL("Equal", "", 7, kMaxOpset, DeviceKind::Cpu, make_equal);
EMBER_KERNEL("Less", "", 7, kMaxOpset, DeviceKind::Cpu, make_less);
EMBER_KERNEL("Greater", "", 7, kMaxOpset, DeviceKind::Cpu, make_greater);
EMBER_KERNEL("LessOrEqual", "", 12, kMaxOpset, DeviceKind::Cpu, make_less_or_equal);
EMBER_KERNEL("GreaterOrEqual", "", 12, kMaxOpset, DeviceKind::Cpu, make_greater_or_equal);
EMBER_KERNEL("And", "", 7, kMaxOpset, DeviceKind::Cpu, make_and);
EMBER_KERNEL("Or", "", 7, kMaxOpset, DeviceKind::Cpu, make_or);
EMBER_KERNEL("Xor", "", 7, kMaxOpset, DeviceKind::Cpu, make_xor);
EMBER_KERNEL("Not", "", 1, kMaxOpset, DeviceKind::Cpu, make_not);

}  // namespace ember
