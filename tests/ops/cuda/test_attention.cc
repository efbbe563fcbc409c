// com.ember ScaledDotProductAttention on CUDA against the CPU reference, which is the
// node's decomposition (the unfused BERT / GPT-2 nodes) evaluated node by node with
// evaluate_node in float32 (on the rounded values for float16 and bfloat16 cases). The
// fused node under test is the one fuse_attention makes of those nodes.
#include "cuda_harness.h"

#include "graph/passes/passes.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <cmath>
#include <limits>
#include <unordered_map>

namespace ember::test {
namespace {

// float32: one exp, a D-term dot and an Sk-term weighted sum per output, accumulated
// in another order than the CPU's MatMul / Softmax: ~1e-6 relative, 1e-4 leaves room.
constexpr double kRtolF32 = 1e-4, kAtolF32 = 1e-5;
// float16: same float32 math on the same half inputs, then the output rounded to half
// (2^-11 relative; outputs are averages of V in [-1, 1]).
constexpr double kRtolF16 = 1e-2, kAtolF16 = 2e-3;
// bfloat16: the same with 8 mantissa bits: P rounded to bfloat16 before P V (2^-9
// relative per weight, up to 2e-3 of an average of V in [-1, 1]), then the output
// (2^-9 relative; 3.9e-3 between neighbours).
constexpr double kRtolBf16 = 3e-2, kAtolBf16 = 8e-3;

double rtol(DType t) { return t == DType::Float16 ? kRtolF16 : t == DType::BFloat16 ? kRtolBf16 : kRtolF32; }
double atol(DType t) { return t == DType::Float16 ? kAtolF16 : t == DType::BFloat16 ? kAtolBf16 : kAtolF32; }

enum class Pattern { Bert, Gpt2, Plain };

struct Case {
  Pattern pattern;
  int64_t b, h, sq, sk, d, dv;
  Shape mask_shape = {};  // empty: the pattern's usual mask
  bool kv_batch_broadcast = false;  // K and V [1, H, ...] under a Q [B, H, ...]
};

std::string describe(const Case& c) {
  const char* names[] = {"bert", "gpt2", "plain"};
  return std::string(names[static_cast<int>(c.pattern)]) + " b" + std::to_string(c.b) + " h" + std::to_string(c.h) +
         " sq" + std::to_string(c.sq) + " sk" + std::to_string(c.sk) + " d" + std::to_string(c.d) + " dv" +
         std::to_string(c.dv) + " mask" + shape_to_string(c.mask_shape);
}

Node node(std::string op, std::vector<std::string> in, std::string out) {
  Node n;
  n.op_type = std::move(op);
  n.name = out + "_node";
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  *t.data_as<float>() = v;
  return t;
}

// The unfused attention of `pattern`, reading graph inputs q, k, v (and mask).
//   Bert:  Transpose(k [B,H,Sk,D], 0132) -> MatMul -> Div sqrt(D) -> Add mask -> Softmax -> MatMul v
//   Gpt2:  Transpose(k [B,Sk,H,D], 0231) -> MatMul -> Mul 1/sqrt(D) -> Where(mask, ., fill) -> ...
//   Plain: MatMul(q, k) with k = Kt [B,H,D,Sk] -> Softmax -> MatMul v
Graph attention_graph(Pattern pattern, int64_t d, float fill) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {{"q", DType::Float32, {}, false}, {"k", DType::Float32, {}, false}, {"v", DType::Float32, {}, false}};
  Node t = node("Transpose", {"k"}, "kt");
  Node sm = node("Softmax", {"masked"}, "probs");
  sm.attributes.set_int("axis", -1);
  const Node pv = node("MatMul", {"probs", "v"}, "y");
  switch (pattern) {
    case Pattern::Bert:
      g.inputs.push_back({"mask", DType::Float32, {}, false});
      g.initializers["c"] = scalar(std::sqrt(static_cast<float>(d)));
      t.attributes.set_ints("perm", {0, 1, 3, 2});
      g.nodes = {t, node("MatMul", {"q", "kt"}, "s"), node("Div", {"s", "c"}, "scaled"),
                 node("Add", {"scaled", "mask"}, "masked"), sm, pv};
      break;
    case Pattern::Gpt2:
      g.inputs.push_back({"mask", DType::Bool, {}, false});
      g.initializers["c"] = scalar(1.0f / std::sqrt(static_cast<float>(d)));
      g.initializers["fill"] = scalar(fill);
      t.attributes.set_ints("perm", {0, 2, 3, 1});
      g.nodes = {t, node("MatMul", {"q", "kt"}, "s"), node("Mul", {"s", "c"}, "scaled"),
                 node("Where", {"mask", "scaled", "fill"}, "masked"), sm, pv};
      break;
    case Pattern::Plain:
      sm.inputs = {"s"};
      g.nodes = {node("MatMul", {"q", "k"}, "s"), sm, pv};
      break;
  }
  g.outputs = {{"y", DType::Float32, {}, false}};
  return g;
}

// The CPU reference: the graph's nodes one by one, in float32.
Tensor run_reference(const Graph& g, const std::vector<const Tensor*>& inputs) {
  std::unordered_map<std::string, Tensor> env(g.initializers.begin(), g.initializers.end());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& in = *inputs[i];
    env[g.inputs[i].name] =
        in.dtype() == DType::Float16 || in.dtype() == DType::BFloat16 ? cast_to(in, DType::Float32) : in;
  }
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (const auto& name : n.inputs) in.push_back(&env.at(name));
    auto out = evaluate_node(n, g.opset(n.domain), in);
    env[n.outputs[0]] = out[0];
  }
  return env.at("y");
}

