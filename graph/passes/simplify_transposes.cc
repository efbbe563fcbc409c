// Layout shuffles that exporters write around attention become fewer transposes, or
// none. nn.MultiheadAttention as torch.onnx writes it (ViT, CLIP, DETR, wav2vec-style
// encoders) unpacks its packed [L, N, 3E] projection through Unsqueeze -> Transpose ->
// Squeeze -> Gather(0/1/2) and splits heads by Reshape(L, N*H, D) -> Transpose(1, 0, 2)
// -> Reshape(N, H, L, D): four copies of the projection before any arithmetic. The
// rewrites here, repeated until none applies:
//
//   Shape(Transpose(x, p))               -> Gather(Shape(x), p)       (frees the transpose's reader)
//   Squeeze(Transpose(Unsqueeze(x)))     -> Transpose(x, p')         (the added axes are the removed ones)
//   Gather(Transpose(x, p), i, axis a)   -> Transpose(Gather(x, i, axis p[a]), p')   (scalar i, every reader)
//   Reshape(Transpose(z, p), t)          -> Transpose(Reshape(z, t'), p')   (the reshape only splits or
//                                           merges dims the transpose keeps together, in order)
//   Transpose(Transpose(x, p), q)        -> Transpose(x, p∘q);  Transpose(x, identity) -> x
//   Mul(Transpose(x, p), s), s one element -> Transpose(Mul(x, s), p)   (only when asked: the CPU's
//                                           strided matmuls then read the transpose)
//
// so that the projection is read by one strided Gather per q, k, v and the head
// permutations reach the consumers that read through strides (com.ember
// ScaledDotProductAttention's q/k/v/y perms, FusedMatMul's perm_a/perm_b).
//
// Shapes are symbolic (a dynamic batch): a Reshape's target is read as products of
// constants and symbolic dims ("dim 1 of x") from the Shape/Gather/Concat arithmetic
// that computes it, and a rewrite is made only where equal products prove the views
// line up. Values a subgraph reads, and graph outputs, are never renamed away.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace {

using Perm = std::vector<int64_t>;

// A product of a positive constant and symbolic dims: 12 * dim(x, 1).
struct Expr {
  int64_t coef = 1;
  std::vector<std::string> atoms;  // sorted
  bool operator==(const Expr&) const = default;
};
using Exprs = std::vector<Expr>;

struct Values {
  Exprs v;
  int64_t rank;
};

Expr constant(int64_t c) { return Expr{c, {}}; }

std::optional<Expr> times(const Expr& a, const Expr& b) {
  constexpr int64_t kLimit = int64_t{1} << 40;
  if (a.coef > kLimit || b.coef > kLimit) return std::nullopt;
  Expr r{a.coef * b.coef, a.atoms};
  r.atoms.insert(r.atoms.end(), b.atoms.begin(), b.atoms.end());
  std::sort(r.atoms.begin(), r.atoms.end());
  return r;
}

// a = b * q for some product q (b's atoms a sub-multiset of a's, coefficients divide).
bool divides(const Expr& b, const Expr& a) {
  if (b.coef <= 0 || a.coef % b.coef != 0) return false;
  return std::includes(a.atoms.begin(), a.atoms.end(), b.atoms.begin(), b.atoms.end());
}

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

bool is_identity(const Perm& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The axes of a Squeeze/Unsqueeze (input 1 from opset 13, the attribute before), each
// in [0, rank).
std::optional<std::vector<int64_t>> axes_of(const Graph& g, const Node& n, int64_t rank) {
  std::optional<std::vector<int64_t>> axes;
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) axes = constant_ints(g, n.inputs[1]);
  else if (n.attributes.has("axes")) axes = n.attributes.get_ints("axes");
  if (!axes || axes->empty()) return std::nullopt;
  for (int64_t& a : *axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes->begin(), axes->end());
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) return std::nullopt;
  return axes;
}

// Symbolic shapes (dims) and symbolic contents of small int64 tensors (values: the
// shape arithmetic exporters write), memoized by value name. A value's name always
// means the same tensor here (rewrites give new values new names), so the memo stays
// true across rewrites.
class Symbols {
 public:
  explicit Symbols(const Graph& g) : g_(g) {
    refresh();
    // A Transpose fixes its input's rank: its dims are then at least known as symbols.
    for (const Node& n : g.nodes)
      if (is(n, "Transpose") && n.attributes.has("perm") && !n.inputs.empty())
        pinned_rank_[n.inputs[0]] = static_cast<int64_t>(n.attributes.get_ints("perm").size());
  }
  void refresh() { producers_ = producers(g_); }

  std::optional<Exprs> dims(const std::string& v) {
    if (auto it = dims_.find(v); it != dims_.end()) return it->second;
    std::optional<Exprs> d = infer_dims(v);
    if (!d) {
      auto r = pinned_rank_.find(v);
      if (r != pinned_rank_.end()) {
        d = Exprs{};
        for (int64_t i = 0; i < r->second; ++i) d->push_back(atom(v, i));
      }
    }
    return dims_[v] = d;
  }

  // The contents of a small integer tensor (the shape arithmetic), when known.
  std::optional<Exprs> values(const std::string& v) {
    auto x = values_with_rank(v);
    if (!x) return std::nullopt;
    return x->v;
  }
  std::optional<Values> values_with_rank(const std::string& v) {
    if (auto it = values_.find(v); it != values_.end()) return it->second;
    return values_[v] = infer_values(v);
  }

