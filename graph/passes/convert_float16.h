// --precision fp16 (and bf16 on CUDA): rewrites a graph's float32 computation to float16
// (or bfloat16: the same rewrite with the other 16-bit type; "float16" below stands for
// the target type).
//
// Not part of optimize_graph: the session runs it after the other passes when the user
// asks for fp16 (the fusion passes match float32 constants, so they must run first).
//
// What it does:
//  - Every node with a float32 input or output is converted (its float32 values become
//    float16) unless `keep_float32(node)` says otherwise, or the node must stay float32
//    (below). Int64 / bool / other values are untouched.
//  - float32 initializers read by converted nodes become float16; where a kept node (or
//    a graph output) reads the same initializer, a float32 copy stays beside it.
//  - The graph's interface stays float32: a float32 graph input gets a Cast to float16
//    where converted nodes read it, a float32 graph output produced in float16 a Cast
//    back (its name unchanged), so callers feed and read the same .npy files.
//  - Kept nodes get Casts at their float edges: float16 -> float32 on the way in, and
//    float32 -> float16 where a converted node reads their output. One Cast per
//    (value, precision), shared by all readers.
//  - Inside the converted part: Cast to=FLOAT becomes to=FLOAT16; the float tensors
//    that decide an output's dtype (ConstantOfShape `value`, Constant's value,
//    value_float(s)) and the `dtype` attributes of the random / EyeLike / window ops
//    become float16.
//  - Inputs the ONNX spec types apart from the main input keep float32: Resize roi and
//    scales, Upsample scales, Dropout ratio, GridSample grid, OneHot indices and depth.
//    LayerNormalization's Mean / InvStdDev outputs stay float32 (stash_type). Shape and
//    Size read either precision.
//  - Nodes that stay float32 whatever `keep_float32` says: nodes with subgraphs (If,
//    Loop, Scan: the bodies are left float32 entirely; the outer values they read get
//    float32 Casts and the bodies are renamed to read those), ops whose schema says
//    they are not float16-safe (OpTraits: Range, whose integer positions past 2048 are
//    not exact in half; NonMaxSuppression, float32 only by the spec; the quantization
//    ops, whose scales are float32 by the spec), ops ember has no schema for, and ops
//    of domains other than the standard one and com.ember.
//  - ember's fused ops (com.ember FusedConv / FusedMatMul / FusedGemm / Gelu) convert
//    like their standard counterparts, and so do the nodes of their `decomposition`
//    (same precision as the fused node, reading the same converted values), so the
//    planner can still fall back to them.
//
// Range: float32 values beyond the float16 range (|v| > 65504, finite) saturate to
// +-65504 rather than becoming Inf: exported masks use -FLT_MAX (GPT-2's causal mask)
// or (1 - mask) * -FLT_MAX, where -Inf would turn 0 * -Inf into NaN, and a saturated
// -65504 still zeroes a softmax term. Their count is reported; Inf and NaN stay.
// Magnitudes under 2^-14 become float16 subnormals, under 2^-25 (signed) zero.
// bfloat16 has float32's exponent range, so only the very top of it overflows: finite
// values past the largest bfloat16 (3.3895e38, 0x7f7f) would round to Inf, -FLT_MAX
// among them, so they saturate the same way (and are counted); nothing underflows
// that float32 holds. What bfloat16 loses is precision (8 mantissa bits against
// float16's 11): integers are exact only up to 256, so the ops the schemas keep in
// float32 for float16 (Range, ...) stay so here too.
#pragma once

#include "graph/graph.h"

#include <cstdint>
#include <functional>

namespace ember {

// What a conversion did (to float16 or bfloat16).
struct Float16Summary {
  int converted_nodes = 0;         // nodes now computing in float16 (or bfloat16)
  int kept_nodes = 0;              // nodes with float32 values left in float32
  int casts_inserted = 0;          // Cast nodes added at the precision boundaries
  int64_t converted_weights = 0;   // initializer elements converted to float16 (bfloat16)
  int64_t overflowed_weights = 0;  // of those (and of constant attributes), beyond the range: saturated
};

// Converts `graph` in place. `keep_float32` (may be empty) names nodes to leave in
// float32. The graph must be topologically sorted; it stays so.
Float16Summary convert_to_float16(Graph& graph, const std::function<bool(const Node&)>& keep_float32 = {});
// The same with `target` DType::Float16 or DType::BFloat16.
Float16Summary convert_to_reduced_float(Graph& graph, DType target,
                                        const std::function<bool(const Node&)>& keep_float32 = {});

}  // namespace ember
