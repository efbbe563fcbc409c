// Shared by the CUDA movement tests: test cases (node, opset, inputs, which inputs are
// plan-time constants) used both by the GPU tests (CUDA kernel vs CPU kernel) and by the
// host emulation tests (the kernels' index arithmetic run on the host vs the CPU
// kernel), and the helpers both need.
#pragma once

#include "cuda_harness.h"
#include "ops/evaluate.h"
#include "ops/kernel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace ember::test {

struct MoveCase {
  std::string label;
  Node node;
  int64_t opset = 21;
  std::vector<Tensor> inputs;  // an empty Tensor stands for an absent optional input
  std::vector<int> plan_time;  // inputs the factory may read at plan time

  std::vector<const Tensor*> ptrs() const {
    std::vector<const Tensor*> p;
    for (const Tensor& t : inputs) p.push_back(t.empty() ? nullptr : &t);
    return p;
  }
};

inline Tensor int_tensor(const std::vector<int64_t>& values, Shape shape, DType dtype = DType::Int64) {
  Tensor wide(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), wide.data_as<int64_t>());
  return cast_to(wide, dtype);
}
inline Tensor int_vector(const std::vector<int64_t>& values, DType dtype = DType::Int64) {
  return int_tensor(values, {static_cast<int64_t>(values.size())}, dtype);
}
inline Tensor float_vector(const std::vector<float>& values) {
  Tensor t(DType::Float32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

// The KernelInit the planner would build for a case (no device context, as when a
// factory decides before touching the GPU). Output types are inferred from every input
// value (as when the node runs eagerly); the factory sees only the plan-time ones.
struct InitFor {
  explicit InitFor(const MoveCase& c) : node(c.node) {
    const auto inputs = c.ptrs();
    known.assign(inputs.size(), nullptr);
    for (const Tensor* in : inputs)
      types.push_back(in ? TensorType{in->dtype(), in->shape()} : TensorType{});
    for (int i : c.plan_time) known[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)];
    outputs = infer_node(node, c.opset, types, inputs);
    init = std::make_unique<KernelInit>(KernelInit{node, c.opset, Device{DeviceKind::Cuda, 0}, types, known, outputs});
  }
  Node node;
  std::vector<TensorType> types;
  std::vector<const Tensor*> known;
  std::vector<TensorType> outputs;
  std::unique_ptr<KernelInit> init;
};

// Why every CUDA kernel of the case's op declines it ("" when one takes it). Runs the
// factories with no device context: they must decide before touching the GPU.
inline std::string cuda_declines(const MoveCase& c) {
  InitFor f(c);
  std::string reasons;
  for (const KernelEntry* e : find_kernels(c.node.domain, c.node.op_type, c.opset, DeviceKind::Cuda)) {
    std::string why;
    if (e->factory(*f.init, &why)) return "";
    reasons += why + ";";
  }
  return reasons.empty() ? "no CUDA kernel is registered" : reasons;
}

// Byte-for-byte equality (movement ops are exact), naming the first differing element.
inline void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const size_t elem = want.numel() ? want.nbytes() / static_cast<size_t>(want.numel()) : 1;
  const auto* g = static_cast<const uint8_t*>(got.data());
  const auto* w = static_cast<const uint8_t*>(want.data());
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::memcmp(g + i * elem, w + i * elem, elem)) {
      ADD_FAILURE() << what << ": element " << i << " of " << want.numel() << " differs";
      return;
    }
}

inline Attributes with_ints(const std::string& name, std::vector<int64_t> v, Attributes a = {}) {
  a.set_ints(name, std::move(v));
  return a;
}
inline Attributes with_int(const std::string& name, int64_t v, Attributes a = {}) {
  a.set_int(name, v);
  return a;
}
inline Attributes with_string(const std::string& name, std::string v, Attributes a = {}) {
  a.set_string(name, std::move(v));
  return a;
}

// dtypes of every element size the movement kernels take.
inline const std::vector<DType>& movement_dtypes() {
  static const std::vector<DType> t = {DType::Float32, DType::Float16, DType::Int64, DType::Bool, DType::Int8};
  return t;
}