 private:
  static Expr atom(const std::string& v, int64_t i) { return Expr{1, {v + "#" + std::to_string(i)}}; }

  const Node* producer(const std::string& v) const {
    auto it = producers_.find(v);
    return it == producers_.end() ? nullptr : &g_.nodes[it->second];
  }

  std::optional<Exprs> broadcast(const std::vector<std::string>& inputs) {
    Exprs out;
    for (const auto& in : inputs) {
      auto d = dims(in);
      if (!d) return std::nullopt;
      if (d->size() > out.size()) out.insert(out.begin(), d->size() - out.size(), constant(1));
      const size_t off = out.size() - d->size();
      for (size_t i = 0; i < d->size(); ++i) {
        const Expr& x = (*d)[i];
        if (x == constant(1) || x == out[off + i]) continue;
        if (out[off + i] == constant(1)) out[off + i] = x;
        else return std::nullopt;  // unequal as far as symbols tell
      }
    }
    return out;
  }

  std::optional<Exprs> infer_dims(const std::string& v) {
    if (auto it = g_.initializers.find(v); it != g_.initializers.end()) {
      Exprs d;
      for (int64_t s : it->second.shape()) d.push_back(constant(s));
      return d;
    }
    for (const ValueInfo& in : g_.inputs)
      if (in.name == v) {
        if (!in.has_shape || !in.is_tensor()) return std::nullopt;
        Exprs d;
        for (size_t i = 0; i < in.dims.size(); ++i)
          d.push_back(in.dims[i].known() ? constant(in.dims[i].value) : atom(v, static_cast<int64_t>(i)));
        return d;
      }
    if (auto x = values_with_rank(v)) {  // shape arithmetic
      if (x->rank == 0) return Exprs{};
      return Exprs{constant(static_cast<int64_t>(x->v.size()))};
    }
    const Node* n = producer(v);
    if (!n || n->outputs.empty() || n->outputs[0] != v || n->inputs.empty()) return std::nullopt;
    const auto& in = n->inputs;
    if (is(*n, "Transpose")) {
      auto d = dims(in[0]);
      if (!d) return std::nullopt;
      Perm p = n->attributes.get_ints_or("perm", {});
      if (p.empty())
        for (int64_t i = static_cast<int64_t>(d->size()); i-- > 0;) p.push_back(i);
      if (p.size() != d->size() || !is_permutation(p)) return std::nullopt;
      Exprs out;
      for (int64_t k : p) out.push_back((*d)[k]);
      return out;
    }
    if (is(*n, "Reshape") && in.size() == 2) {
      auto t = values(in[1]);
      if (!t) return std::nullopt;
      const bool allowzero = n->attributes.get_int_or("allowzero", 0) != 0;
      Exprs out;
      int infer_at = -1;
      for (size_t i = 0; i < t->size(); ++i) {
        const Expr& e = (*t)[i];
        if (e.atoms.empty() && e.coef == -1 && infer_at < 0) {
          infer_at = static_cast<int>(i);
          out.push_back(constant(1));
        } else if (e.atoms.empty() && e.coef == 0 && !allowzero) {
          auto d = dims(in[0]);
          if (!d || i >= d->size()) return std::nullopt;
          out.push_back((*d)[i]);
        } else if (e.coef <= 0) {
          return std::nullopt;
        } else {
          out.push_back(e);
        }
      }
      if (infer_at >= 0) {  // the input's size over the others', where that divides
        auto d = dims(in[0]);
        if (!d) return std::nullopt;
        std::optional<Expr> total = constant(1), known = constant(1);
        for (const Expr& e : *d) total = total ? times(*total, e) : std::nullopt;
        for (const Expr& e : out) known = known ? times(*known, e) : std::nullopt;
        if (!total || !known || !divides(*known, *total)) return std::nullopt;
        Expr q{total->coef / known->coef, {}};
        std::multiset<std::string> rest(total->atoms.begin(), total->atoms.end());
        for (const auto& a : known->atoms) rest.erase(rest.find(a));
        q.atoms.assign(rest.begin(), rest.end());
        out[infer_at] = q;
      }
      return out;
    }
    if (is(*n, "Unsqueeze") || is(*n, "Squeeze")) {
      auto d = dims(in[0]);
      if (!d) return std::nullopt;
      const bool unsqueeze = is(*n, "Unsqueeze");
      int64_t rank = static_cast<int64_t>(d->size());
      std::optional<std::vector<int64_t>> axes;
      if (unsqueeze) {
        std::optional<std::vector<int64_t>> raw;
        if (in.size() > 1) raw = constant_ints(g_, in[1]);
        else if (n->attributes.has("axes")) raw = n->attributes.get_ints("axes");
        if (!raw) return std::nullopt;
        axes = axes_of(g_, *n, rank + static_cast<int64_t>(raw->size()));
      } else {
        axes = axes_of(g_, *n, rank);
      }
      if (!axes) return std::nullopt;
      Exprs out;
      if (unsqueeze) {
        out = *d;
        for (int64_t a : *axes) {
          if (a > static_cast<int64_t>(out.size())) return std::nullopt;
          out.insert(out.begin() + a, constant(1));
        }
      } else {
        for (int64_t i = 0; i < rank; ++i)
          if (!std::binary_search(axes->begin(), axes->end(), i)) out.push_back((*d)[i]);
      }
      return out;
    }
    if (is(*n, "Gather") && in.size() == 2) {
      auto d = dims(in[0]);
      auto idx = dims(in[1]);
      if (!d || !idx) return std::nullopt;
      int64_t axis = n->attributes.get_int_or("axis", 0);
      const int64_t rank = static_cast<int64_t>(d->size());
      if (axis < -rank || axis >= rank) return std::nullopt;
      if (axis < 0) axis += rank;
      Exprs out(d->begin(), d->begin() + axis);
      out.insert(out.end(), idx->begin(), idx->end());
      out.insert(out.end(), d->begin() + axis + 1, d->end());
      return out;
    }
    if (is(*n, "MatMul") && in.size() == 2) {
      auto a = dims(in[0]), b = dims(in[1]);
      if (!a || !b || a->size() < 2 || b->size() < 2) return std::nullopt;
      auto batch = broadcast_prefix(Exprs(a->begin(), a->end() - 2), Exprs(b->begin(), b->end() - 2));
      if (!batch) return std::nullopt;
      batch->push_back((*a)[a->size() - 2]);
      batch->push_back(b->back());
      return batch;
    }
    if (is(*n, "Shape")) {
      if (n->attributes.has("start") || n->attributes.has("end")) return std::nullopt;
      auto d = dims(in[0]);
      if (!d) return std::nullopt;
      return Exprs{constant(static_cast<int64_t>(d->size()))};
    }
    static const std::set<std::string> kBroadcasting = {"Add", "Sub", "Mul", "Div", "Pow", "Where"};
    static const std::set<std::string> kSameShape = {
        "LayerNormalization", "Softmax", "Cast", "Sqrt", "Erf", "Relu", "Tanh", "Sigmoid", "Neg",
        "Identity", "Reciprocal", "Exp", "Log", "Abs", "Gelu"};
    if (n->domain.empty() && kBroadcasting.count(n->op_type)) return broadcast(in);
    if (n->domain.empty() && kSameShape.count(n->op_type)) return dims(in[0]);
    return std::nullopt;
  }