// The fused node fuse_attention makes of `g`.
Node fused_node(Graph g) {
  EXPECT_EQ(fuse_attention(g), 1);
  for (const Node& n : g.nodes)
    if (n.op_type == "ScaledDotProductAttention") return n;
  ADD_FAILURE() << "no fused node";
  return {};
}

// GPT-2's causal mask for a query block at the end of the keys: key j is visible to
// query i when j <= i + (Sk - Sq).
Tensor causal_mask(int64_t sq, int64_t sk) {
  Tensor m(DType::Bool, {1, 1, sq, sk});
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j) m.data_as<bool>()[i * sk + j] = j <= i + (sk - sq);
  return m;
}

// BERT's padding mask: 0 or -10000, the last keys of odd rows padded (never all of
// them). A mask of one key column gets small random values instead: -10000 on a whole
// row would round the scores to its ulp (~1e-3), where the CPU's Div and the kernel's
// multiply by 1/c may round apart.
Tensor padding_mask(const Shape& shape, std::mt19937& rng) {
  const int64_t sk = shape.back();
  if (sk == 1) return random_tensor(DType::Float32, shape, -1, 1, rng);
  Tensor m(DType::Float32, shape);
  for (int64_t i = 0; i < m.numel(); ++i) {
    const int64_t j = i % sk, row = i / sk;
    const bool padded = row % 2 == 1 && j >= sk - 1 - static_cast<int64_t>(rng() % (sk / 2));  // <= sk/2 keys
    m.data_as<float>()[i] = padded ? -10000.0f : 0.0f;
  }
  return m;
}

// A boolean padding mask (true keeps): where padding_mask gives 0.
Tensor keep_mask(const Shape& shape, std::mt19937& rng) {
  const Tensor additive = padding_mask(shape, rng);
  Tensor m(DType::Bool, shape);
  for (int64_t i = 0; i < m.numel(); ++i) m.data_as<bool>()[i] = additive.data_as<float>()[i] == 0.0f;
  return m;
}

