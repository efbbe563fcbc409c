// Rotary position embedding as transformers' models write it becomes one com.ember
// RotateHalfEmbedding (graph/schemas/rotate_half_embedding.cc defines the op):
//
//   x1 = Slice(x, [0], first_end, [axis] [, [1]])
//   x2 = Slice(x, second_start, [end], [axis] [, [1]])
//   r  = Concat(Neg(x2), x1, axis=concat_axis)          rotate_half(x)
//   y  = Add(Mul(x, cos), Mul(r, sin))                   either operand order
//
// The split points are usually computed from x's shape (x.shape[-1] // 2), so they are
// the fused node's inputs, and whether they split x's last axis at one point is decided
// at plan time, by each kernel (a kernel that declines leaves the seven nodes to run).
// x1, x2, their negation, r and both products must have no reader outside the pattern.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

class RotateHalfMatcher {
 public:
  explicit RotateHalfMatcher(const Graph& graph) : graph_(graph), links_(graph) {}

  // From a Concat: the fused node and the indices of the nodes it replaces.
  bool match(int concat_i, Node* fused, std::vector<int>* matched) const {
    const Node& concat = graph_.nodes[concat_i];
    if (!is(concat, "Concat") || concat.inputs.size() != 2) return false;
    const int neg_i = links_.sole_producer(concat.inputs[0], concat_i, "Neg");
    const int first_i = links_.sole_producer(concat.inputs[1], concat_i, "Slice");
    if (neg_i < 0 || first_i < 0) return false;
    const int second_i = links_.sole_producer(graph_.nodes[neg_i].inputs[0], neg_i, "Slice");
    if (second_i < 0) return false;
    const Node &first = graph_.nodes[first_i], &second = graph_.nodes[second_i];
    const std::string& x = first.inputs[0];
    int64_t axis = 0, second_axis = 0, second_end = 0;
    if (second.inputs[0] != x || !slice_form(first, &axis) || !slice_form(second, &second_axis) ||
        axis != second_axis || !is_ints(first.inputs[1], {0}) || !one_constant(second.inputs[2], &second_end))
      return false;

    const int scaled_i = links_.sole_reader(concat.outputs[0], "Mul");
    if (scaled_i < 0) return false;
    const std::string sin = other_operand(graph_.nodes[scaled_i], concat.outputs[0]);
    const int add_i = links_.sole_reader(graph_.nodes[scaled_i].outputs[0], "Add");
    if (sin.empty() || add_i < 0) return false;
    const std::string direct = other_operand(graph_.nodes[add_i], graph_.nodes[scaled_i].outputs[0]);
    const int direct_i = links_.sole_producer(direct, add_i, "Mul");
    if (direct_i < 0) return false;
    const std::string cos = other_operand(graph_.nodes[direct_i], x);
    if (cos.empty()) return false;

    *matched = {first_i, second_i, neg_i, concat_i, scaled_i, direct_i, add_i};
    std::sort(matched->begin(), matched->end());
    const Node& add = graph_.nodes[add_i];
    fused->name = add.name.empty() ? add.outputs[0] + "/rotate_half" : add.name + "/rotate_half";
    fused->op_type = "RotateHalfEmbedding";
    fused->domain = "com.ember";
    fused->inputs = {x, cos, sin, first.inputs[2], second.inputs[1]};
    fused->outputs = {add.outputs[0]};
    fused->attributes.set_int("slice_axis", axis);
    fused->attributes.set_int("concat_axis", concat.attributes.get_int_or("axis", 0));
    fused->attributes.set_int("second_end", second_end);
    return true;
  }

 private:
  // The binary node's operand that is not `value` (empty if neither or both are).
  static std::string other_operand(const Node& n, const std::string& value) {
    if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return {};
    if (n.inputs[0] == value) return n.inputs[1];
    if (n.inputs[1] == value) return n.inputs[0];
    return {};
  }
  // A Slice of opset 10's form on one constant axis, step 1: that axis.
  bool slice_form(const Node& slice, int64_t* axis) const {
    if (slice.inputs.size() < 4 || slice.inputs.size() > 5) return false;
    if (slice.inputs.size() == 5 && !slice.inputs[4].empty() && !is_ints(slice.inputs[4], {1})) return false;
    const auto axes = constant_ints(graph_, slice.inputs[3]);
    if (!axes || axes->size() != 1) return false;
    *axis = (*axes)[0];
    return true;
  }
  bool is_ints(const std::string& value, const std::vector<int64_t>& want) const {
    const auto v = constant_ints(graph_, value);
    return v && *v == want;
  }
  bool one_constant(const std::string& value, int64_t* out) const {
    const auto v = constant_ints(graph_, value);
    if (!v || v->size() != 1) return false;
    *out = (*v)[0];
    return true;
  }

  const Graph& graph_;
  Neighbours links_;
};

}  // namespace

int fuse_rotate_half(Graph& graph) { return fuse_matches<RotateHalfMatcher>(graph); }

}  // namespace ember