  static std::optional<Exprs> broadcast_prefix(Exprs a, Exprs b) {
    if (a.size() < b.size()) std::swap(a, b);
    const size_t off = a.size() - b.size();
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] == constant(1) || b[i] == a[off + i]) continue;
      if (a[off + i] == constant(1)) a[off + i] = b[i];
      else return std::nullopt;
    }
    return a;
  }

  // The contents of an int64/int32 tensor of rank 0 or 1 (flattened), with its rank.
  std::optional<Values> infer_values(const std::string& v) {
    if (auto it = g_.initializers.find(v); it != g_.initializers.end()) {
      auto c = constant_ints(g_, v);
      if (!c) return std::nullopt;
      Values out{{}, it->second.rank()};
      for (int64_t x : *c) out.v.push_back(constant(x));
      return out;
    }
    const Node* n = producer(v);
    if (!n || n->outputs.empty() || n->outputs[0] != v || n->inputs.empty()) return std::nullopt;
    const auto& in = n->inputs;
    if (is(*n, "Shape")) {
      if (n->attributes.has("start") || n->attributes.has("end")) return std::nullopt;
      auto d = dims(in[0]);
      if (!d) return std::nullopt;
      return Values{*d, 1};
    }
    if (is(*n, "Gather") && in.size() == 2) {
      auto idx = constant_ints(g_, in[1]);
      const int64_t idx_rank = g_.initializers.count(in[1]) ? g_.initializers.at(in[1]).rank() : -1;
      if (!idx || n->attributes.get_int_or("axis", 0) != 0) return std::nullopt;
      auto data = values_with_rank(in[0]);
      const Node* shape = producer(in[0]);
      Values out{{}, idx_rank};
      for (int64_t i : *idx) {
        if (data && data->rank == 1) {
          const int64_t size = static_cast<int64_t>(data->v.size());
          if (i < -size || i >= size) return std::nullopt;
          out.v.push_back(data->v[i < 0 ? i + size : i]);
        } else if (!data && shape && is(*shape, "Shape") && i >= 0 && !shape->attributes.has("start") &&
                   !shape->attributes.has("end")) {
          out.v.push_back(atom(shape->inputs[0], i));  // dim i of a value of unknown rank
        } else {
          return std::nullopt;
        }
      }
      return out;
    }
    if (is(*n, "Unsqueeze") || is(*n, "Squeeze")) {
      auto x = values_with_rank(in[0]);
      if (!x) return std::nullopt;
      std::optional<std::vector<int64_t>> axes;
      if (in.size() > 1 && !in[1].empty()) axes = constant_ints(g_, in[1]);
      else if (n->attributes.has("axes")) axes = n->attributes.get_ints("axes");
      if (!axes) return std::nullopt;
      const int64_t rank = x->rank + (is(*n, "Unsqueeze") ? 1 : -1) * static_cast<int64_t>(axes->size());
      if (rank < 0 || rank > 1) return std::nullopt;
      return Values{x->v, rank};
    }
    if (is(*n, "Reshape") && in.size() == 2) {
      auto x = values_with_rank(in[0]);
      auto shape = values_with_rank(in[1]);
      if (!x || !shape || shape->v.size() > 1) return std::nullopt;
      return Values{x->v, static_cast<int64_t>(shape->v.size())};
    }
    if (is(*n, "Identity")) return values_with_rank(in[0]);
    if (is(*n, "Cast")) {
      const int64_t to = n->attributes.get_int_or("to", 0);
      if (to != 7 && to != 6) return std::nullopt;  // int64, int32
      return values_with_rank(in[0]);
    }
    if (is(*n, "Concat")) {
      if (n->attributes.get_int_or("axis", 0) != 0 && n->attributes.get_int_or("axis", 0) != -1) return std::nullopt;
      Values out{{}, 1};
      for (const auto& part : in) {
        auto x = values_with_rank(part);
        if (!x || x->rank != 1) return std::nullopt;
        out.v.insert(out.v.end(), x->v.begin(), x->v.end());
      }
      return out;
    }
    if (is(*n, "Mul") && in.size() == 2) {
      auto a = values_with_rank(in[0]), b = values_with_rank(in[1]);
      if (!a || !b) return std::nullopt;
      if (a->v.size() < b->v.size()) std::swap(a, b);
      if (b->v.size() != 1 && b->v.size() != a->v.size()) return std::nullopt;
      Values out{{}, std::max(a->rank, b->rank)};
      for (size_t i = 0; i < a->v.size(); ++i) {
        auto r = times(a->v[i], b->v[b->v.size() == 1 ? 0 : i]);
        if (!r) return std::nullopt;
        out.v.push_back(*r);
      }
      return out;
    }
    if (is(*n, "Slice") && in.size() >= 3) {
      auto data = values_with_rank(in[0]);
      auto starts = constant_ints(g_, in[1]), ends = constant_ints(g_, in[2]);
      if (!data || data->rank != 1 || !starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
      if (in.size() > 3 && !in[3].empty()) {
        auto axes = constant_ints(g_, in[3]);
        if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
      }
      if (in.size() > 4 && !in[4].empty()) {
        auto steps = constant_ints(g_, in[4]);
        if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
      }
      const int64_t size = static_cast<int64_t>(data->v.size());
      auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
      const int64_t b = clamp((*starts)[0]), e = clamp((*ends)[0]);
      return Values{Exprs(data->v.begin() + b, data->v.begin() + std::max(b, e)), 1};
    }
    return std::nullopt;
  }

  const Graph& g_;
  std::unordered_map<std::string, int> producers_;
  std::unordered_map<std::string, int64_t> pinned_rank_;
  std::unordered_map<std::string, std::optional<Exprs>> dims_;
  std::unordered_map<std::string, std::optional<Values>> values_;
};

