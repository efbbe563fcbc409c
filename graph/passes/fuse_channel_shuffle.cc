// ShuffleNet's channel shuffle as exporters write it,
//
//   v = Reshape(x, [N, g, C/g, H, W])      x: [N, C, H, W]
//   t = Transpose(v, perm = [0, 2, 1, 3, 4])
//   y = Reshape(t, [N, C, H, W])
//
// becomes one com.ember ChannelShuffle(x, group = g, axis = 1) (graph/schemas/
// channel_shuffle.cc), with the three nodes as its decomposition. The CPU's layout
// planning then keeps it channels-last between the convolutions around it; the rank-5
// spelling went back to NCHW and forth at every unit: ShuffleNetV2's 16 units spent
// 1.1 ms of its 4.1 in Transposes on a 2-core Xeon (`infer --profile`).
//
// The shapes are constants (the dynamo exporter's, or a static export's), or Concats of
// constants and x's own dims (TorchScript's x.size(d) with a dynamic batch). The Reshapes
// only split and rejoin the channel axis where x is [N, C, H, W] with the C, H and W
// (and N, where a literal) they name: the fused node says so (x_shape, -1 for x's own),
// a kernel given another x declines, and the node then runs as the three it replaced. A
// shape x declares otherwise (value_info) leaves them alone.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// One entry of a Reshape's target: a constant, dim `value` of the shuffled x
// (TorchScript's x.size(d): Gather(Shape(x), d) through Unsqueeze, Casts, Identity), or
// something else.
struct Entry {
  enum Kind { Constant, DimOfX, Unknown } kind = Unknown;
  int64_t value = 0;
  bool is_constant(int64_t v) const { return kind == Constant && value == v; }
  bool is_dim(int64_t d) const { return kind == DimOfX && value == d; }
};

class TargetReader {
 public:
  explicit TargetReader(const Graph& graph) : graph_(graph), produced_(producers(graph)) {}

  // The entries of `reshape`'s target, a constant or a Concat of constants and scalars,
  // with dims of `x` named as such.
  std::optional<std::vector<Entry>> entries(const Node& reshape, const std::string& x) const {
    if (reshape.inputs.size() < 2) return std::nullopt;
    const std::string& target = reshape.inputs[1];
    if (auto c = constant_ints(graph_, target)) return constants(*c);
    const Node* concat = producer(target);
    if (!concat || !is(*concat, "Concat") || concat->attributes.get_int_or("axis", 0) != 0) return std::nullopt;
    std::vector<Entry> out;
    for (const std::string& piece : concat->inputs) {
      if (auto c = constant_ints(graph_, piece)) {
        const auto more = constants(*c);
        out.insert(out.end(), more.begin(), more.end());
      } else {
        out.push_back(scalar(piece, x));
      }
    }
    return out;
  }

 private:
  const Node* producer(const std::string& v) const {
    auto it = produced_.find(v);
    return it == produced_.end() ? nullptr : &graph_.nodes[it->second];
  }

  static std::vector<Entry> constants(const std::vector<int64_t>& c) {
    std::vector<Entry> out;
    for (int64_t v : c) out.push_back({Entry::Constant, v});
    return out;
  }

  // A one-element piece: dim d of x where it is Gather(Shape(x), d), else unknown.
  Entry scalar(std::string v, const std::string& x) const {
    for (const Node* n = producer(v); n; n = producer(v)) {
      const bool integer_cast = is(*n, "Cast") && (n->attributes.get_int_or("to", 0) == static_cast<int64_t>(DType::Int64));
      if (!(is(*n, "Unsqueeze") || is(*n, "Identity") || integer_cast)) break;
      v = n->inputs[0];
    }
    const Node* gather = producer(v);
    if (!gather || !is(*gather, "Gather") || gather->inputs.size() != 2 || gather->attributes.get_int_or("axis", 0) != 0)
      return {};
    const Node* shape = producer(gather->inputs[0]);
    const auto index = constant_ints(graph_, gather->inputs[1]);
    if (!shape || !is(*shape, "Shape") || shape->inputs[0] != x || shape->attributes.has("start") ||
        shape->attributes.has("end") || !index || index->size() != 1 || (*index)[0] < 0 || (*index)[0] > 3)
      return {};
    return {Entry::DimOfX, (*index)[0]};
  }

  const Graph& graph_;
  std::unordered_map<std::string, int> produced_;
};

// Whether what `value` declares (if it declares a shape) agrees with `shape` (-1: any).
bool declared_agrees(const Graph& graph, const std::string& value, const std::vector<int64_t>& shape) {
  const ValueInfo* info = declared_value(graph, value);
  if (!info || !info->has_shape) return true;
  if (info->dims.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] >= 0 && info->dims[d].known() && info->dims[d].value != shape[d]) return false;
  return true;
}

// x's dim d as a target entry names it: a size (>= 0), any (-1), or nothing where the
// entry is neither that dim of x nor a positive constant.
std::optional<int64_t> fixed_dim(const Entry& e, int64_t d) {
  if (e.is_dim(d)) return -1;
  if (e.kind == Entry::Constant && e.value > 0) return e.value;
  return std::nullopt;
}