void check_case(const Case& c, DType dtype, std::mt19937& rng, float fill = std::numeric_limits<float>::lowest()) {
  SCOPED_TRACE(describe(c) + " " + dtype_name(dtype));
  const int64_t kb = c.kv_batch_broadcast ? 1 : c.b;
  Shape k_shape;
  switch (c.pattern) {
    case Pattern::Bert: k_shape = {kb, c.h, c.sk, c.d}; break;
    case Pattern::Gpt2: k_shape = {kb, c.sk, c.h, c.d}; break;
    case Pattern::Plain: k_shape = {kb, c.h, c.d, c.sk}; break;
  }
  const Tensor q = random_tensor(dtype, {c.b, c.h, c.sq, c.d}, -2, 2, rng);
  const Tensor k = random_tensor(dtype, k_shape, -2, 2, rng);
  const Tensor v = random_tensor(dtype, {kb, c.h, c.sk, c.dv}, -1, 1, rng);
  Tensor mask;
  if (c.pattern == Pattern::Bert)
    mask = cast_to(padding_mask(c.mask_shape.empty() ? Shape{c.b, 1, 1, c.sk} : c.mask_shape, rng), dtype);
  if (c.pattern == Pattern::Gpt2) mask = c.mask_shape.empty() ? causal_mask(c.sq, c.sk) : keep_mask(c.mask_shape, rng);
  std::vector<const Tensor*> inputs = {&q, &k, &v};
  if (!mask.empty()) inputs.push_back(&mask);

  const Graph g = attention_graph(c.pattern, c.d, fill);
  const Node fused = fused_node(g);
  const Tensor want = run_reference(g, inputs);
  const std::vector<Tensor> got = run_on_cuda(fused, 1, inputs);
  if (got.empty()) return;
  expect_close(got[0], want, rtol(dtype), atol(dtype), describe(c));
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Sq = Sk over the sizes that hit full and partial 32-row / 32-key tiles.
      {Pattern::Bert, 1, 1, 1, 1, 32, 32},
      {Pattern::Bert, 2, 3, 7, 7, 64, 64},
      {Pattern::Bert, 1, 12, 64, 64, 64, 64},
      {Pattern::Bert, 2, 12, 128, 128, 64, 64},
      {Pattern::Bert, 1, 2, 129, 129, 80, 80},
      // Head dims that are not whole 8-value chunks: the tiles load one value at a time.
      {Pattern::Bert, 1, 2, 70, 70, 20, 20},
      {Pattern::Gpt2, 2, 2, 65, 65, 36, 44},
      {Pattern::Bert, 2, 4, 300, 300, 32, 32},
      {Pattern::Gpt2, 1, 1, 1, 1, 64, 64},
      {Pattern::Gpt2, 2, 12, 7, 7, 64, 64},
      {Pattern::Gpt2, 1, 3, 64, 64, 80, 80},
      {Pattern::Gpt2, 2, 2, 129, 129, 32, 32},
      {Pattern::Gpt2, 1, 12, 300, 300, 64, 64},
      {Pattern::Plain, 1, 1, 7, 7, 32, 32},
      {Pattern::Plain, 2, 5, 128, 128, 80, 80},
      // Sq != Sk, and Dv != D.
      {Pattern::Bert, 2, 3, 1, 300, 64, 64},
      {Pattern::Bert, 1, 2, 129, 7, 32, 48},
      {Pattern::Gpt2, 2, 2, 7, 129, 64, 64},
      {Pattern::Gpt2, 1, 3, 64, 1, 80, 80},
      {Pattern::Plain, 2, 3, 300, 33, 64, 128},
      {Pattern::Plain, 1, 1, 33, 300, 128, 16},
      // Masks of other shapes: per query row, full, rank 1 and 2, broadcasting K/V batch.
      {Pattern::Bert, 2, 3, 33, 65, 64, 64, {1, 1, 33, 65}},
      {Pattern::Bert, 2, 3, 33, 65, 64, 64, {2, 3, 33, 65}},
      {Pattern::Bert, 2, 3, 33, 65, 64, 64, {65}},
      {Pattern::Bert, 2, 3, 33, 65, 64, 64, {33, 1}},
      {Pattern::Bert, 2, 3, 33, 65, 64, 64, {2, 1, 1, 65}, true},
      {Pattern::Gpt2, 2, 3, 40, 70, 64, 64, {}, true},
      // Boolean masks the same for every query row (read through shared memory).
      {Pattern::Gpt2, 2, 3, 33, 65, 64, 64, {2, 1, 1, 65}},
      {Pattern::Gpt2, 1, 2, 70, 70, 20, 20, {1, 1, 1, 70}},
  };
  return all;
}

