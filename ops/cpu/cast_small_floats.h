// Cast between the usual types and the 8-bit float, 4-bit and float4 types.
#pragma once

#include "ops/kernel.h"

namespace ember {

bool is_small_cast_type(DType d);
std::unique_ptr<Kernel> make_small_cast(KernelInit& init, std::string* why_not, DType from, DType to);

}  // namespace ember