inline std::string case_label(const std::string& op, const Shape& shape, DType t, const std::string& extra = "") {
  return op + " " + dtype_name(t) + shape_to_string(shape) + (extra.empty() ? "" : " " + extra);
}

// ---- Case lists (shared by the GPU and the emulation tests) ---------------------------

inline std::vector<MoveCase> transpose_cases() {
  std::mt19937 rng(11);
  std::vector<MoveCase> cases;
  struct P {
    Shape shape;
    std::vector<int64_t> perm;  // empty: the default (reversed dims)
  };
  std::vector<P> ps = {
      {{1}, {0}},           {{7}, {}},           {{33, 65}, {1, 0}},      {{1, 7}, {1, 0}},
      {{64, 64}, {1, 0}},   {{9, 40}, {1, 0}},   {{2, 3, 257}, {0, 2, 1}}, {{2, 3, 257}, {2, 1, 0}},
      {{2, 3, 257}, {1, 0, 2}}, {{2, 33, 40}, {0, 2, 1}}, {{2, 9, 4, 16}, {0, 2, 1, 3}},
      {{2, 7, 3, 5}, {0, 2, 1, 3}}, {{1, 37, 12, 64}, {0, 2, 1, 3}}, {{2, 12, 37, 64}, {0, 2, 1, 3}},
      {{2, 3, 20, 9}, {0, 1, 3, 2}}, {{2, 3, 5, 7}, {3, 0, 2, 1}}, {{3, 5, 7}, {-1, 0, 1}},
      {{2, 3, 4, 5, 6, 7}, {5, 3, 1, 0, 2, 4}},
  };
  std::vector<int64_t> p3 = {0, 1, 2};
  do ps.push_back({{3, 5, 7}, p3});
  while (std::next_permutation(p3.begin(), p3.end()));
  for (const P& p : ps) {
    for (DType t : movement_dtypes()) {
      MoveCase c;
      c.label = case_label("Transpose", p.shape, t, "perm " + shape_to_string(p.perm));
      c.node = make_node("Transpose", 1, 1, p.perm.empty() ? Attributes{} : with_ints("perm", p.perm));
      c.inputs.push_back(random_tensor(t, p.shape, -100, 100, rng));
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

inline std::vector<MoveCase> slice_cases() {
  std::mt19937 rng(12);
  std::vector<MoveCase> cases;
  struct P {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;  // axes/steps empty: absent
  };
  const int64_t big = INT64_MAX;
  const std::vector<P> ps = {
      {{7}, {1}, {5}, {}, {}},
      {{7}, {-1}, {-big}, {0}, {-1}},  // reversed
      {{7}, {6}, {0}, {0}, {-2}},
      {{1}, {0}, {1}, {}, {}},
      {{2, 3, 257}, {0, 1, 3}, {2, 3, 250}, {0, 1, 2}, {1, 1, 2}},
      {{2, 3, 257}, {-1, 256}, {-big, -big}, {1, -1}, {-1, -3}},
      {{2, 3, 257}, {-3, 200}, {0, 3}, {1, -1}, {-1, -7}},  // empty along dim 1
      {{2, 3, 257}, {0}, {big}, {-1}, {4}},
      {{3, 5, 7}, {1, 4, 6}, {3, -big, -big}, {0, 1, 2}, {1, -1, -1}},
      {{3, 5, 7}, {4}, {1}, {1}, {1}},  // empty
      {{4, 16, 32}, {0, 8}, {4, 32}, {1, 2}, {1, 1}},  // contiguous rows of 24 elements
  };
  for (const P& p : ps) {
    for (DType t : movement_dtypes()) {
      MoveCase c;
      c.label = case_label("Slice", p.shape, t,
                           "starts " + shape_to_string(p.starts) + " steps " + shape_to_string(p.steps));
      c.node = make_node("Slice", 5);
      c.inputs = {random_tensor(t, p.shape, -100, 100, rng), int_vector(p.starts), int_vector(p.ends),
                  p.axes.empty() ? Tensor() : int_vector(p.axes), p.steps.empty() ? Tensor() : int_vector(p.steps)};
      c.plan_time = {1, 2, 3, 4};
      cases.push_back(std::move(c));
    }
  }
  {  // opset 1: attributes; int32 starts at opset 13
    MoveCase c;
    c.label = "Slice opset 1";
    Attributes a = with_ints("starts", {1, -4});
    a.set_ints("ends", {3, 1000});
    a.set_ints("axes", {0, 2});
    c.node = make_node("Slice", 1, 1, a);
    c.opset = 1;
    c.inputs = {random_tensor(DType::Float32, {3, 5, 7}, -1, 1, rng)};
    cases.push_back(std::move(c));
    MoveCase d;
    d.label = "Slice int32 starts";
    d.node = make_node("Slice", 5);
    d.opset = 13;
    d.inputs = {random_tensor(DType::Float16, {3, 5, 7}, -1, 1, rng), int_vector({-1, 1}, DType::Int32),
                int_vector({-6, 5}, DType::Int32), int_vector({-2, 2}, DType::Int32),
                int_vector({-1, 3}, DType::Int32)};
    d.plan_time = {1, 2, 3, 4};
    cases.push_back(std::move(d));
  }
  return cases;
}

inline std::vector<MoveCase> expand_tile_cases() {
  std::mt19937 rng(13);
  std::vector<MoveCase> cases;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> expands = {
      {{1}, {7}}, {{7}, {3, 7}}, {{3, 1, 5}, {2, 3, 4, 5}}, {{2, 3, 257}, {2, 3, 257}}, {{3, 1}, {1, 4}},
      {{1, 1, 64}, {2, 3, 1}}, {{5, 1, 1}, {5, 3, 8}}};
  for (const auto& [shape, to] : expands) {
    for (DType t : movement_dtypes()) {
      MoveCase c;
      c.label = case_label("Expand", shape, t, "to " + shape_to_string(to));
      c.node = make_node("Expand", 2);
      c.inputs = {random_tensor(t, shape, -100, 100, rng), int_vector(to)};
      c.plan_time = {1};
      cases.push_back(std::move(c));
    }
  }
  const std::vector<std::pair<Shape, std::vector<int64_t>>> tiles = {
      {{1}, {5}}, {{7}, {3}}, {{2, 3, 5}, {2, 1, 3}}, {{2, 3, 257}, {1, 2, 1}}, {{2, 3, 4, 5}, {2, 2, 2, 2}},
      {{3, 5, 7}, {1, 1, 1}}, {{4, 8}, {3, 2}}};
  for (const auto& [shape, repeats] : tiles) {
    for (DType t : movement_dtypes()) {
      MoveCase c;
      c.label = case_label("Tile", shape, t, "repeats " + shape_to_string(repeats));
      c.node = make_node("Tile", 2);
      c.inputs = {random_tensor(t, shape, -100, 100, rng), int_vector(repeats)};
      c.plan_time = {1};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

inline std::vector<MoveCase> depth_space_cases() {
  std::mt19937 rng(14);
  std::vector<MoveCase> cases;
  struct P {
    const char* op;
    Shape shape;
    int64_t block;
    const char* mode;
  };
  const std::vector<P> ps = {{"DepthToSpace", {1, 8, 3, 5}, 2, "DCR"},  {"DepthToSpace", {1, 8, 3, 5}, 2, "CRD"},
                             {"DepthToSpace", {2, 18, 4, 3}, 3, "DCR"}, {"DepthToSpace", {2, 18, 4, 3}, 3, "CRD"},
                             {"DepthToSpace", {1, 64, 9, 9}, 4, "DCR"}, {"SpaceToDepth", {1, 2, 6, 4}, 2, "DCR"},
                             {"SpaceToDepth", {2, 3, 9, 12}, 3, "DCR"}, {"SpaceToDepth", {1, 4, 64, 64}, 2, "DCR"}};
  for (const P& p : ps) {
    for (DType t : {DType::Float32, DType::Float16, DType::Int64}) {
      MoveCase c;
      c.label = case_label(p.op, p.shape, t, std::string(p.mode) + " b" + std::to_string(p.block));
      Attributes a = with_int("blocksize", p.block);
      if (std::string(p.op) == "DepthToSpace") a.set_string("mode", p.mode);
      c.node = make_node(p.op, 1, 1, a);
      c.opset = 13;
      c.inputs = {random_tensor(t, p.shape, -100, 100, rng)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

inline std::vector<MoveCase> concat_split_cases() {
  std::mt19937 rng(15);
  std::vector<MoveCase> cases;
  // Concat: (shape of input 0, axis, lengths along the axis)
  struct C {
    Shape shape;
    int64_t axis;
    std::vector<int64_t> lengths;
  };
  std::vector<C> cs = {{{1}, 0, {1, 1}},           {{7}, 0, {7, 3, 1}},          {{2, 3, 257}, 1, {3, 1, 2}},
                       {{2, 3, 257}, -1, {257, 4}}, {{2, 3, 257}, 0, {2, 5}},      {{3, 5, 7}, 2, {7, 0, 2}},
                       {{4, 6, 8}, 1, {6, 2, 6}},   {{2, 4, 8}, -2, {4, 4, 4, 4}}};
  std::vector<int64_t> many(40);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 1 + static_cast<int64_t>(i % 3);
  cs.push_back({{3, 1, 5}, 1, many});  // more inputs than one launch takes
  for (const C& cc : cs) {
    for (DType t : movement_dtypes()) {
      MoveCase c;
      c.label = case_label("Concat", cc.shape, t,
                           "axis " + std::to_string(cc.axis) + " x" + std::to_string(cc.lengths.size()));
      c.node = make_node("Concat", cc.lengths.size(), 1, with_int("axis", cc.axis));
      c.opset = 13;
      const int64_t axis = cc.axis < 0 ? cc.axis + static_cast<int64_t>(cc.shape.size()) : cc.axis;
      for (int64_t len : cc.lengths) {
        Shape s = cc.shape;
        s[axis] = len;
        c.inputs.push_back(random_tensor(t, s, -100, 100, rng));
      }
      cases.push_back(std::move(c));
    }
  }
  // Split: attribute split (opset 11), input split (13), num_outputs (18, uneven).
  for (DType t : movement_dtypes()) {
    MoveCase a;
    a.label = case_label("Split", {2, 3, 257}, t, "attr");
    a.node = make_node("Split", 1, 3, with_ints("split", {100, 150, 7}, with_int("axis", -1)));
    a.opset = 11;
    a.inputs = {random_tensor(t, {2, 3, 257}, -100, 100, rng)};
    cases.push_back(std::move(a));
    MoveCase b;
    b.label = case_label("Split", {6, 5, 7}, t, "input");
    b.node = make_node("Split", 2, 3, with_int("axis", 0));
    b.opset = 13;
    b.inputs = {random_tensor(t, {6, 5, 7}, -100, 100, rng), int_vector({1, 0, 5})};
    b.plan_time = {1};
    cases.push_back(std::move(b));
    MoveCase c;
    c.label = case_label("Split", {3, 7}, t, "num_outputs");
    c.node = make_node("Split", 1, 3, with_int("num_outputs", 3, with_int("axis", 1)));
    c.opset = 18;
    c.inputs = {random_tensor(t, {3, 7}, -100, 100, rng)};
    cases.push_back(std::move(c));
    MoveCase d;
    d.label = case_label("Split", {8, 16}, t, "even");
    d.node = make_node("Split", 1, 2, with_int("axis", 1));
    d.opset = 13;
    d.inputs = {random_tensor(t, {8, 16}, -100, 100, rng)};
    cases.push_back(std::move(d));
  }
  return cases;
}

// Indices in [-n, n) (negative ones included), as dtype.
inline Tensor random_indices(const Shape& shape, int64_t n, DType dtype, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> pick(-n, n - 1);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = pick(rng);
  return int_tensor(v, shape, dtype);
}

inline std::vector<MoveCase> gather_cases() {
  std::mt19937 rng(16);
  std::vector<MoveCase> cases;
  struct G {
    Shape data;
    int64_t axis;
    Shape indices;
  };
  const std::vector<G> gs = {{{7}, 0, {}},           {{7}, 0, {9}},         {{5, 7}, 0, {2, 3}},
                             {{5, 7}, 1, {4}},       {{5, 7}, -1, {}},      {{2, 3, 257}, 1, {5}},
                             {{2, 3, 257}, 2, {2, 2}}, {{30, 64}, 0, {3, 11}}, {{1}, 0, {3}}};
  for (const G& g : gs) {
    for (DType t : movement_dtypes()) {
      for (DType it : {DType::Int64, DType::Int32}) {
        MoveCase c;
        c.label = case_label("Gather", g.data, t, "axis " + std::to_string(g.axis) + " " + dtype_name(it) +
                                                      shape_to_string(g.indices));
        c.node = make_node("Gather", 2, 1, with_int("axis", g.axis));
        c.opset = 13;
        const int64_t axis = g.axis < 0 ? g.axis + static_cast<int64_t>(g.data.size()) : g.axis;
        c.inputs = {random_tensor(t, g.data, -100, 100, rng), random_indices(g.indices, g.data[axis], it, rng)};
        cases.push_back(std::move(c));
      }
    }
  }
  // GatherElements: indices of the data's rank, each dim at most the data's.
  const std::vector<G> es = {{{7}, 0, {5}},         {{3, 5, 7}, 0, {2, 5, 7}}, {{3, 5, 7}, 1, {3, 4, 6}},
                             {{3, 5, 7}, 2, {3, 5, 9}}, {{3, 5, 7}, -1, {1, 2, 3}}, {{2, 3, 257}, 2, {2, 3, 100}}};
  for (const G& g : es) {
    for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
      for (DType it : {DType::Int64, DType::Int32}) {
        MoveCase c;
        c.label = case_label("GatherElements", g.data, t, "axis " + std::to_string(g.axis) + " " + dtype_name(it));
        c.node = make_node("GatherElements", 2, 1, with_int("axis", g.axis));
        c.opset = 13;
        const int64_t axis = g.axis < 0 ? g.axis + static_cast<int64_t>(g.data.size()) : g.axis;
        c.inputs = {random_tensor(t, g.data, -100, 100, rng), random_indices(g.indices, g.data[axis], it, rng)};
        cases.push_back(std::move(c));
      }
    }
  }
  // GatherND: (data, indices shape, batch_dims)
  struct N {
    Shape data, indices;
    int64_t batch_dims;
  };
  const std::vector<N> ns = {{{5, 7}, {3, 2}, 0},         {{5, 7}, {4, 1}, 0},       {{2, 3, 257}, {2}, 0},
                             {{2, 3, 257}, {2, 4, 1}, 1}, {{2, 3, 8, 5}, {2, 3, 2, 1}, 2}, {{4, 6, 8}, {3, 3}, 0}};
  for (const N& n : ns) {
    for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
      MoveCase c;
      c.label = case_label("GatherND", n.data, t,
                           "indices " + shape_to_string(n.indices) + " b" + std::to_string(n.batch_dims));
      c.node = make_node("GatherND", 2, 1, with_int("batch_dims", n.batch_dims));
      c.opset = 13;
      // Each index column j bounds by data[batch_dims + j].
      const int64_t k = n.indices.back();
      std::vector<int64_t> v(static_cast<size_t>(shape_numel(n.indices)));
      for (size_t i = 0; i < v.size(); ++i) {
        const int64_t len = n.data[n.batch_dims + static_cast<int64_t>(i) % k];
        v[i] = std::uniform_int_distribution<int64_t>(-len, len - 1)(rng);
      }
      c.inputs = {random_tensor(t, n.data, -100, 100, rng), int_tensor(v, n.indices)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

inline std::vector<MoveCase> scatter_cases() {
  std::mt19937 rng(17);
  std::vector<MoveCase> cases;
  // ScatterElements: along the axis each line gets distinct indices (the first m of a
  // shuffled 0..n-1, some written negative), so the result is defined.
  struct E {
    Shape data, indices;
    int64_t axis;
  };
  const std::vector<E> es = {{{7}, {4}, 0},
                             {{3, 5, 7}, {3, 5, 7}, 1},
                             {{3, 5, 7}, {2, 3, 4}, 2},
                             {{3, 5, 7}, {3, 2, 7}, -3},
                             {{2, 3, 257}, {2, 3, 100}, -1}};
  for (const E& e : es) {
    for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
      for (DType it : {DType::Int64, DType::Int32}) {
        const int64_t rank = static_cast<int64_t>(e.data.size());
        const int64_t axis = e.axis < 0 ? e.axis + rank : e.axis;
        const int64_t n = e.data[axis], m = e.indices[axis];
        std::vector<int64_t> v(static_cast<size_t>(shape_numel(e.indices)));
        int64_t inner = 1;
        for (int64_t d = axis + 1; d < rank; ++d) inner *= e.indices[d];
        const int64_t outer = static_cast<int64_t>(v.size()) / (m * inner);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t in = 0; in < inner; ++in) {
            std::vector<int64_t> perm(static_cast<size_t>(n));
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin(), perm.end(), rng);
            for (int64_t j = 0; j < m; ++j) {
              const int64_t idx = perm[static_cast<size_t>(j)];
              v[static_cast<size_t>((o * m + j) * inner + in)] = (rng() & 1) ? idx - n : idx;
            }
          }
        MoveCase c;
        c.label = case_label("ScatterElements", e.data, t, "axis " + std::to_string(e.axis) + " " + dtype_name(it));
        c.node = make_node("ScatterElements", 3, 1, with_int("axis", e.axis));
        c.opset = 18;
        c.inputs = {random_tensor(t, e.data, -100, 100, rng), int_tensor(v, e.indices, it),
                    random_tensor(t, e.indices, -100, 100, rng)};
        cases.push_back(std::move(c));
      }
    }
  }
  // ScatterND: distinct tuples.
  struct N {
    Shape data, indices;
  };
  const std::vector<N> ns = {
      {{7}, {3, 1}}, {{5, 7}, {4, 2}}, {{5, 7}, {3, 1}}, {{2, 3, 257}, {2, 2}}, {{4, 6, 8}, {2, 2, 1}}};
  for (const N& n : ns) {
    for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
      const int64_t k = n.indices.back();
      int64_t space = 1;
      for (int64_t j = 0; j < k; ++j) space *= n.data[j];
      std::vector<int64_t> flat(static_cast<size_t>(space));
      std::iota(flat.begin(), flat.end(), 0);
      std::shuffle(flat.begin(), flat.end(), rng);
      const int64_t tuples = shape_numel(n.indices) / k;
      std::vector<int64_t> v;
      for (int64_t q = 0; q < tuples; ++q) {
        std::vector<int64_t> tuple(static_cast<size_t>(k));
        for (int64_t j = k - 1, rest = flat[static_cast<size_t>(q)]; j >= 0; --j) {
          tuple[static_cast<size_t>(j)] = rest % n.data[j];
          rest /= n.data[j];
          if (rng() & 1) tuple[static_cast<size_t>(j)] -= n.data[j];
        }
        v.insert(v.end(), tuple.begin(), tuple.end());
      }
      Shape updates(n.indices.begin(), n.indices.end() - 1);
      updates.insert(updates.end(), n.data.begin() + k, n.data.end());
      MoveCase c;
      c.label = case_label("ScatterND", n.data, t, "indices " + shape_to_string(n.indices));
      c.node = make_node("ScatterND", 3);
      c.opset = 18;
      c.inputs = {random_tensor(t, n.data, -100, 100, rng), int_tensor(v, n.indices),
                  random_tensor(t, updates, -100, 100, rng)};
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

inline std::vector<MoveCase> pad_cases() {
  std::mt19937 rng(18);
  std::vector<MoveCase> cases;
  struct P {
    Shape shape;
    std::vector<int64_t> pads;
  };
  const std::vector<P> ps = {{{7}, {2, 3}},
                             {{7}, {6, 6}},
                             {{1}, {0, 2}},
                             {{3, 5, 7}, {1, 0, 2, 2, 3, 1}},
                             {{3, 5, 7}, {0, -1, 2, 1, 2, -3}},  // negative pads crop
                             {{2, 3, 257}, {0, 0, 5, 0, 0, 9}},
                             {{1, 3, 7, 9}, {0, 0, 3, 4, 0, 0, 2, 5}}};
  for (const P& p : ps) {
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
      // {7} padded by 6 reflects over the whole length; the CUDA kernel mirrors on
      // periodically beyond, as the CPU kernel does (ONNX leaves that undefined).
      for (DType t : movement_dtypes()) {
        MoveCase c;
        c.label = case_label("Pad", p.shape, t, std::string(mode) + " pads " + shape_to_string(p.pads));
        c.node = make_node("Pad", 3, 1, with_string("mode", mode));
        c.opset = 19;
        c.inputs = {random_tensor(t, p.shape, -100, 100, rng), int_vector(p.pads),
                    std::string(mode) == "constant" ? random_tensor(t, {}, -100, 100, rng) : Tensor()};
        c.plan_time = {1};
        cases.push_back(std::move(c));
      }
    }
  }
  {  // opset 2: attributes and a float value; opset 18: axes; opset 11: no constant_value
    MoveCase a;
    a.label = "Pad opset 2 value";
    a.node = make_node("Pad", 1, 1, with_ints("pads", {1, 0, 2, 3}, Attributes{}));
    a.node.attributes.set_float("value", 1.5f);
    a.opset = 2;
    a.inputs = {random_tensor(DType::Float32, {3, 4}, -1, 1, rng)};
    cases.push_back(std::move(a));
    MoveCase b;
    b.label = "Pad opset 18 axes";
    b.node = make_node("Pad", 4, 1, with_string("mode", "edge"));
    b.opset = 18;
    b.inputs = {random_tensor(DType::Float16, {2, 3, 5}, -1, 1, rng), int_vector({2, 1, 0, 3}), Tensor(),
                int_vector({-1, 1})};
    b.plan_time = {1, 3};
    cases.push_back(std::move(b));
    MoveCase d;
    d.label = "Pad opset 11 zero fill";
    d.node = make_node("Pad", 2);
    d.opset = 11;
    d.inputs = {random_tensor(DType::Int64, {4, 5}, -100, 100, rng), int_vector({1, 2, 3, 4})};
    d.plan_time = {1};
    cases.push_back(std::move(d));
  }
  return cases;
}

// Resize on 4-D NCHW (and a 3-D and a 2-D input), every supported mode, up and down,
// from scales and from sizes. Linear cases are float32 (CPU reference in float64).
inline std::vector<MoveCase> resize_cases(bool linear, DType dtype) {
  std::mt19937 rng(19);
  std::vector<MoveCase> cases;
  const std::vector<std::string> coords = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
  const std::vector<std::string> nearest = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  struct T {
    Shape in;
    std::vector<float> scales;  // empty: sizes
    std::vector<int64_t> sizes;
  };
  const std::vector<T> targets = {{{1, 3, 7, 9}, {}, {1, 3, 14, 20}}, {{1, 3, 7, 9}, {}, {1, 3, 4, 5}},
                                  {{1, 3, 7, 9}, {1, 1, 2, 2}, {}},    {{1, 3, 7, 9}, {1, 1, 0.5f, 0.6f}, {}},
                                  {{2, 2, 5, 4}, {1, 1, 1.7f, 3}, {}}, {{1, 3, 7, 9}, {}, {1, 3, 7, 1}},
                                  {{2, 5, 9}, {}, {2, 5, 4}},          {{6, 9}, {}, {12, 3}}};
  for (const T& tg : targets) {
    for (const std::string& coord : coords) {
      for (const std::string& nm : linear ? std::vector<std::string>{"round_prefer_floor"} : nearest) {
        Attributes a = with_string("mode", linear ? "linear" : "nearest");
        a.set_string("coordinate_transformation_mode", coord);
        if (!linear) a.set_string("nearest_mode", nm);
        MoveCase c;
        c.label = case_label("Resize", tg.in, dtype,
                             coord + " " + (linear ? "linear" : nm) + " to " +
                                 (tg.scales.empty() ? shape_to_string(tg.sizes) : "scales"));
        c.node = make_node("Resize", 4, 1, a);
        c.opset = 19;
        c.inputs = {random_tensor(dtype, tg.in, -100, 100, rng), Tensor(),
                    tg.scales.empty() ? Tensor() : float_vector(tg.scales),
                    tg.sizes.empty() ? Tensor() : int_vector(tg.sizes)};
        c.plan_time = {2, 3};
        cases.push_back(std::move(c));
      }
    }
  }
  {  // opset 10 Resize and Upsample 9: asymmetric, nearest rounds the "simple" way
    for (const char* op : {"Resize", "Upsample"}) {
      for (const std::vector<float>& scales : {std::vector<float>{1, 1, 2, 3}, std::vector<float>{1, 1, 0.5f, 0.75f}}) {
        if (std::string(op) == "Upsample" && scales[2] < 1) continue;
        MoveCase c;
        c.label = std::string(op) + " opset " + (std::string(op) == "Upsample" ? "9" : "10") + " scales " +
                  std::to_string(scales[2]);
        c.node = make_node(op, 2, 1, with_string("mode", linear ? "linear" : "nearest"));
        c.opset = std::string(op) == "Upsample" ? 9 : 10;
        c.inputs = {random_tensor(dtype, {1, 2, 8, 8}, -100, 100, rng), float_vector(scales)};
        c.plan_time = {1};
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// Trilu and OneHot (on the device: indices and k read there).
inline std::vector<MoveCase> trilu_one_hot_cases() {
  std::mt19937 rng(20);
  std::vector<MoveCase> cases;
  const std::vector<Shape> shapes = {{1, 1}, {7, 7}, {3, 5, 7}, {2, 3, 257}, {2, 9, 4}};
  for (const Shape& s : shapes) {
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {-100, -2, 0, 1, 3, 300}) {
        for (DType t : {DType::Float32, DType::Float16, DType::Int64, DType::Bool}) {
          MoveCase c;
          c.label = case_label("Trilu", s, t, "upper " + std::to_string(upper) + " k " + std::to_string(k));
          c.node = make_node("Trilu", 2, 1, with_int("upper", upper));
          c.opset = 14;
          c.inputs = {random_tensor(t, s, 1, 100, rng), int_tensor({k}, {})};
          cases.push_back(std::move(c));
        }
      }
    }
  }
  {
    MoveCase c;
    c.label = "Trilu no k";
    c.node = make_node("Trilu", 1);
    c.opset = 14;
    c.inputs = {random_tensor(DType::Float32, {4, 6}, 1, 2, rng)};
    cases.push_back(std::move(c));
  }
  const std::vector<std::pair<Shape, int64_t>> hot = {{{}, 5}, {{7}, 4}, {{3, 5}, 6}, {{2, 3, 4}, 10}};
  for (const auto& [s, depth] : hot) {
    for (int64_t axis : {-1, 0}) {
      for (DType it : {DType::Int64, DType::Int32, DType::Float32}) {
        for (DType vt : {DType::Float32, DType::Float16, DType::Int64}) {
          MoveCase c;
          c.label = case_label("OneHot", s, it,
                               std::string("values ") + dtype_name(vt) + " axis " + std::to_string(axis));
          c.node = make_node("OneHot", 3, 1, with_int("axis", axis));
          c.opset = 11;
          // Indices in [-depth - 2, depth + 2): negative ones and out-of-range ones (-> all off).
          c.inputs = {random_tensor(it, s, static_cast<double>(-depth - 2), static_cast<double>(depth + 1), rng),
                      int_tensor({depth}, {}), random_tensor(vt, {2}, -10, 10, rng)};
          c.plan_time = {1};
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

}  // namespace ember::test
