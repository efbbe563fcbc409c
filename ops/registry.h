// The kernel registry: (domain, op type, opset range, device kind) -> factory.
// Kernels register themselves next to their definition, with no central list:
//
//   EMBER_KERNEL("Relu", "", 6, kMaxOpset, DeviceKind::Cpu, make_relu);
//   EMBER_KERNEL_FLAGS(..., KernelFlags{.output_aliases_input0 = true});
#pragma once

#include "ops/kernel.h"

#include <string>
#include <vector>

namespace ember {

inline constexpr int64_t kMaxOpset = 1 << 30;

struct KernelFlags {
  // The output is input 0 reinterpreted (Reshape, Squeeze, Identity, ...): the planner
  // gives both the same bytes and skips running the kernel.
  bool output_aliases_input0 = false;
  // The same, only where output 0 has input 0's type (a Cast to the type it has, which
  // transformers' exports write around every norm): else the kernel runs.
  bool aliases_input0_of_its_type = false;
  // The kernel sizes and allocates its own outputs (If, Loop, Scan: only running the
  // body tells); such nodes always run eagerly, and their schema raises
  // DataDependentShape so the planner sends them there.
  bool sizes_own_outputs = false;
  // Output 0 may be written over input `overwrites_input` (a fused residual sum) when
  // this node is that value's last reader: the planner then gives both the same bytes
  // and the kernel skips copying the residual into the output. -1: never.
  int overwrites_input = -1;
  // Elementwise: output 0 may be written over any input of its shape and type that this
  // node reads last (the first such), as above; the kernel reads each element before it
  // writes the same element.
  bool overwrites_any_input = false;
};

// Cast and CastLike on every device: no step where the type does not change.
inline constexpr KernelFlags kToItsOwnType{.aliases_input0_of_its_type = true};

struct KernelEntry {
  std::string op_type;
  std::string domain;
  int64_t since_opset = 1;
  int64_t until_opset = kMaxOpset;  // inclusive
  DeviceKind device = DeviceKind::Cpu;
  KernelFactory factory = nullptr;
  KernelFlags flags;
};

bool register_kernel(KernelEntry entry);
// The kernels registered for this op on this device whose opset range holds `opset`.
std::vector<const KernelEntry*> find_kernels(const std::string& domain, const std::string& op_type,
                                             int64_t opset, DeviceKind device);
// Every (domain, op type) registered on a device, sorted: for docs and --list-ops.
std::vector<std::string> registered_ops(DeviceKind device);

#define EMBER_KERNEL_CONCAT2(a, b) a##b
#define EMBER_KERNEL_CONCAT(a, b) EMBER_KERNEL_CONCAT2(a, b)
#define EMBER_KERNEL_FLAGS(op_type, domain, since, until, device, factory, flags)     \
  [[maybe_unused]] static const bool EMBER_KERNEL_CONCAT(ember_kernel_, __COUNTER__) = \
      ::ember::register_kernel(                                                      \
          ::ember::KernelEntry{op_type, domain, since, until, device, factory, flags})
#define EMBER_KERNEL(op_type, domain, since, until, device, factory) \
  EMBER_KERNEL_FLAGS(op_type, domain, since, until, device, factory, ::ember::KernelFlags{})

}  // namespace ember