// How a reshape regroups dims: consecutive groups of `from` and `to` with equal
// products (a dim of size 1 joins the group beside it). Empty when the symbols do not
// show it.
struct Group {
  int from_begin, from_end, to_begin, to_end;
};
std::optional<std::vector<Group>> regroup(const Exprs& from, const Exprs& to) {
  std::vector<Group> groups;
  const int nf = static_cast<int>(from.size()), nt = static_cast<int>(to.size());
  int i = 0, j = 0;
  while (i < nf && j < nt) {
    Group gr{i, i + 1, j, j + 1};
    Expr a = from[i], b = to[j];
    while (!(a == b)) {
      if (divides(a, b) && gr.from_end < nf) {  // the target dim is bigger: merge more sources
        auto r = times(a, from[gr.from_end++]);
        if (!r) return std::nullopt;
        a = *r;
      } else if (divides(b, a) && gr.to_end < nt) {
        auto r = times(b, to[gr.to_end++]);
        if (!r) return std::nullopt;
        b = *r;
      } else {
        return std::nullopt;
      }
    }
    groups.push_back(gr);
    i = gr.from_end;
    j = gr.to_end;
  }
  // Trailing dims of size 1 join the last group.
  for (; i < nf; ++i)
    if (!(from[i] == constant(1)) || groups.empty()) return std::nullopt;
    else groups.back().from_end = i + 1;
  for (; j < nt; ++j)
    if (!(to[j] == constant(1)) || groups.empty()) return std::nullopt;
    else groups.back().to_end = j + 1;
  return groups;
}

class TransposeSimplifier {
 public:
  TransposeSimplifier(Graph& graph, bool through_scalar_mul)
      : g_(graph), through_scalar_mul_(through_scalar_mul), symbols_(graph) {
    std::set<std::string> reads, defined;
    for (const Node& n : g_.nodes)
      for (const auto& [name, a] : n.attributes.all()) {
        if (name == kDecompositionAttribute) continue;
        if (a.g) collect_outer_reads(*a.g, reads, defined);
        for (const auto& sub : a.graphs) collect_outer_reads(*sub, reads, defined);
      }
    for (const auto& r : reads) pinned_.insert(r);
    for (const auto& o : g_.outputs) pinned_.insert(o.name);
  }

  int run() {
    int rewrites = 0;
    for (bool changed = true; changed;) {
      changed = false;
      consumers_.emplace(g_);
      producers_ = producers(g_);
      symbols_.refresh();
      for (size_t i = 0; i < g_.nodes.size() && !changed; ++i) changed = rewrite(static_cast<int>(i));
      if (changed) {
        ++rewrites;
        eliminate_dead_code(g_);
      }
    }
    return rewrites;
  }

