#include "ops/cpu/blocked_layouts.h"

#include <oneapi/dnnl/dnnl.h>

#include <limits>

namespace ember {

std::optional<BlockedLayouts> blocked_layouts_for_this_cpu() {
  // What oneDNN will use, after its own detection and any ONEDNN_MAX_CPU_ISA cap. Each
  // level's bits include the levels below it.
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto has = [isa](dnnl_cpu_isa_t level) { return (isa & level) == static_cast<unsigned>(level); };
  if (has(dnnl_cpu_isa_avx512_core)) return BlockedLayouts{};
  if (!has(dnnl_cpu_isa_avx2)) return std::nullopt;
  return BlockedLayouts{.narrow_block = 8,
                        .narrow_channels = std::numeric_limits<int64_t>::max(),
                        .dense_block = 8,
                        .fuses_pointwise_depthwise = true};
}

}  // namespace ember
