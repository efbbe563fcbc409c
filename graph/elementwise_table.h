// Host-side lookups in the elementwise table (graph/elementwise_functions.h): which
// function a node runs and its parameters, read the same way by every device's kernels
// and by the fusion passes.
#pragma once

#include "graph/elementwise_functions.h"
#include "graph/graph.h"

#include <string>
#include <vector>

namespace ember {

// The table function named `name` ("Sigmoid", "GeluTanh", ...); false when none is.
bool find_unary_function(const std::string& name, ew::UnaryFunction* f);

// The function a node computes: its op type in its domain, Gelu's `approximate` picking
// Gelu or GeluTanh (com.ember Gelu, fuse_gelu's node, too). False with *why_not when the
// node is not a table op or an attribute value is not valid.
bool unary_function_of(const Node& node, ew::UnaryFunction* f, std::string* why_not);

// The function's parameters from the node's attributes, with the table's defaults.
ew::Params unary_params(const Node& node, ew::UnaryFunction f);

// How many parameters (0, 1 or 2) the function reads.
int unary_param_count(ew::UnaryFunction f);

// The activation a com.ember FusedConv / FusedMatMul / FusedGemm applies ("activation"
// and "activation_params", as fuse_bias_activation writes them; none on standard ops):
// Clip or any table function. False with *why_not for another name or a wrong
// parameter count, so the planner runs the node's decomposition instead.
bool fused_activation_of(const Node& node, ew::Activation* act, std::string* why_not);

// The "activation" / "activation_params" that fuse a standalone table node into the
// GEMM or conv before it: its function's name and parameters. Empty when the node is
// not a table op (Clip, whose bounds may be inputs, the fusion pass reads itself).
std::string activation_name_of(const Node& node, std::vector<float>* params);

}  // namespace ember
