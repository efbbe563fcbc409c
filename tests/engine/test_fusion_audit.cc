// Every fusion pass on the shapes exporters really write, through Session: biases [N],
// [1, N], [1, 1, N] and scalars, on either side of the Add; reshapes and transposes
// between the ops; a weight two consumers share; an einsum-written product; residuals
// that broadcast. The graph optimized (GraphOptimization::All) must run and give what
// the graph as written (None) gives, at more than one input shape. A pass that builds a
// node no kernel takes fails here, as a real model once failed (issue 14).
#include "ops/cpu/blocked_layouts.h"
#include "session_models.h"

#include <ember/ember.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace ember {
namespace {

using test::add_node;
using test::as_bytes;

// A model under construction: the input "x" (dims may be symbolic), output "y".
struct Builder {
  onnx::ModelProto model = test::new_model(8, 17);
  onnx::GraphProto& g = *model.mutable_graph();
  std::mt19937 rng{11};

  explicit Builder(const std::vector<std::string>& x_dims) {
    test::add_input(g, "x", x_dims);
    test::add_unshaped(g.mutable_output(), "y", onnx::TensorProto::FLOAT);
  }
  void weight(const std::string& name, const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::normal_distribution<float> normal(0.f, 0.5f);
    std::vector<float> values(static_cast<size_t>(n));
    for (float& v : values) v = normal(rng);
    *g.add_initializer() = test::float_tensor(name, dims, values);
  }
  void ints(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(static_cast<int64_t>(values.size()));
    t.set_raw_data(test::bytes_of(values));
    *g.add_initializer() = t;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    return add_node(g, op, in, {out}, out + "_node");
  }
};

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

struct Case {
  std::string name;
  std::vector<std::string> x_dims;
  std::vector<Shape> x_shapes;  // run at each
  std::function<void(Builder&)> build;
  std::string fuses;  // the com.ember op the plan must hold ("": the pattern need not fuse)
};

// MatMul [.., 8] x [8, 16] + bias of `bias_dims` (on the left when `bias_first`) + Relu.
Case matmul_bias(const std::string& name, std::vector<int64_t> bias_dims, bool bias_first = false,
                 const std::string& fuses = "FusedMatMul") {
  return {name, {"batch", "5", "8"}, {{1, 5, 8}, {3, 5, 8}}, [=](Builder& b) {
            b.weight("w", {8, 16});
            b.weight("bias", bias_dims);
            b.node("MatMul", {"x", "w"}, "m");
            b.node("Add", bias_first ? std::vector<std::string>{"bias", "m"} : std::vector<std::string>{"m", "bias"}, "h");
            b.node("Relu", {"h"}, "y");
          }, fuses};
}

// Conv [b, 3, 8, 8] -> [b, 4, 8, 8] (bias [4]) + `residual` + Relu.
Case conv_residual(const std::string& name, const std::function<void(Builder&)>& residual,
                   const std::string& fuses = "") {
  return {name, {"batch", "3", "8", "8"}, {{1, 3, 8, 8}, {2, 3, 8, 8}}, [=](Builder& b) {
            b.weight("w", {4, 3, 3, 3});
            b.weight("b", {4});
            set_ints(b.node("Conv", {"x", "w", "b"}, "c"), "pads", {1, 1, 1, 1});
            residual(b);  // makes "r"
            b.node("Add", {"c", "r"}, "h");
            b.node("Relu", {"h"}, "y");
          }, fuses};
}

Case gemm_c(const std::string& name, std::vector<int64_t> c_dims) {
  return {name, {"batch", "8"}, {{1, 8}, {4, 8}}, [=](Builder& b) {
            b.weight("w", {16, 8});
            b.weight("c", c_dims);
            set_int(b.node("Gemm", {"x", "w", "c"}, "m"), "transB", 1);
            b.node("Relu", {"m"}, "y");
          }, "FusedGemm"};
}

std::vector<Case> cases() {
  std::vector<Case> all = {
      matmul_bias("MatMul bias [N]", {16}),
      matmul_bias("MatMul bias [1, N]", {1, 16}),
      matmul_bias("MatMul bias [1, 1, N]", {1, 1, 16}),
      matmul_bias("MatMul bias [1, 1, 1, N] (raises the rank)", {1, 1, 1, 16}),
      matmul_bias("MatMul bias on the left of the Add", {1, 16}, true),
      matmul_bias("MatMul bias [1] (a scalar, not a bias)", {1}, false, ""),
      matmul_bias("MatMul bias [] (rank 0)", {}, false, ""),
      matmul_bias("MatMul bias [5, 16] (per row, not a bias)", {5, 16}, false, ""),
      {"MatMul, Reshape, bias, Relu", {"batch", "5", "8"}, {{1, 5, 8}, {2, 5, 8}}, [](Builder& b) {
         b.weight("w", {8, 16});
         b.weight("bias", {16});
         b.ints("shape", {-1, 16});
         b.node("MatMul", {"x", "w"}, "m");
         b.node("Reshape", {"m", "shape"}, "r");
         b.node("Add", {"r", "bias"}, "h");
         b.node("Relu", {"h"}, "y");
       }, ""},
      {"MatMul, Relu, Reshape (the activation moves up)", {"batch", "5", "8"}, {{1, 5, 8}, {2, 5, 8}},
       [](Builder& b) {
         b.weight("w", {8, 16});
         b.ints("shape", {-1, 16});
         b.node("MatMul", {"x", "w"}, "m");
         b.node("Reshape", {"m", "shape"}, "r");
         b.node("Relu", {"r"}, "y");
       }, "FusedMatMul"},
      {"one weight, two MatMuls with their own biases", {"batch", "8"}, {{1, 8}, {3, 8}}, [](Builder& b) {
         b.weight("w", {8, 8});
         b.weight("bias1", {8});
         b.weight("bias2", {1, 8});
         b.node("MatMul", {"x", "w"}, "m1");
         b.node("Add", {"m1", "bias1"}, "h1");
         b.node("Relu", {"h1"}, "r1");
         b.node("MatMul", {"r1", "w"}, "m2");
         b.node("Add", {"m2", "bias2"}, "h2");
         b.node("Add", {"h2", "x"}, "y");
       }, "FusedMatMul"},
      {"MatMul of a vector + bias", {"8"}, {{8}}, [](Builder& b) {
         b.weight("w", {8, 16});
         b.weight("bias", {16});
         b.node("MatMul", {"x", "w"}, "m");
         b.node("Add", {"m", "bias"}, "h");
         b.node("Relu", {"h"}, "y");
       }, "FusedMatMul"},
      {"MatMul with a batched weight [1, 8, 16] + bias", {"batch", "5", "8"}, {{1, 5, 8}, {2, 5, 8}},
       [](Builder& b) {
         b.weight("w", {1, 8, 16});
         b.weight("bias", {16});
         b.node("MatMul", {"x", "w"}, "m");
         b.node("Add", {"m", "bias"}, "h");
         b.node("Relu", {"h"}, "y");
       }, ""},
      {"Einsum-written product + bias [1, 1, N]", {"batch", "5", "8"}, {{1, 5, 8}, {2, 5, 8}}, [](Builder& b) {
         b.weight("w", {8, 16});
         b.weight("bias", {1, 1, 16});
         auto* e = b.node("Einsum", {"x", "w"}, "m");
         auto* eq = e->add_attribute();
         eq->set_name("equation");
         eq->set_type(onnx::AttributeProto::STRING);
         eq->set_s("bij,jk->bik");
         b.node("Add", {"m", "bias"}, "h");
         b.node("Relu", {"h"}, "y");
       }, ""},
      {"SiLU written out after MatMul + bias [1, 1, N]", {"batch", "5", "8"}, {{1, 5, 8}, {2, 5, 8}},
       [](Builder& b) {
         b.weight("w", {8, 16});
         b.weight("bias", {1, 1, 16});
         b.node("MatMul", {"x", "w"}, "m");
         b.node("Add", {"m", "bias"}, "h");
         b.node("Sigmoid", {"h"}, "s");
         b.node("Mul", {"h", "s"}, "y");
       }, "FusedMatMul"},
      {"Transposes around a MatMul with a bias [1, N]", {"batch", "8", "5"}, {{1, 8, 5}, {2, 8, 5}},
       [](Builder& b) {
         b.weight("w", {8, 16});
         b.weight("bias", {1, 16});
         set_ints(b.node("Transpose", {"x"}, "xt"), "perm", {0, 2, 1});
         b.node("MatMul", {"xt", "w"}, "m");
         b.node("Add", {"m", "bias"}, "h");
         set_ints(b.node("Transpose", {"h"}, "y"), "perm", {1, 0, 2});
       }, "FusedMatMul"},
      gemm_c("Gemm C [N]", {16}),
      gemm_c("Gemm C [1, N]", {1, 16}),
      gemm_c("Gemm C [] (a scalar)", {}),
      gemm_c("Gemm C [1]", {1}),
      conv_residual("Conv + residual of the same shape",
                    [](Builder& b) {
                      b.weight("w2", {4, 3, 1, 1});
                      b.node("Conv", {"x", "w2"}, "r");
                    },
                    "NhwcConv"),
      conv_residual("Conv + residual that broadcasts [b, 4, 1, 1]",
                    [](Builder& b) {
                      b.weight("w2", {4, 3, 1, 1});
                      b.node("Conv", {"x", "w2"}, "c2");
                      b.node("GlobalAveragePool", {"c2"}, "r");
                    }),
      conv_residual("Conv + constant [1, 4, 1, 1]", [](Builder& b) { b.weight("r", {1, 4, 1, 1}); }),
      conv_residual("Conv + residual the input itself broadcasts into", [](Builder& b) {
        b.weight("w2", {1, 3, 1, 1});
        b.node("Conv", {"x", "w2"}, "r");  // [b, 1, 8, 8]
      }),
  };
  return all;
}

double worst_difference(const Tensor& got, const Tensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::fabs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]) /
                                std::max(1.0, std::fabs(double(want.data_as<float>()[i]))));
  return worst;
}

