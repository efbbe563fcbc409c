// The float16 / bfloat16 conversion (see the header for what it does and why).
//
// Three steps: (1) the dtype every value has in the float32 graph, by a small rule
// table (ember's schemas need shapes; the pass must not); (2) per float32 value, where
// it lives after conversion (its "home": the target type (float16 or bfloat16) or
// float32, or an initializer that can be either) and which input slots need it in which precision; (3) one Cast per value
// and precision that differ, initializers converted (or copied), slots renamed.
#include "graph/passes/convert_float16.h"

#include "graph/passes/passes.h"
#include "graph/schema.h"
#include <ember/core/float16.h>

#include <cassert>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace {

constexpr float kHalfMax = 65504.0f;
// The largest finite bfloat16 (0x7f7f): float32 values past it round to Inf.
constexpr float kBFloat16Max = 3.38953139e38f;

bool is_standard(const Node& n) { return n.domain.empty(); }
bool is(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

bool has_subgraph(const Node& n) {
  for (const auto& [name, a] : n.attributes.all())
    if (name != kDecompositionAttribute && (a.g || !a.graphs.empty())) return true;
  return false;
}

Graph* decomposition_of(Node& n) {
  const Attribute* a = n.attributes.find(kDecompositionAttribute);
  return a && a->g ? a->g.get() : nullptr;
}

// float32 -> `target` (float16 or bfloat16) tensor, finite values beyond the target's
// range saturated.
Tensor to_reduced(const Tensor& t, DType target, int64_t* overflowed) {
  Tensor out(target, t.shape());
  const float* src = t.data_as<float>();
  uint16_t* dst = out.data_as<uint16_t>();
  const bool bf16 = target == DType::BFloat16;
  const float max = bf16 ? kBFloat16Max : kHalfMax;
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = src[i];
    if (std::isfinite(v) && std::fabs(v) > max) {
      ++*overflowed;
      v = v > 0 ? max : -max;
    }
    dst[i] = bf16 ? float_to_bfloat16_bits(v) : float_to_half_bits(v);
  }
  return out;
}

// Ops left in float32 whatever the caller says (see the header).
bool must_stay_float32(const Node& n) {
  if (has_subgraph(n)) return true;
  if (n.domain == "com.ember") return false;
  if (!is_standard(n)) return true;
  const Schema* schema = find_schema(n.domain, n.op_type);
  return !schema || !schema->traits.float16_safe;
}

// How a node input takes part in the conversion.
enum class Slot { Follow, Float32, Any };

Slot slot_kind(const Node& n, size_t i) {
  if (!is_standard(n)) return Slot::Follow;
  const std::string& op = n.op_type;
  if (op == "Shape" || op == "Size") return Slot::Any;
  if ((op == "Resize" && (i == 1 || i == 2)) || (op == "Upsample" && i == 1) ||
      (op == "Dropout" && i == 1) || (op == "GridSample" && i == 1) || (op == "OneHot" && i < 2))
    return Slot::Float32;
  return Slot::Follow;
}

// Whether output `i` of a converted node keeps float32 (its type does not follow the
// converted inputs): LayerNormalization's statistics.
bool output_stays_float32(const Node& n, size_t i) {
  return is(n, "LayerNormalization") && i > 0;
}

DType dtype_attr(const Node& n, const char* name, DType fallback) {
  const Attribute* a = n.attributes.find(name);
  return a && a->kind == Attribute::Kind::Int ? static_cast<DType>(a->i) : fallback;
}

DType constant_dtype(const Node& n) {
  for (const auto& [name, a] : n.attributes.all()) {
    if (name == "value" || name == "sparse_value") return a.t.dtype();
    if (name == "value_float" || name == "value_floats") return DType::Float32;
    if (name == "value_int" || name == "value_ints") return DType::Int64;
    if (name == "value_string" || name == "value_strings") return DType::String;
  }
  return DType::Undefined;
}