TEST(CudaAttention, Float32MatchesTheDecomposition) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(1);
  for (const Case& c : cases()) check_case(c, DType::Float32, rng);
}

TEST(CudaAttention, Float16MatchesTheDecomposition) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(2);
  for (const Case& c : cases()) check_case(c, DType::Float16, rng);
}

// The tensor-core kernel's bfloat16 instantiation (mma.sync .bf16).
TEST(CudaAttention, BFloat16MatchesTheDecomposition) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(5);
  for (const Case& c : cases()) check_case(c, DType::BFloat16, rng);
}

// A causal mask with more queries than keys masks the first Sq - Sk rows entirely:
// a finite fill makes those rows uniform, -inf makes them NaN, as the decomposition.
TEST(CudaAttention, FullyMaskedRowsMatchTheDecomposition) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(3);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (float fill : {std::numeric_limits<float>::lowest(), -1e9f, -std::numeric_limits<float>::infinity()}) {
      check_case({Pattern::Gpt2, 2, 3, 40, 7, 64, 64}, dtype, rng, fill);
      check_case({Pattern::Gpt2, 1, 2, 100, 70, 32, 32}, dtype, rng, fill);  // masked rows span 32-row tiles
    }
}

// -inf in an additive mask: rows with some -inf keys (also a whole first key tile of
// them) are computed normally; rows that are all -inf are NaN.
// The heads' transposes exporters write around attention (BERT, ViT): Q, K, V come as
// [B, S, H, D] and the output goes back to [B, Sq, H, Dv]. The fused node absorbs all
// four (q_perm, k_perm, v_perm, y_perm) and the kernel reads and writes through strides.
TEST(CudaAttention, HeadTransposesAreReadThroughStrides) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(23);
  struct Sizes {
    int64_t b, h, sq, sk, d, dv;
  };
  for (const Sizes& z : {Sizes{2, 3, 7, 7, 64, 64}, Sizes{1, 12, 197, 197, 64, 64}, Sizes{2, 2, 65, 33, 80, 48}})
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      Graph g;
      g.opset_imports[""] = 17;
      g.inputs = {{"q_in", DType::Float32, {}, false}, {"k_in", DType::Float32, {}, false},
                  {"v_in", DType::Float32, {}, false}, {"mask", DType::Float32, {}, false}};
      g.initializers["c"] = scalar(std::sqrt(static_cast<float>(z.d)));
      auto transpose = [](std::string in, std::string out, std::vector<int64_t> perm) {
        Node t = node("Transpose", {std::move(in)}, std::move(out));
        t.attributes.set_ints("perm", std::move(perm));
        return t;
      };
      Node sm = node("Softmax", {"masked"}, "probs");
      sm.attributes.set_int("axis", -1);
      g.nodes = {transpose("q_in", "q", {0, 2, 1, 3}), transpose("k_in", "kt", {0, 2, 3, 1}),
                 transpose("v_in", "v", {0, 2, 1, 3}), node("MatMul", {"q", "kt"}, "s"),
                 node("Div", {"s", "c"}, "scaled"), node("Add", {"scaled", "mask"}, "masked"), sm,
                 node("MatMul", {"probs", "v"}, "heads"), transpose("heads", "y", {0, 2, 1, 3})};
      g.outputs = {{"y", DType::Float32, {}, false}};
      const Node fused = fused_node(g);
      for (const char* perm : {"q_perm", "k_perm", "v_perm", "y_perm"}) EXPECT_TRUE(fused.attributes.has(perm)) << perm;
      const Tensor q = random_tensor(dtype, {z.b, z.sq, z.h, z.d}, -2, 2, rng);
      const Tensor k = random_tensor(dtype, {z.b, z.sk, z.h, z.d}, -2, 2, rng);
      const Tensor v = random_tensor(dtype, {z.b, z.sk, z.h, z.dv}, -1, 1, rng);
      const Tensor mask = cast_to(padding_mask({z.b, 1, 1, z.sk}, rng), dtype);
      const std::vector<const Tensor*> inputs = {&q, &k, &v, &mask};
      const Tensor want = run_reference(g, inputs);
      const std::vector<Tensor> got = run_on_cuda(fused, 1, inputs);
      if (got.empty()) return;
      ASSERT_EQ(got[0].shape(), (Shape{z.b, z.sq, z.h, z.dv}));
      expect_close(got[0], want, rtol(dtype), atol(dtype),
                   "heads transposed, sq " + std::to_string(z.sq) + " " + dtype_name(dtype));
    }
}