// The batch a leading entry asks for: x's own (-1, pinned), any (-1, inferred from the
// rest: -1, or a 0 copying it without allowzero), or that many.
struct Batch {
  int64_t size = -1;
  bool pinned = false;
};
std::optional<Batch> batch_of(const Node& reshape, const Entry& first) {
  if (first.is_dim(0)) return Batch{-1, true};
  if (first.is_constant(-1) || (first.is_constant(0) && reshape.attributes.get_int_or("allowzero", 0) == 0))
    return Batch{};
  if (first.kind == Entry::Constant && first.value > 0) return Batch{first.value, true};
  return std::nullopt;
}

// The x (-1: any size) for which Reshape(x, split) -> Transpose(0, 2, 1, 3, 4) ->
// Reshape(., join) is a channel shuffle in `*group` groups, or nothing. Each of x's dims
// is fixed by the targets, so where the kernel finds x so, the rewrite is exact: the
// batch by a pinned entry or by the channels per group, H and W by x's own dims or
// constants, the channels by the join (C or x's own) and by the groups.
std::optional<std::vector<int64_t>> shuffled_x(const Node& split, const std::vector<Entry>& e, const Node& join,
                                               const std::vector<Entry>& f, int64_t* group) {
  if (e.size() != 5 || f.size() != 4 || e[1].kind != Entry::Constant || e[1].value < 1) return std::nullopt;
  *group = e[1].value;
  const auto batch = batch_of(split, e[0]), joined = batch_of(join, f[0]);
  if (!batch || !joined || (batch->size >= 0 && joined->size >= 0 && batch->size != joined->size)) return std::nullopt;
  std::vector<int64_t> x{std::max(batch->size, joined->size), -1, -1, -1};
  for (int64_t d : {2, 3}) {
    const auto split_dim = fixed_dim(e[d + 1], d), joined_dim = fixed_dim(f[d], d);
    if (!split_dim || !joined_dim || *split_dim != *joined_dim) return std::nullopt;
    x[d] = *split_dim;
  }
  const auto channels = fixed_dim(f[1], 1);
  const bool per_group_known = e[2].kind == Entry::Constant && e[2].value > 0;
  if (!channels || (!per_group_known && !batch->pinned)) return std::nullopt;
  if (per_group_known) {
    if (*channels >= 0 && *channels != *group * e[2].value) return std::nullopt;
    x[1] = *group * e[2].value;
  } else {
    x[1] = *channels;
  }
  return x;
}

class ChannelShuffleMatcher {
 public:
  explicit ChannelShuffleMatcher(const Graph& graph) : graph_(graph), consumers_(graph), targets_(graph) {}

  // From the first Reshape: the fused node and the three nodes it replaces.
  bool match(int split_i, Node* fused, std::vector<int>* matched) const {
    const Node& split = graph_.nodes[split_i];
    if (!is(split, "Reshape") || split.outputs.size() != 1 || graph_.opset() < 5) return false;
    const int transpose_i = sole_reader(split.outputs[0], "Transpose");
    if (transpose_i < 0 ||
        graph_.nodes[transpose_i].attributes.get_ints_or("perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4})
      return false;
    const int join_i = sole_reader(graph_.nodes[transpose_i].outputs[0], "Reshape");
    if (join_i < 0) return false;
    const Node& join = graph_.nodes[join_i];
    const std::string& x = split.inputs[0];
    const auto split_entries = targets_.entries(split, x), join_entries = targets_.entries(join, x);
    int64_t group = 0;
    const auto x_shape = split_entries && join_entries
                             ? shuffled_x(split, *split_entries, join, *join_entries, &group)
                             : std::nullopt;
    if (!x_shape || !declared_agrees(graph_, x, *x_shape)) return false;
    *matched = {split_i, transpose_i, join_i};
    fused->name = (split.name.empty() ? join.outputs[0] : split.name) + "/channel_shuffle";
    fused->op_type = "ChannelShuffle";
    fused->domain = "com.ember";
    fused->inputs = {x};
    fused->outputs = {join.outputs[0]};
    fused->attributes.set_int("group", group);
    fused->attributes.set_int("axis", 1);
    fused->attributes.set_ints("x_shape", *x_shape);
    return true;
  }

 private:
  // The node of type `op` that alone reads `value`, or -1.
  int sole_reader(const std::string& value, const char* op) const {
    if (!consumers_.single_reader(value)) return -1;
    const int i = consumers_.of(value)[0];
    return is(graph_.nodes[i], op) ? i : -1;
  }

  const Graph& graph_;
  Consumers consumers_;
  TargetReader targets_;
};

}  // namespace

int fuse_channel_shuffle(Graph& graph) {
  const ChannelShuffleMatcher matcher(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> fused;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node node;
    std::vector<int> matched;
    if (!matcher.match(static_cast<int>(i), &node, &matched)) continue;
    attach_decomposition(graph, matched, node);
    for (int k : matched) dead[k] = true;
    fused.push_back(std::move(node));
  }
  return replace_with_fused(graph, dead, std::move(fused));
}

}  // namespace ember