// The dtypes of node's outputs in the float32 graph, from its input dtypes.
std::vector<DType> output_dtypes(const Node& n, const std::vector<DType>& in) {
  auto input = [&](size_t i) { return i < in.size() ? in[i] : DType::Undefined; };
  DType first = DType::Undefined;
  for (DType d : in)
    if (d != DType::Undefined) {
      first = d;
      break;
    }
  std::vector<DType> out(n.outputs.size(), first);
  auto all = [&](DType d) { std::fill(out.begin(), out.end(), d); };
  auto rest = [&](DType d) { std::fill(out.begin() + std::min<size_t>(1, out.size()), out.end(), d); };
  if (!is_standard(n)) return out;  // com.ember and custom ops: outputs follow the inputs
  const std::string& op = n.op_type;
  static const std::unordered_set<std::string> to_int64 = {"Shape", "Size", "NonZero", "ArgMax", "ArgMin",
                                                           "NonMaxSuppression"};
  static const std::unordered_set<std::string> to_bool = {
      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
      "IsNaN", "IsInf", "RegexFullMatch"};
  static const std::unordered_set<std::string> with_dtype = {"RandomNormalLike", "RandomUniformLike",
                                                             "EyeLike", "Bernoulli"};
  static const std::unordered_set<std::string> windows = {"HannWindow", "HammingWindow", "BlackmanWindow",
                                                          "MelWeightMatrix"};
  if (to_int64.count(op)) all(DType::Int64);
  else if (to_bool.count(op)) all(DType::Bool);
  else if (op == "Cast") all(dtype_attr(n, "to", DType::Undefined));
  else if (op == "CastLike") all(input(1));
  else if (op == "Where") all(input(1));
  else if (op == "OneHot") all(input(2));
  else if (op == "Constant") all(constant_dtype(n));
  else if (op == "ConstantOfShape") {
    const Attribute* v = n.attributes.find("value");
    all(v && v->kind == Attribute::Kind::Tensor ? v->t.dtype() : DType::Float32);
  } else if (op == "RandomNormal" || op == "RandomUniform") all(dtype_attr(n, "dtype", DType::Float32));
  else if (with_dtype.count(op)) all(dtype_attr(n, "dtype", first));
  else if (op == "Multinomial") all(dtype_attr(n, "dtype", DType::Int32));
  else if (windows.count(op)) all(dtype_attr(n, "output_datatype", DType::Float32));
  else if (op == "TopK" || op == "MaxPool" || op == "Unique") rest(DType::Int64);
  else if (op == "Dropout") rest(DType::Bool);
  else if (op == "LayerNormalization") rest(dtype_attr(n, "stash_type", DType::Float32));
  else if (op == "DequantizeLinear") all(input(1));
  else if (op == "QuantizeLinear") all(in.size() > 2 && input(2) != DType::Undefined ? input(2) : DType::UInt8);
  else if (op == "DynamicQuantizeLinear") out = {DType::UInt8, DType::Float32, DType::UInt8};
  else if (op == "QLinearConv" || op == "QLinearMatMul") all(input(7));
  else if (op == "ConvInteger" || op == "MatMulInteger") all(DType::Int32);
  else if (op == "StringNormalizer" || op == "StringConcat") all(DType::String);
  else if (op == "If" || op == "Loop" || op == "Scan") {
    // From the body's declared outputs (Loop's body also outputs its condition first).
    const char* attr = op == "If" ? "then_branch" : "body";
    const Attribute* a = n.attributes.find(attr);
    const size_t skip = op == "Loop" ? 1 : 0;
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = a && a->g && i + skip < a->g->outputs.size() ? a->g->outputs[i + skip].dtype : DType::Undefined;
  } else if (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
             op == "ConcatFromSequence") {
    all(DType::Undefined);  // sequences: not tensors this pass can follow
  }
  return out;
}

// Pointers to every slot inside `g` (recursively) that names `value`.
void slots_naming(Graph& g, const std::string& value, std::vector<std::string*>& slots) {
  for (Node& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == value) slots.push_back(&in);
    for (const auto& [_, a] : n.attributes.all()) {  // shared_ptr: the graphs are not const
      if (a.g) slots_naming(*a.g, value, slots);
      for (const auto& sub : a.graphs) slots_naming(*sub, value, slots);
    }
  }
  for (auto& out : g.outputs)
    if (out.name == value) slots.push_back(&out.name);
}

