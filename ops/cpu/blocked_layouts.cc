#include "ops/cpu/blocked_layouts.h"

#include <oneapi/dnnl/dnnl.h>

#include <limits>

namespace ember {

std::optional<BlockedLayouts> blocked_layouts_for_this_cpu() {
  // What oneDNN will use, after its own detection and any ONEDNN_MAX_CPU_ISA cap. Each
  // level's bits include the levels below it.
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto has = [isa](dnnl_cpu_isa_t level) { return (isa & level) == static_cast<unsigned>(level); };
  // With AMX (Intel's Sapphire Rapids and later) oneDNN's AVX-512 channels-last kernels
  // ran MobileNet-style networks faster than its AVX2 nChw8c ones, which a Zen 5 ran
  // 15-30% faster at batch 8: a 2-core Xeon, `infer --threads 2` p50 ms, nChw8c ->
  // NHWC, batch 1 MobileNetV2 3.2 -> 2.69, MobileNetV3 2.8 -> 2.59, EfficientNet-B0
  // 5.39 -> 5.28; batch 8 23.6 -> 22.6, 19.8 -> 20.5, 41.1 -> 40.3.
  if (has(dnnl_cpu_isa_avx512_core_amx)) return BlockedLayouts{.narrow_block = 0};
  if (has(dnnl_cpu_isa_avx512_core)) return BlockedLayouts{};
  if (!has(dnnl_cpu_isa_avx2)) return std::nullopt;
  return BlockedLayouts{.narrow_block = 8,
                        .narrow_channels = std::numeric_limits<int64_t>::max(),
                        .dense_block = 8,
                        .fuses_pointwise_depthwise = true};
}

}  // namespace ember