TEST(FusionAudit, EveryPatternRunsOptimizedAndGivesTheGraphsResult) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Builder b(c.x_dims);
    c.build(b);
    const std::string bytes = b.model.SerializeAsString();
    Session as_written =
        Session::from_bytes(as_bytes(bytes), {.num_threads = 1, .optimization = GraphOptimization::None});
    Session optimized = Session::from_bytes(as_bytes(bytes), {.num_threads = 1});
    for (const Shape& shape : c.x_shapes) {
      const Tensor x = test::random_float_tensor(shape, 5);
      const Tensor want = as_written.run({{"x", x}})[0];
      Tensor got;
      ASSERT_NO_THROW(got = optimized.run({{"x", x}})[0]) << "x " << shape_to_string(shape);
      ASSERT_EQ(got.shape(), want.shape()) << "x " << shape_to_string(shape);
      // Tolerance: float32 sums of at most 27 products, reassociated by the fused kernels.
      EXPECT_LE(worst_difference(got, want), 1e-5) << "x " << shape_to_string(shape);
      if (!c.fuses.empty()) {
        EXPECT_NE(optimized.explain(std::span<const Tensor>(&x, 1)).find("[com.ember::" + c.fuses + "]"),
                  std::string::npos)
            << "expected the pattern to fuse into " << c.fuses;
      }
    }
  }
}