 private:
  // Read by exactly one node, not a graph output nor by a subgraph.
  bool single_reader(const std::string& v) const { return !pinned_.count(v) && consumers_->single_reader(v); }

  const Node* producer_of(const std::string& v) const {
    auto it = producers_.find(v);
    return it == producers_.end() ? nullptr : &g_.nodes[it->second];
  }
  // The Transpose (with a valid perm) producing v, or nullptr.
  const Node* transpose_into(const std::string& v, Perm* p) const {
    const Node* t = producer_of(v);
    if (!t || !is(*t, "Transpose") || t->inputs.size() != 1 || !t->attributes.has("perm")) return nullptr;
    *p = t->attributes.get_ints("perm");
    return is_permutation(*p) ? t : nullptr;
  }

  std::string fresh(const std::string& base) {
    for (;;) {
      std::string name = base + "/st" + std::to_string(counter_++);
      if (!taken(name)) return name;
    }
  }
  bool taken(const std::string& name) const { return g_.initializers.count(name) || producers_.count(name); }
  std::string int64_constant(const std::string& base, const std::vector<int64_t>& v, bool scalar = false) {
    const std::string name = fresh(base);
    Tensor t(DType::Int64, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data_as<int64_t>());
    g_.initializers.emplace(name, std::move(t));
    return name;
  }
  // A Gather of `reshape`'s target shape in `order`: the target for the dims reordered.
  Node reordered_target(const Node& reshape, const Perm& order) {
    Node gather;
    gather.name = reshape.name + "/target";
    gather.op_type = "Gather";
    gather.inputs = {reshape.inputs[1], int64_constant(reshape.name + "/order", order)};
    gather.outputs = {fresh(reshape.inputs[1])};
    gather.attributes.set_int("axis", 0);
    return gather;
  }

  // Puts `n` before node `at` (its inputs are all produced before `at`).
  void insert_before(int at, Node n) { g_.nodes.insert(g_.nodes.begin() + at, std::move(n)); }

  bool rewrite(int i) {
    const Node& n = g_.nodes[i];
    if (!n.domain.empty() || n.outputs.size() != 1) return false;
    if (n.op_type == "Shape") return shape_of_transpose(i);
    if (n.op_type == "Squeeze") return squeeze_transpose_unsqueeze(i);
    if (n.op_type == "Gather") return gather_through_transpose(i);
    if (n.op_type == "Reshape" && reshape_after_transpose(i)) return true;
    if (n.op_type == "Transpose") return transpose_of_transpose(i) || pull_transpose_up(i);
    if (n.op_type == "Reshape" && gemm_between_reshapes(i)) return true;
    if (n.op_type == "Mul" && through_scalar_mul_) return mul_after_transpose(i);
    return false;
  }

  // Shape(Transpose(x, p)) -> Gather(Shape(x), p).
  bool shape_of_transpose(int i) {
    Node& n = g_.nodes[i];
    Perm p;
    if (n.inputs.size() != 1 || n.attributes.has("start") || n.attributes.has("end")) return false;
    const Node* t = transpose_into(n.inputs[0], &p);
    if (!t) return false;
    const std::string x = t->inputs[0];
    Node shape = n;
    shape.name = n.name + "/of_input";
    shape.inputs = {x};
    shape.outputs = {fresh(n.outputs[0])};
    n.op_type = "Gather";
    n.inputs = {shape.outputs[0], int64_constant(n.outputs[0] + "/perm", p)};
    n.attributes = {};
    n.attributes.set_int("axis", 0);
    insert_before(i, std::move(shape));
    return true;
  }

  // Squeeze(Transpose(Unsqueeze(x, a), p), s) where the transpose moves exactly the
  // added axes to the removed ones -> Transpose(x, p').
  bool squeeze_transpose_unsqueeze(int i) {
    Node& sq = g_.nodes[i];
    Perm p;
    const Node* t = transpose_into(sq.inputs[0], &p);
    if (!t || !single_reader(sq.inputs[0])) return false;
    const Node* un = producer_of(t->inputs[0]);
    if (!un || !is(*un, "Unsqueeze") || !single_reader(t->inputs[0])) return false;
    const int64_t rank = static_cast<int64_t>(p.size());
    auto added = axes_of(g_, *un, rank);
    auto removed = axes_of(g_, sq, rank);
    if (!added || !removed || added->size() != removed->size()) return false;
    std::vector<int64_t> moved;
    for (int64_t j : *removed) moved.push_back(p[j]);
    std::sort(moved.begin(), moved.end());
    if (moved != *added) return false;
    auto input_axis = [&](int64_t u) {
      return u - static_cast<int64_t>(std::count_if(added->begin(), added->end(), [&](int64_t a) { return a < u; }));
    };
    Perm q;
    for (int64_t j = 0; j < rank; ++j)
      if (!std::binary_search(removed->begin(), removed->end(), j)) q.push_back(input_axis(p[j]));
    const std::string x = un->inputs[0];
    sq = new_transpose(sq.name, x, sq.outputs[0], q);
    return true;
  }

