// Graph rewrite passes. Each is a function that changes a Graph in place and returns
// how many rewrites it made, testable alone on a hand-built graph.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <functional>
#include <optional>
#include <vector>

namespace ember {

// Runs one node on constant inputs and returns its outputs (raising ember::Error when it
// cannot). The engine provides it (ops/evaluate on the CPU), so graph/ never reaches
// up into the kernels.
using NodeEvaluator = std::function<std::vector<Tensor>(
    const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs)>;

// LinearClassifier, SVMClassifier and TreeEnsembleClassifier with classlabels_strings
// become the same classifier over the labels' positions, followed by a Gather of the
// label strings. Run on every graph, whatever the optimization level: it is how ember
// runs them (lower_string_labels.cc).
int lower_string_class_labels(Graph& graph);

// Evaluates nodes whose inputs are all initializers; their outputs become initializers.
int fold_constants(Graph& graph, const NodeEvaluator& evaluate);
// Removes nodes no graph output depends on, and initializers nobody reads.
int eliminate_dead_code(Graph& graph);
// Conv followed by BatchNormalization (inference, constant statistics) becomes one
// Conv with rescaled weights and bias.
int fold_conv_batchnorm(Graph& graph);
// A Conv whose p x p windows tile an input of few channels at stride p (a patch
// embedding) becomes Reshape/Transpose/Reshape to rows of patches, a MatMul with the
// filter (and the bias Add), and a Transpose back to NCHW, where X's spatial dims are
// declared and divisible by p and the filter is a constant (lower_patch_convs.cc).
int lower_patch_convs(Graph& graph);
// x * 0.5 * (1 + Erf(x / sqrt(2))) as exporters write it becomes com.ember Gelu on x;
// x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3))) becomes one with approximate="tanh".
int fuse_gelu(Graph& graph);
// An elementwise activation reading a Reshape / Flatten / Squeeze / Unsqueeze (its only
// reader) moves above it, so that a GEMM -> reshape -> activation fuses as one GEMM.
int sink_reshapes(Graph& graph);
// Layout shuffles around attention (torch's packed-QKV export: Unsqueeze/Transpose/
// Squeeze/Gather unpacking, Reshape/Transpose/Reshape head splits) become fewer
// transposes: Gathers and Reshapes move before the transposes when shapes, symbolic
// ones included, prove it exact, and transposes then compose or vanish, so that the
// head permutations reach the strided readers (attention perms, FusedMatMul perms).
// `through_scalar_mul`: a transpose also moves past a Mul by one element (for the
// CPU, whose matmuls then read it through strides; fused attention wants it before).
int simplify_transposes(Graph& graph, bool through_scalar_mul = false);
// Conv / MatMul / Gemm followed by a bias Add, a residual Add and an activation become
// com.ember FusedConv / FusedMatMul / FusedGemm, each carrying its unfused
// decomposition so the planner can fall back to it where the fused kernel cannot run.
// `for_cpu`: a BatchNormalization left after fold_conv_batchnorm (DenseNet's, before
// each conv) and its activation become com.ember FusedBatchNormalization too, the
// activation applied in the CPU kernel's one pass over memory.
int fuse_bias_activation(Graph& graph, bool for_cpu = false);
// Transposes feeding a MatMul, or reading its output alone, become strides of a
// com.ember FusedMatMul (perm_a, perm_b, perm_y), with its decomposition.
int fold_matmul_transposes(Graph& graph);
// MatMul(Q, Kt) -> scale -> mask -> Softmax -> MatMul(., V) becomes com.ember ScaledDotProductAttention (with its decomposition).
int fuse_attention(Graph& graph);
// RMS normalization spelled out (Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul, transformers'
// float32 Casts around it, then the weight) becomes com.ember RMSNormalization (with its
// decomposition): one pass, and row statistics in float32 in every precision.
int fuse_rms_norm(Graph& graph);
// Rotary position embedding as transformers writes it, x * cos + rotate_half(x) * sin
// with rotate_half as Slice/Slice/Neg/Concat, becomes com.ember RotateHalfEmbedding (with
// its decomposition): one pass instead of seven nodes.
int fuse_rotate_half(Graph& graph);
// Softmax(scores [* or / a constant] + mask) over the last axis, and transformers'
// Where(IsNaN(p), 0, p) after it, becomes com.ember MaskedSoftmax (with its
// decomposition): one pass over the attention scores instead of up to four.
int fuse_masked_softmax(Graph& graph);
// ShuffleNet's channel shuffle, Reshape [N, g, C/g, H, W] -> Transpose [0, 2, 1, 3, 4]
// -> Reshape [N, C, H, W] on an x declared [N, C, H, W], becomes com.ember
// ChannelShuffle (with its decomposition), which the CPU's layouts carry channels-last.
int fuse_channel_shuffle(Graph& graph);
// Add -> LayerNormalization (the Add's only reader, its statistics unread) becomes
// com.ember AddLayerNormalization (with its decomposition).
int fuse_add_layer_norm(Graph& graph);

// A region of elementwise nodes on one tensor and float constants (a chain, or a
// diamond like x * Sigmoid(x)) becomes com.ember FusedElementwise, with its decomposition.
int fuse_elementwise(Graph& graph);

// Layout planning for the CPU: 2-D convolutions with constant float weights become
// com.ember NhwcConv, and the pooling, elementwise and Concat nodes fed by them their
// channels-last forms; Transpose nodes convert where a plain reader needs NCHW, and
// cancel against the model's own. Each Nhwc node's decomposition is its original
// between transposes. Returns how many nodes went channels-last.
int plan_channels_last(Graph& graph);
// Which blocked layouts the CPU's convolution kernels run fastest in, measured per
// instruction set (the engine picks the set for the CPU it runs on). The defaults are
// AVX-512's: oneDNN 2.6's nChw8c kernels beat its NHWC ones on narrow 1x1 and depthwise
// layers and lost on wide ones, and its nChw16c ones won on dense networks.
struct BlockedLayouts {
  int64_t narrow_block = 8;       // networks of 1x1 and depthwise convolutions; 0: channels-last
  int64_t narrow_channels = 256;  // ... whose convolutions this wide at most run blocked
  int64_t dense_block = 16;       // networks with dense convolutions; 0: channels-last
  // Whether a narrow 1x1 conv and the depthwise 3x3 conv it feeds run as one kernel
  // (fuse_pointwise_depthwise): oneDNN 2.6 has that kernel in blocks of 8 at the AVX2
  // level only; its AVX-512 1x1 kernels refuse the depthwise post-op in blocks of 8.
  bool fuses_pointwise_depthwise = false;
};
// The same for the CPU's float32 sessions, blocked where it pays: convolutions become
// com.ember BlockedConv (in `layouts.narrow_block` in networks of 1x1 and depthwise
// convolutions, while narrow; in `layouts.dense_block` in dense networks whose channels
// all fit it) and the nodes they feed Blocked* forms, with ToBlocked / FromBlocked where
// a value changes layout; other graphs (and a model with NHWC transposes of its own) are
// planned channels-last as above. Returns how many nodes changed layout.
int plan_cpu_layouts(Graph& graph, const BlockedLayouts& layouts = {});
// After plan_cpu_layouts: a 1x1 BlockedConv whose output only a depthwise 3x3
// BlockedConv reads (MobileNet's expansion and its filter) becomes com.ember
// BlockedPointwiseDepthwiseConv, with the two as its decomposition. Returns how many.
int fuse_pointwise_depthwise(Graph& graph);

// All of the above in order; `evaluate` folds constants. `for_cpu`: the graph runs on
// the CPU with float32 values, so the passes only its kernels follow run too
// (plan_channels_last after the conv fusions, before the elementwise regions form;
// fold_matmul_transposes), and fuse_attention does not (the CPU has no fused
// attention kernel).
// `channels_last`: plan_channels_last for a graph that is not for the CPU too (CUDA
// float16 sessions: cuDNN's tensor-core convolutions read NHWC); for_cpu implies it.
// `blocked`: with for_cpu, plan_cpu_layouts with these layouts instead, then
// fuse_pointwise_depthwise (float32 CPU sessions; bf16 ones keep bfloat16 between
// channels-last convolutions).
void optimize_graph(Graph& graph, const NodeEvaluator& evaluate, bool for_cpu = false, bool channels_last = false,
                    const std::optional<BlockedLayouts>& blocked = std::nullopt);

// A question the engine answers about a node from its kernels (graph/ never reaches
// into ops/).
using NodePredicate = std::function<bool(const Node&)>;

// bf16 CPU sessions, after optimize_graph: an NhwcConv whose output only NhwcConvs read,
// each as X (not as residual or weight, not a graph output, not read by a subgraph),
// and whose fused activation `activation_in_primitive` says oneDNN applies, gets
// "output_bf16" = 1: its output value becomes bfloat16. Its decomposition, and its
// readers', cast so the fallback still runs in float32. Returns how many were marked.
int keep_bf16_between_convs(Graph& graph, const NodePredicate& activation_in_primitive);

// The attribute holding a fused node's original nodes.
inline constexpr const char* kDecompositionAttribute = "decomposition";

}  // namespace ember