// Subgraphs may be shared between copies of a Graph (attributes hold shared_ptrs):
// copy every one this pass may edit, recursively, so the caller's other copies stay.
void own_subgraphs(Node& n) {
  std::vector<std::string> names;
  for (const auto& [name, a] : n.attributes.all())
    if (a.g || !a.graphs.empty()) names.push_back(name);
  for (const std::string& name : names) {
    Attribute copy = *n.attributes.find(name);
    if (copy.g) copy.g = std::make_shared<Graph>(*copy.g);
    for (auto& sub : copy.graphs) sub = std::make_shared<Graph>(*sub);
    if (copy.g)
      for (Node& inner : copy.g->nodes) own_subgraphs(inner);
    for (auto& sub : copy.graphs)
      for (Node& inner : sub->nodes) own_subgraphs(inner);
    n.attributes.set(name, std::move(copy));
  }
}

enum class Home { Float32, Reduced, Constant };  // Reduced: the target type

struct ValueUse {
  Home home = Home::Float32;
  int producer = -1;  // index of the producing node in the graph; -1: input or initializer
  std::vector<std::string*> producer_slots;  // the output slot(s) naming it (fused node + decomposition)
  std::vector<std::string*> need16, need32;  // input slots reading it, by the precision they need
  bool graph_output = false;
};

class Converter {
 public:
  Converter(Graph& graph, const std::function<bool(const Node&)>& keep, DType target)
      : g_(graph), keep_(keep), target_(target), suffix_(target == DType::BFloat16 ? "/bfloat16" : "/float16") {}

  Float16Summary run() {
    for (Node& n : g_.nodes) own_subgraphs(n);
    collect_names();
    infer_dtypes();
    keep_angles_float32();
    classify_and_collect();
    materialize();
    return summary_;
  }

 private:
  DType dtype_of(const std::string& name) const {
    auto it = dtype_.find(name);
    return it == dtype_.end() ? DType::Undefined : it->second;
  }
  bool is_float32(const std::string& name) const { return !name.empty() && dtype_of(name) == DType::Float32; }

  void collect_names() {
    std::set<std::string> reads;
    std::set<std::string> defined;
    collect_outer_reads(g_, reads, defined);
    names_.insert(reads.begin(), reads.end());
    names_.insert(defined.begin(), defined.end());
    for (const auto& o : g_.outputs) names_.insert(o.name);
  }

  std::string unique_name(const std::string& base) {
    std::string name = base;
    for (int k = 2; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  void infer_node(const Node& n) {
    std::vector<DType> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? DType::Undefined : dtype_of(name));
    const std::vector<DType> out = output_dtypes(n, in);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      auto declared = g_.value_info.find(n.outputs[i]);  // a declared dtype wins
      const bool known = declared != g_.value_info.end() && declared->second.dtype != DType::Undefined;
      dtype_[n.outputs[i]] = known ? declared->second.dtype : out[i];
    }
  }

  void infer_dtypes() {
    for (const auto& [name, t] : g_.initializers) dtype_[name] = t.dtype();
    for (const auto& in : g_.inputs) dtype_[in.name] = in.dtype;
    for (Node& n : g_.nodes) {
      infer_node(n);
      if (Graph* d = decomposition_of(n))
        for (const Node& part : d->nodes) infer_node(part);
    }
  }

  // Whether the node has a float32 value that matters to it.
  bool is_float_node(const Node& n) const {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (is_float32(n.inputs[i]) && slot_kind(n, i) != Slot::Any) return true;
    for (const auto& out : n.outputs)
      if (is_float32(out)) return true;
    return false;
  }