  // Gather(Transpose(x, p), i, axis a), i a scalar constant, every reader of the
  // transpose such a Gather -> Transpose(Gather(x, i, axis p[a]), p without a).
  bool gather_through_transpose(int i) {
    Perm p;
    const Node* t = transpose_into(g_.nodes[i].inputs[0], &p);
    if (!t || pinned_.count(t->outputs[0])) return false;
    const std::string x = t->inputs[0];
    const int64_t rank = static_cast<int64_t>(p.size());
    std::vector<int> readers = consumers_->of(t->outputs[0]);
    for (int r : readers) {
      if (r < 0) return false;
      const Node& gather = g_.nodes[r];
      if (!is(gather, "Gather") || gather.inputs.size() != 2 || gather.inputs[0] != t->outputs[0] ||
          gather.inputs[1] == t->outputs[0])
        return false;
      auto idx = g_.initializers.find(gather.inputs[1]);
      if (idx == g_.initializers.end() || idx->second.rank() != 0) return false;
      const int64_t axis = gather.attributes.get_int_or("axis", 0);
      if (axis < -rank || axis >= rank) return false;
    }
    // Rewrite from the last reader back, so inserting keeps the earlier indices.
    std::sort(readers.rbegin(), readers.rend());
    for (int r : readers) {
      Node& gather = g_.nodes[r];
      int64_t axis = gather.attributes.get_int_or("axis", 0);
      if (axis < 0) axis += rank;
      Node inner = gather;
      inner.name = gather.name + "/before_transpose";
      inner.inputs[0] = x;
      inner.outputs = {fresh(gather.outputs[0])};
      inner.attributes.set_int("axis", p[axis]);
      Perm q;
      for (int64_t j = 0; j < rank; ++j)
        if (j != axis) q.push_back(p[j] > p[axis] ? p[j] - 1 : p[j]);
      gather = new_transpose(gather.name + "/transpose", inner.outputs[0], gather.outputs[0], q);
      insert_before(r, std::move(inner));
    }
    return true;
  }

  // Reshape(Transpose(z, p), t) -> Transpose(Reshape(z, t'), p') when the reshape
  // splits or merges only dims the transpose keeps adjacent and in order.
  bool reshape_after_transpose(int i) {
    Node& reshape = g_.nodes[i];
    Perm p;
    if (reshape.inputs.size() != 2 || reshape.attributes.get_int_or("allowzero", 0) != 0) return false;
    const Node* t = transpose_into(reshape.inputs[0], &p);
    if (!t || !single_reader(reshape.inputs[0])) return false;
    auto z = symbols_.dims(t->inputs[0]);
    auto target = symbols_.values(reshape.inputs[1]);
    if (!z || !target || z->size() != p.size()) return false;
    for (const Expr& e : *target)
      if (e.coef <= 0) return false;  // 0 copies and -1 infers a dim: positions matter
    Exprs d;
    for (int64_t k : p) d.push_back((*z)[k]);
    auto groups = regroup(d, *target);
    if (!groups) return false;
    // Each group's source dims in z: consecutive and in order.
    std::vector<std::pair<int64_t, size_t>> by_source;  // (first source dim, group)
    for (size_t k = 0; k < groups->size(); ++k) {
      const Group& gr = (*groups)[k];
      for (int j = gr.from_begin + 1; j < gr.from_end; ++j)
        if (p[j] != p[j - 1] + 1) return false;
      by_source.push_back({p[gr.from_begin], k});
    }
    std::sort(by_source.begin(), by_source.end());
    std::vector<int64_t> order;  // target positions in z's order
    std::vector<int64_t> at(target->size());
    for (const auto& [_, k] : by_source)
      for (int j = (*groups)[k].to_begin; j < (*groups)[k].to_end; ++j) {
        at[j] = static_cast<int64_t>(order.size());
        order.push_back(j);
      }
    const std::string z_name = t->inputs[0];
    const std::string out = reshape.outputs[0];
    if (is_identity(order)) {
      reshape.inputs[0] = z_name;
      return true;
    }
    Node gather = reordered_target(reshape, order);
    Node inner = reshape;
    inner.inputs = {z_name, gather.outputs[0]};
    inner.outputs = {fresh(out)};
    reshape = new_transpose(reshape.name + "/transpose", inner.outputs[0], out, at);
    insert_before(i, std::move(inner));
    insert_before(i, std::move(gather));
    return true;
  }

  // Transpose(Transpose(x, p), q) -> Transpose(x, p∘q); Transpose(x, identity) -> x.
  bool transpose_of_transpose(int i) {
    Node& outer = g_.nodes[i];
    if (outer.inputs.size() != 1 || !outer.attributes.has("perm")) return false;
    const Perm q = outer.attributes.get_ints("perm");
    if (!is_permutation(q)) return false;
    if (is_identity(q) && !pinned_.count(outer.outputs[0])) {
      const std::string from = outer.outputs[0], to = outer.inputs[0];
      for (int r : consumers_->of(from))  // a fused reader's decomposition reads the name too
        for (const auto& [_, a] : g_.nodes[r].attributes.all())
          if (a.g || !a.graphs.empty()) return false;
      for (Node& n : g_.nodes)
        for (auto& in : n.inputs)
          if (in == from) in = to;
      return true;  // the transpose, unread now, goes
    }
    Perm p;
    const Node* inner = transpose_into(outer.inputs[0], &p);
    if (!inner || !single_reader(outer.inputs[0]) || p.size() != q.size()) return false;
    Perm composed(q.size());
    for (size_t k = 0; k < q.size(); ++k) composed[k] = p[q[k]];
    const std::string x = inner->inputs[0];
    outer.inputs[0] = x;
    outer.attributes.set_ints("perm", composed);
    return true;
  }