// torch's export scales Q and K each by sqrt(scale), computed from the shapes: the
// fused node takes it as operand_scale, which the kernel needs as a plan-time constant
// (the planner folds it) and declines otherwise.
TEST(CudaAttention, AnOperandScaleKnownAtPlanTimeJoinsTheScale) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(24);
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {{"q", DType::Float32, {}, false}, {"k_in", DType::Float32, {}, false},
              {"v", DType::Float32, {}, false}, {"s", DType::Float32, {}, false}};
  Node t = node("Transpose", {"k_in"}, "kt");
  t.attributes.set_ints("perm", {0, 1, 3, 2});
  Node sm = node("Softmax", {"scores"}, "probs");
  sm.attributes.set_int("axis", -1);
  g.nodes = {t, node("Mul", {"q", "s"}, "qs"), node("Mul", {"kt", "s"}, "ks"), node("MatMul", {"qs", "ks"}, "scores"),
             sm, node("MatMul", {"probs", "v"}, "y")};
  g.outputs = {{"y", DType::Float32, {}, false}};
  const Node fused = fused_node(g);
  ASSERT_EQ(fused.inputs.size(), 5u);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const Tensor q = random_tensor(dtype, {2, 3, 70, 64}, -2, 2, rng);
    const Tensor k = random_tensor(dtype, {2, 3, 70, 64}, -2, 2, rng);
    const Tensor v = random_tensor(dtype, {2, 3, 70, 64}, -1, 1, rng);
    Tensor s(DType::Float32, {1});
    s.data_as<float>()[0] = 0.35f;
    const Tensor s_typed = cast_to(s, dtype);
    const Tensor want = run_reference(g, {&q, &k, &v, &s_typed});
    const std::vector<const Tensor*> inputs = {&q, &k, &v, nullptr, &s_typed};
    const std::vector<Tensor> got = run_on_cuda(fused, 1, inputs, {4});
    if (got.empty()) return;
    expect_close(got[0], want, rtol(dtype), atol(dtype),
                 std::string("operand scale ") + dtype_name(dtype));
    const DeviceRun unknown = try_run_on_cuda(fused, 1, inputs);  // s only known at run time
    EXPECT_FALSE(unknown.taken);
    EXPECT_NE(unknown.why_not.find("operand_scale"), std::string::npos) << unknown.why_not;
  }
}