  // Sin and Cos of a value computed from integers and constants alone (rotary and
  // sinusoidal position embeddings: position x frequency) need the angle's absolute
  // precision, which a 16-bit float lacks for large angles: at position 128 a float16
  // angle is off by up to 0.06 rad, a bfloat16 one by 0.5. Such a Sin/Cos and every
  // node computing its angle stay float32 (positions and frequencies: small tensors, no
  // activations); their results, in [-1, 1], are cast where converted nodes read them.
  void keep_angles_float32() {
    std::unordered_set<std::string> from_constants;  // float32 values of integers and constants alone
    std::unordered_map<std::string, size_t> producer;
    for (const auto& [name, t] : g_.initializers)
      if (t.dtype() == DType::Float32) from_constants.insert(name);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      bool derived = !has_subgraph(n);
      for (size_t k = 0; k < n.inputs.size() && derived; ++k)
        derived = !is_float32(n.inputs[k]) || slot_kind(n, k) == Slot::Any || from_constants.count(n.inputs[k]);
      for (const auto& out : n.outputs) {
        producer[out] = i;
        if (derived && is_float32(out)) from_constants.insert(out);
      }
    }
    std::vector<size_t> pending;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if ((is(n, "Sin") || is(n, "Cos")) && from_constants.count(n.inputs[0])) pending.push_back(i);
    }
    while (!pending.empty()) {
      const size_t i = pending.back();
      pending.pop_back();
      if (!angle_nodes_.insert(i).second) continue;
      for (const auto& in : g_.nodes[i].inputs) {
        auto p = producer.find(in);
        if (p != producer.end() && from_constants.count(in)) pending.push_back(p->second);
      }
    }
  }

  // A node is converted when it has float32 values, nothing keeps it, and every
  // float32 output follows from a converted input or an attribute this pass rewrites.
  bool convertible(const Node& n, size_t index) const {
    if (must_stay_float32(n) || (keep_ && keep_(n)) || angle_nodes_.count(index)) return false;
    if (is_standard(n) && (n.op_type == "Cast" || n.op_type == "Constant" || n.op_type == "ConstantOfShape" ||
                           n.op_type == "RandomNormal" || n.op_type == "RandomUniform" ||
                           n.op_type == "EyeLike" || n.op_type == "RandomNormalLike" ||
                           n.op_type == "RandomUniformLike" || n.op_type == "Bernoulli" ||
                           n.op_type == "HannWindow" || n.op_type == "HammingWindow" ||
                           n.op_type == "BlackmanWindow" || n.op_type == "MelWeightMatrix"))
      return true;
    bool float_input = false;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      float_input = float_input || (is_float32(n.inputs[i]) && slot_kind(n, i) == Slot::Follow);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (is_float32(n.outputs[i]) && !output_stays_float32(n, i) && !float_input) return false;
    return true;
  }

  ValueUse& use(const std::string& name) {
    auto [it, added] = uses_.try_emplace(name);
    if (added) order_.push_back(name);
    return it->second;
  }

  // The input slots of `n` (and of its decomposition, which reads the same values)
  // and its output slots, for a node converted or kept as a whole.
  void collect_node(Node& n, int index, bool converted) {
    std::vector<Node*> parts = {&n};
    std::unordered_set<std::string> internal;  // values made inside the decomposition
    if (Graph* d = decomposition_of(n))
      for (Node& p : d->nodes) parts.push_back(&p);
    for (size_t k = 1; k < parts.size(); ++k)
      for (const auto& out : parts[k]->outputs) internal.insert(out);
    for (const auto& out : n.outputs) internal.erase(out);
    for (Node* p : parts) {
      for (size_t i = 0; i < p->inputs.size(); ++i) {
        std::string& in = p->inputs[i];
        if (!is_float32(in) || internal.count(in)) continue;
        const Slot kind = slot_kind(*p, i);
        if (kind == Slot::Any) continue;
        (converted && kind == Slot::Follow ? use(in).need16 : use(in).need32).push_back(&in);
      }
      for (size_t i = 0; i < p->outputs.size(); ++i) {
        std::string& out = p->outputs[i];
        if (!is_float32(out) || internal.count(out)) continue;
        ValueUse& u = use(out);
        u.home = converted && !output_stays_float32(*p, i) ? Home::Reduced : Home::Float32;
        u.producer = index;
        u.producer_slots.push_back(&out);
      }
      if (converted) convert_attributes(*p);
    }
    // Subgraph bodies stay float32: the outer float values they read are read as such.
    if (!has_subgraph(n)) return;
    std::set<std::string> reads, defined;
    for (const auto& [name, a] : n.attributes.all()) {
      if (name == kDecompositionAttribute) continue;
      if (a.g) collect_outer_reads(*a.g, reads, defined);
      for (const auto& sub : a.graphs) collect_outer_reads(*sub, reads, defined);
    }
    for (const std::string& value : reads) {
      if (defined.count(value) || !is_float32(value)) continue;
      std::vector<std::string*> slots;
      for (const auto& [name, a] : n.attributes.all()) {
        if (name == kDecompositionAttribute) continue;
        if (a.g) slots_naming(*a.g, value, slots);
        for (const auto& sub : a.graphs) slots_naming(*sub, value, slots);
      }
      auto& need = use(value).need32;
      need.insert(need.end(), slots.begin(), slots.end());
    }
  }

  void classify_and_collect() {
    for (const auto& in : g_.inputs)
      if (in.dtype == DType::Float32) use(in.name).home = Home::Float32;
    for (const auto& [name, t] : g_.initializers)
      if (t.dtype() == DType::Float32 && !uses_.count(name)) use(name).home = Home::Constant;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& n = g_.nodes[i];
      // A node with a subgraph may read outer float values without having any itself.
      if (!is_float_node(n) && !has_subgraph(n)) continue;
      const bool converted = convertible(n, i);
      if (is_float_node(n)) ++(converted ? summary_.converted_nodes : summary_.kept_nodes);
      collect_node(n, static_cast<int>(i), converted);
    }
    for (const auto& out : g_.outputs)
      if (uses_.count(out.name)) uses_[out.name].graph_output = true;
  }

  void convert_attributes(Node& n) {
    if (!is_standard(n)) return;
    const std::string& op = n.op_type;
    if (op == "Cast") {
      if (n.attributes.get_int_or("to", 0) == static_cast<int64_t>(DType::Float32))
        n.attributes.set_int("to", static_cast<int64_t>(target_));
    } else if (op == "ConstantOfShape") {
      const Attribute* v = n.attributes.find("value");
      if (!v) {
        Tensor zero(target_, {1});
        n.attributes.set_tensor("value", zero);
      } else if (v->kind == Attribute::Kind::Tensor && v->t.dtype() == DType::Float32) {
        n.attributes.set_tensor("value", to_reduced(v->t, target_, &summary_.overflowed_weights));
      }
    } else if (op == "Constant") {
      convert_constant(n);
    } else if (op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" ||
               op == "RandomUniformLike" || op == "EyeLike" || op == "Bernoulli") {
      const bool explicit_dtype = op == "RandomNormal" || op == "RandomUniform";
      if (dtype_attr(n, "dtype", explicit_dtype ? DType::Float32 : DType::Undefined) == DType::Float32)
        n.attributes.set_int("dtype", static_cast<int64_t>(target_));
    } else if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" || op == "MelWeightMatrix") {
      if (dtype_attr(n, "output_datatype", DType::Float32) == DType::Float32)
        n.attributes.set_int("output_datatype", static_cast<int64_t>(target_));
    }
  }

  void convert_constant(Node& n) {
    Tensor value;
    if (const Attribute* a = n.attributes.find("value"); a && a->kind == Attribute::Kind::Tensor) {
      if (a->t.dtype() != DType::Float32) return;
      value = a->t;
    } else if (const Attribute* f = n.attributes.find("value_float")) {
      value = Tensor(DType::Float32, {});
      *value.data_as<float>() = f->f;
      n.attributes.erase("value_float");
    } else if (const Attribute* fs = n.attributes.find("value_floats")) {
      value = Tensor(DType::Float32, {static_cast<int64_t>(fs->floats.size())});
      std::copy(fs->floats.begin(), fs->floats.end(), value.data_as<float>());
      n.attributes.erase("value_floats");
    } else {
      return;
    }
    n.attributes.set_tensor("value", to_reduced(value, target_, &summary_.overflowed_weights));
  }

  Node make_cast(const std::string& from, const std::string& to, DType dtype) {
    Node c;
    c.name = unique_name(to + "/cast");
    c.op_type = "Cast";
    c.inputs = {from};
    c.outputs = {to};
    c.attributes.set_int("to", static_cast<int64_t>(dtype));
    ++summary_.casts_inserted;
    return c;
  }

  static void rename(const std::vector<std::string*>& slots, const std::string& name) {
    for (std::string* s : slots) *s = name;
  }

  // Casts are placed right after the node making their input (first for graph inputs
  // and initializers), so the order stays topological without sorting again.
  void materialize() {
    std::vector<std::vector<Node>> after(g_.nodes.size() + 1);  // [0]: before every node
    for (const std::string& name : order_) {
      ValueUse& u = uses_[name];
      std::vector<Node>& casts = after[u.producer + 1];
      switch (u.home) {
        case Home::Reduced:
          if (u.graph_output) {  // the interface keeps the name, in float32
            const std::string half = unique_name(name + suffix_);
            rename(u.producer_slots, half);
            rename(u.need16, half);
            casts.push_back(make_cast(half, name, DType::Float32));
            rename(u.need32, name);
            set_declared(half, target_);
          } else {
            set_declared(name, target_);
            if (u.need32.empty()) break;
            const std::string full = unique_name(name + "/float32");
            casts.push_back(make_cast(name, full, DType::Float32));
            rename(u.need32, full);
          }
          break;
        case Home::Float32:
          if (u.need16.empty()) break;
          {
            const std::string half = unique_name(name + suffix_);
            casts.push_back(make_cast(name, half, target_));
            rename(u.need16, half);
          }
          break;
        case Home::Constant:
          if (u.need16.empty()) break;
          {
            Tensor half = to_reduced(g_.initializers.at(name), target_, &summary_.overflowed_weights);
            summary_.converted_weights += half.numel();
            if (!u.need32.empty() || u.graph_output) {  // float32 readers keep the original
              const std::string copy = unique_name(name + suffix_);
              rename(u.need16, copy);
              g_.initializers[copy] = std::move(half);
            } else {
              g_.initializers[name] = std::move(half);
            }
          }
          break;
      }
    }
    if (!summary_.casts_inserted) return;
    std::vector<Node> nodes;
    nodes.reserve(g_.nodes.size() + summary_.casts_inserted);
    for (Node& c : after[0]) nodes.push_back(std::move(c));
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      nodes.push_back(std::move(g_.nodes[i]));
      for (Node& c : after[i + 1]) nodes.push_back(std::move(c));
    }
    g_.nodes = std::move(nodes);
  }

  void set_declared(const std::string& name, DType dtype) {
    auto it = g_.value_info.find(name);
    if (it != g_.value_info.end()) it->second.dtype = dtype;
  }

  Graph& g_;
  const std::function<bool(const Node&)>& keep_;
  std::unordered_map<std::string, DType> dtype_;
  std::unordered_map<std::string, ValueUse> uses_;
  std::vector<std::string> order_;  // uses_ keys in first-seen order: deterministic output
  std::unordered_set<std::string> names_;
  std::unordered_set<size_t> angle_nodes_;  // Sin/Cos of positions and their angles' nodes: float32
  DType target_;        // Float16 or BFloat16
  std::string suffix_;  // of the names of converted copies and casts
  Float16Summary summary_;
};

}  // namespace

Float16Summary convert_to_float16(Graph& graph, const std::function<bool(const Node&)>& keep_float32) {
  return convert_to_reduced_float(graph, DType::Float16, keep_float32);
}

Float16Summary convert_to_reduced_float(Graph& graph, DType target,
                                        const std::function<bool(const Node&)>& keep_float32) {
  assert(target == DType::Float16 || target == DType::BFloat16);
  return Converter(graph, keep_float32, target).run();
}

}  // namespace ember