  // The perm a Transpose(·, q) of `x`'s output takes when it moves above `x`, for a
  // node that acts on rows alone (Add of a constant of rank <= 1, MatMul by a constant
  // matrix: q keeps the last dim where the row matters) or a Reshape whose groups of
  // dims q keeps together and in order; nullopt where it cannot. `data` is the input
  // the transpose moves onto.
  std::optional<Perm> perm_above(const Node& x, const Perm& q, int* data) {
    const int64_t r = static_cast<int64_t>(q.size());
    const bool keeps_last = q.back() == r - 1;
    if (is(x, "Add") && x.inputs.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        auto b = g_.initializers.find(x.inputs[1 - k]);
        if (b == g_.initializers.end() || b->second.rank() > 1 || (b->second.numel() > 1 && !keeps_last)) continue;
        *data = k;
        return q;
      }
      return std::nullopt;
    }
    if (is(x, "MatMul") && x.inputs.size() == 2) {
      auto w = g_.initializers.find(x.inputs[1]);
      if (w == g_.initializers.end() || w->second.rank() != 2 || !keeps_last || r < 2) return std::nullopt;
      *data = 0;
      return q;
    }
    if (is(x, "Reshape") && x.inputs.size() == 2 && x.attributes.get_int_or("allowzero", 0) == 0) {
      auto u = symbols_.dims(x.inputs[0]);
      auto target = symbols_.values(x.inputs[1]);
      if (!u || !target || target->size() != q.size()) return std::nullopt;
      for (const Expr& e : *target)
        if (e.coef <= 0) return std::nullopt;
      auto groups = regroup(*u, *target);
      if (!groups) return std::nullopt;
      Perm above;
      for (int64_t k = 0; k < r;) {
        auto gr = std::find_if(groups->begin(), groups->end(), [&](const Group& g) { return g.to_begin == q[k]; });
        if (gr == groups->end()) return std::nullopt;  // q splits a group
        for (int j = gr->to_begin; j < gr->to_end; ++j, ++k)
          if (k >= r || q[k] != j) return std::nullopt;
        for (int j = gr->from_begin; j < gr->from_end; ++j) above.push_back(j);
      }
      *data = 0;
      return above;
    }
    return std::nullopt;
  }

  // Transpose(f(g(... Transpose(x, p) ...)), q) with f, g, ... as perm_above takes
  // them, each read only by the next: the outer transpose moves one step up (each
  // round one more, until it composes with the inner one). Nothing moves where it
  // would not meet another transpose.
  bool pull_transpose_up(int i) {
    const Node& t = g_.nodes[i];
    if (t.inputs.size() != 1 || !t.attributes.has("perm")) return false;
    Perm q = t.attributes.get_ints("perm");
    if (!is_permutation(q) || q.empty()) return false;
    std::string v = t.inputs[0];
    std::optional<Perm> first;
    int first_data = 0;
    for (int depth = 0; depth < 16; ++depth) {
      if (!single_reader(v)) return false;
      const Node* x = producer_of(v);
      if (!x || x->outputs.size() != 1) return false;
      Perm p;
      if (transpose_into(v, &p)) {
        if (depth == 0) return false;  // transpose_of_transpose composes it
        break;
      }
      int data = 0;
      auto above = perm_above(*x, q, &data);
      if (!above) return false;
      if (!first) {
        first = above;
        first_data = data;
      }
      q = *above;
      v = x->inputs[data];
      if (depth == 15) return false;
    }
    // Move the transpose above the node producing its input.
    const std::string t_out = t.outputs[0], t_name = t.name;
    const Perm q0 = t.attributes.get_ints("perm");
    const int x_index = producers_.at(t.inputs[0]);
    g_.nodes.erase(g_.nodes.begin() + i);  // after x_index: x's index holds
    Node& x = g_.nodes[x_index];
    const std::string source = x.inputs[first_data];
    Node moved = new_transpose(t_name, source, fresh(source), *first);
    x.inputs[first_data] = moved.outputs[0];
    x.outputs[0] = t_out;
    if (is(x, "Reshape")) {  // its target in the transposed order
      Node gather = reordered_target(x, q0);
      x.inputs[1] = gather.outputs[0];
      insert_before(x_index, std::move(gather));
    }
    insert_before(x_index, std::move(moved));
    return true;
  }

  // Reshape(Gemm(Reshape(u, s), W, C), t), read by a Transpose, with W a constant
  // matrix, C a constant of rank <= 1, t's last entry W's output size: the Gemm acts
  // on rows, so it becomes MatMul + Add on Reshape(u, t[:-1] ++ [K]) directly, where
  // the transpose after it can move up (pull_transpose_up).
  bool gemm_between_reshapes(int i) {
    const Node& out = g_.nodes[i];
    if (out.inputs.size() != 2 || !single_reader(out.inputs[0]) || !consumers_->single_reader(out.outputs[0]))
      return false;
    if (!is(g_.nodes[consumers_->of(out.outputs[0])[0]], "Transpose")) return false;
    const Node* gemm = producer_of(out.inputs[0]);
    if (!gemm || !is(*gemm, "Gemm") || gemm->inputs.size() < 2 || gemm->attributes.get_int_or("transA", 0) != 0 ||
        gemm->attributes.get_float_or("alpha", 1.f) != 1.f || gemm->attributes.get_float_or("beta", 1.f) != 1.f)
      return false;
    auto w = g_.initializers.find(gemm->inputs[1]);
    if (w == g_.initializers.end() || w->second.rank() != 2 || w->second.dtype() != DType::Float32) return false;
    const bool trans_b = gemm->attributes.get_int_or("transB", 0) != 0;
    const int64_t k_in = w->second.shape()[trans_b ? 1 : 0], n_out = w->second.shape()[trans_b ? 0 : 1];
    const bool has_c = gemm->inputs.size() > 2 && !gemm->inputs[2].empty();
    if (has_c) {
      auto c = g_.initializers.find(gemm->inputs[2]);
      if (c == g_.initializers.end() || c->second.rank() > 1) return false;
    }
    const Node* a = producer_of(gemm->inputs[0]);
    if (!a || !is(*a, "Reshape") || a->inputs.size() != 2 || !single_reader(gemm->inputs[0])) return false;
    auto target = symbols_.values(out.inputs[1]);
    if (!target || target->empty() || !(target->back() == constant(n_out))) return false;
    for (const Expr& e : *target)
      if (e.coef <= 0) return false;
    const std::string u = a->inputs[0], t = out.inputs[1], weight = gemm->inputs[1];
    const std::string bias = has_c ? gemm->inputs[2] : "", base = gemm->name;
    const std::string result = out.outputs[0];
    std::vector<int64_t> rows(target->size() - 1);
    for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<int64_t>(k);
    std::string matrix = weight;
    if (trans_b) {  // MatMul takes [K, N]
      const Tensor& wt = w->second;
      Tensor m(DType::Float32, {k_in, n_out});
      for (int64_t r = 0; r < n_out; ++r)
        for (int64_t c = 0; c < k_in; ++c) m.data_as<float>()[c * n_out + r] = wt.data_as<float>()[r * k_in + c];
      matrix = fresh(weight + "/transposed");
      g_.initializers.emplace(matrix, std::move(m));
    }
    std::vector<Node> added(4);
    added[0].name = base + "/rows";
    added[0].op_type = "Gather";
    added[0].inputs = {t, int64_constant(base + "/rows", rows)};
    added[0].outputs = {fresh(t)};
    added[0].attributes.set_int("axis", 0);
    added[1].name = base + "/input_shape";
    added[1].op_type = "Concat";
    added[1].inputs = {added[0].outputs[0], int64_constant(base + "/k", {k_in})};
    added[1].outputs = {fresh(t)};
    added[1].attributes.set_int("axis", 0);
    added[2].name = base + "/input";
    added[2].op_type = "Reshape";
    added[2].inputs = {u, added[1].outputs[0]};
    added[2].outputs = {fresh(u)};
    added[3].name = base;
    added[3].op_type = "MatMul";
    added[3].inputs = {added[2].outputs[0], matrix};
    added[3].outputs = {has_c ? fresh(result) : result};
    Node& reshape = g_.nodes[i];
    if (has_c) {
      reshape = new_node(base + "/bias", "Add", {added[3].outputs[0], bias}, result);
    } else {
      added.pop_back();
      reshape = new_node(base, "MatMul", {added[2].outputs[0], matrix}, result);
    }
    for (size_t k = added.size(); k-- > 0;) insert_before(i, std::move(added[k]));
    return true;
  }

  // Mul(Transpose(x, p), s) with s of one element and no more dims than x ->
  // Transpose(Mul(x, s), p): the transpose moves next to the product reading it.
  bool mul_after_transpose(int i) {
    Node& mul = g_.nodes[i];
    if (mul.inputs.size() != 2 || mul.inputs[0] == mul.inputs[1]) return false;
    for (int k = 0; k < 2; ++k) {
      Perm p;
      const Node* t = transpose_into(mul.inputs[k], &p);
      if (!t || !single_reader(mul.inputs[k])) continue;
      auto s = symbols_.dims(mul.inputs[1 - k]);
      if (!s || s->size() > p.size()) continue;
      bool one = true;
      for (const Expr& e : *s) one = one && e == constant(1);
      if (!one) continue;
      Node inner = mul;
      inner.inputs[k] = t->inputs[0];
      inner.outputs = {fresh(mul.outputs[0])};
      mul = new_transpose(mul.name + "/transpose", inner.outputs[0], mul.outputs[0], p);
      insert_before(i, std::move(inner));
      return true;
    }
    return false;
  }

  Graph& g_;
  bool through_scalar_mul_;
  Symbols symbols_;
  std::optional<Consumers> consumers_;
  std::unordered_map<std::string, int> producers_;  // as of the round's start
  std::unordered_set<std::string> pinned_;
  int counter_ = 0;
};

}  // namespace

int simplify_transposes(Graph& graph, bool through_scalar_mul) {
  return TransposeSimplifier(graph, through_scalar_mul).run();
}

}  // namespace ember