TEST(CudaAttention, MinusInfinityInAnAdditiveMask) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(4);
  const int64_t b = 1, h = 2, sq = 5, sk = 70, d = 32;
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    Tensor mask(DType::Float32, {1, 1, sq, sk});
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        mask.data_as<float>()[i * sk + j] = i == 0 ? -inf : i == 1 ? (j < 40 ? -inf : 0.0f) : (j % 3 == 0 ? -inf : 0.5f);
    const Tensor m = cast_to(mask, dtype);
    const Tensor q = random_tensor(dtype, {b, h, sq, d}, -2, 2, rng);
    const Tensor k = random_tensor(dtype, {b, h, sk, d}, -2, 2, rng);
    const Tensor v = random_tensor(dtype, {b, h, sk, d}, -1, 1, rng);
    const Graph g = attention_graph(Pattern::Bert, d, 0);
    const std::vector<const Tensor*> inputs = {&q, &k, &v, &m};
    const Tensor want = run_reference(g, inputs);
    ASSERT_TRUE(std::isnan(cast_to(want, DType::Float32).data_as<float>()[0]));  // row 0: all -inf
    const std::vector<Tensor> got = run_on_cuda(fused_node(g), 1, inputs);
    if (got.empty()) return;
    expect_close(got[0], want, rtol(dtype), atol(dtype), "-inf mask");
  }
}

// What the kernel declines it says why, before touching the GPU (no GPU needed).
std::string why_declined(const Node& n, const std::vector<TensorType>& types) {
  const std::vector<const Tensor*> values(types.size(), nullptr);
  const std::vector<TensorType> out = infer_node(n, 1, types, values);
  const auto entries = find_kernels("com.ember", "ScaledDotProductAttention", 1, DeviceKind::Cuda);
  EXPECT_EQ(entries.size(), 1u);
  if (entries.empty()) return "";
  KernelInit init{n, 1, Device{DeviceKind::Cuda, 0}, types, values, out};
  std::string why;
  EXPECT_EQ(entries[0]->factory(init, &why), nullptr);
  return why;
}

TEST(CudaAttention, DeclinesWithAReason) {
  const Node bert = fused_node(attention_graph(Pattern::Bert, 64, 0));
  const Node plain = fused_node(attention_graph(Pattern::Plain, 64, 0));
  const auto t = [](DType dtype, Shape s) { return TensorType{dtype, std::move(s)}; };
  const DType f = DType::Float32;
  // Head dims past 128.
  EXPECT_NE(why_declined(bert, {t(f, {1, 2, 7, 160}), t(f, {1, 2, 9, 160}), t(f, {1, 2, 9, 64}), t(f, {1, 1, 1, 9})})
                .find("head dim 160"),
            std::string::npos);
  EXPECT_NE(why_declined(plain, {t(f, {1, 2, 7, 64}), t(f, {1, 2, 64, 9}), t(f, {1, 2, 9, 256})}).find("head dim 256"),
            std::string::npos);
  // float64.
  const DType f64 = DType::Float64;
  EXPECT_NE(why_declined(plain, {t(f64, {1, 2, 7, 64}), t(f64, {1, 2, 64, 9}), t(f64, {1, 2, 9, 64})}).find("float64"),
            std::string::npos);
  // Ranks other than 4 (the decomposition takes them: MatMul batches of any rank).
  EXPECT_NE(why_declined(plain, {t(f, {7, 64}), t(f, {64, 9}), t(f, {9, 64})}).find("rank-4"), std::string::npos);
  EXPECT_NE(why_declined(plain, {t(f, {2, 1, 2, 7, 64}), t(f, {2, 1, 2, 64, 9}), t(f, {2, 1, 2, 9, 64})}).find("rank-4"),
            std::string::npos);
  // A mask that widens the key dim of size 1.
  EXPECT_NE(why_declined(bert, {t(f, {1, 2, 7, 64}), t(f, {1, 2, 1, 64}), t(f, {1, 2, 5, 64}), t(f, {1, 1, 7, 5})})
                .find("widens"),
            std::string::npos);
}

}  // namespace
}  // namespace ember::test