// MobileNet's expansion and its depthwise filter (graph/passes/fuse_pointwise_depthwise.cc):
// one node where the expansion is large (2 x 96 x 112 x 112 floats), and where it is
// small the two convolutions, with a note in the explanation saying why; on a CPU
// whose oneDNN kernels have no such fusion (AVX-512), the two convolutions always.
TEST(FusionAudit, AnExpansionAndItsDepthwiseConvRunAsOneWhereTheExpansionIsLarge) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "CPUs without AVX2 plan convolutions channels-last, unfused";
  // oneDNN has the fused kernel in blocks of 8 at the AVX2 level only (ops/cpu/blocked_layouts.h).
  const bool fusing_here = blocked_layouts_for_this_cpu()->fuses_pointwise_depthwise;
  Builder b({"batch", "16", "size", "size"});
  b.weight("w", {96, 16, 1, 1});
  b.weight("w_dw", {96, 1, 3, 3});
  b.node("Conv", {"x", "w"}, "e");
  b.node("Relu", {"e"}, "r");
  onnx::NodeProto* dw = b.node("Conv", {"r", "w_dw"}, "d");
  set_int(dw, "group", 96);
  set_ints(dw, "pads", {1, 1, 1, 1});
  set_ints(dw, "strides", {2, 2});
  b.node("Relu", {"d"}, "y");
  const std::string bytes = b.model.SerializeAsString();
  Session as_written = Session::from_bytes(as_bytes(bytes), {.num_threads = 2, .optimization = GraphOptimization::None});
  Session optimized = Session::from_bytes(as_bytes(bytes), {.num_threads = 2});
  for (const auto& [shape, fuses] : {std::pair{Shape{1, 16, 8, 8}, false}, std::pair{Shape{2, 16, 112, 112}, true}}) {
    SCOPED_TRACE("x " + shape_to_string(shape));
    const Tensor x = test::random_float_tensor(shape, 7);
    const Tensor want = as_written.run({{"x", x}})[0];
    const Tensor got = optimized.run({{"x", x}})[0];
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_LE(worst_difference(got, want), 1e-5);  // float32 sums of 16, then 9, products
    const std::string explanation = optimized.explain(std::span<const Tensor>(&x, 1));
    if (!fusing_here) {  // an AVX-512 CPU: the pass leaves the two convs be
      EXPECT_EQ(explanation.find("PointwiseDepthwise"), std::string::npos) << explanation;
      continue;
    }
    const char* expected = fuses ? "as pointwise+depthwise" : "runs as the nodes it was fused from (cpu: the 1x1's output";
    EXPECT_NE(explanation.find(expected), std::string::npos) << explanation;
  }
}

}  // namespace
}  // namespace ember
