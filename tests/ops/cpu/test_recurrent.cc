// RNN, GRU and LSTM against a double-precision reference written from the ONNX spec
// equations: every direction, both layouts, sequence_lens, initial states, peepholes,
// input_forget, linear_before_reset, clip, every activation with its alpha/beta,
// absent optional inputs and outputs, float32 and float64, and the errors.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace ember {
namespace {

using test::element;

struct Act {
  std::string name;
  float alpha = 0, beta = 0;  // only read by the functions that take them
};

// What the activation table of the spec says; alpha/beta as given in Act.
double apply(const Act& a, double x) {
  const std::string& n = a.name;
  if (n == "Relu") return x > 0 ? x : 0;
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "ThresholdedRelu") return x > a.alpha ? x : 0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "HardSigmoid") return std::min(1.0, std::max(0.0, a.alpha * x + a.beta));
  if (n == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::abs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "no reference for " << n;
  return 0;
}
bool takes_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
         n == "HardSigmoid" || n == "Elu";
}
bool takes_beta(const std::string& n) {
  return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
}

struct Case {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t seq = 5, batch = 3, input = 4, hidden = 3;
  int64_t layout = 0;
  bool bias = true, initial = true, peephole = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens input
  int64_t linear_before_reset = 0, input_forget = 0;
  float clip = 0;        // 0: no clip attribute
  std::vector<Act> acts;  // empty: no activations attribute (spec defaults)
  DType dtype = DType::Float32;
  std::vector<std::string> outputs = {"y", "y_h", "y_c"};
  int64_t opset = 22;
};

int64_t gates_of(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

// Random values in [-1, 1] stored as `dtype`; `values` keeps them in double.
Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng, std::vector<double>& values) {
  Tensor t = test::random_tensor(dtype, shape, -1, 1, rng);
  values.resize(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) values[i] = element(t, i);
  return t;
}

struct Expected {
  std::vector<double> y, y_h, y_c;
};

// The spec's equations, step by step, for one node. Values are indexed in layout 0
// and mapped to layout 1 only when read or written.
Expected reference(const Case& c, const std::vector<std::vector<double>>& in) {
  const int64_t S = c.seq, B = c.batch, I = c.input, H = c.hidden, G = gates_of(c.op);
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const bool l1 = c.layout == 1;
  auto xi = [&](int64_t t, int64_t b, int64_t k) { return l1 ? (b * S + t) * I + k : (t * B + b) * I + k; };
  auto yi = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return l1 ? ((b * S + t) * D + d) * H + j : ((t * D + d) * B + b) * H + j;
  };
  auto si = [&](int64_t d, int64_t b, int64_t j) { return l1 ? (b * D + d) * H + j : (d * B + b) * H + j; };
  std::vector<Act> acts = c.acts;
  if (acts.empty()) {
    const std::vector<Act> one = c.op == "RNN"   ? std::vector<Act>{{"Tanh"}}
                                 : c.op == "GRU" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}}
                                                 : std::vector<Act>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
    for (int64_t d = 0; d < D; ++d) acts.insert(acts.end(), one.begin(), one.end());
  }
  const double clip = c.clip > 0 ? c.clip : INFINITY;
  auto clipped = [&](double v) { return std::min(clip, std::max(-clip, v)); };
  const auto &x = in[0], &w = in[1], &r = in[2], &bias = in[3], &h0 = in[5], &c0 = in[6], &p = in[7];

  Expected e;
  e.y.assign(S * D * B * H, 0);
  e.y_h.assign(D * B * H, 0);
  e.y_c.assign(D * B * H, 0);
  for (int64_t d = 0; d < D; ++d) {
    const Act* a = &acts[d * (G == 1 ? 1 : G == 3 ? 2 : 3)];
    // Weight row `row` of direction d times a vector, plus both biases of that row.
    auto wx = [&](int64_t row, int64_t t, int64_t b) {
      double s = 0;
      for (int64_t k = 0; k < I; ++k) s += w[(d * G * H + row) * I + k] * x[xi(t, b, k)];
      return s + (c.bias ? bias[d * 2 * G * H + row] : 0);
    };
    auto rh = [&](int64_t row, const std::vector<double>& h) {
      double s = 0;
      for (int64_t k = 0; k < H; ++k) s += r[(d * G * H + row) * H + k] * h[k];
      return s + (c.bias ? bias[d * 2 * G * H + G * H + row] : 0);
    };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H, 0), cell(H, 0);
      for (int64_t j = 0; j < H; ++j) {
        if (c.initial) h[j] = h0[si(d, b, j)];
        if (c.initial && G == 4) cell[j] = c0[si(d, b, j)];
      }
      const int64_t len = c.lens.empty() ? S : c.lens[b];
      const bool backwards = c.direction == "reverse" || d == 1;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backwards ? len - 1 - step : step;
        std::vector<double> next(H), next_c(H);
        for (int64_t j = 0; j < H; ++j) {
          if (G == 1) {
            next[j] = apply(a[0], clipped(wx(j, t, b) + rh(j, h)));
          } else if (G == 3) {
            const double z = apply(a[0], clipped(wx(j, t, b) + rh(j, h)));
            const double rr = apply(a[0], clipped(wx(H + j, t, b) + rh(H + j, h)));
            double pre;
            if (c.linear_before_reset) {
              pre = wx(2 * H + j, t, b) + rr * rh(2 * H + j, h);
            } else {
              std::vector<double> reset_h(H);
              for (int64_t k = 0; k < H; ++k)
                reset_h[k] = apply(a[0], clipped(wx(H + k, t, b) + rh(H + k, h))) * h[k];
              pre = wx(2 * H + j, t, b) + rh(2 * H + j, reset_h);
            }
            next[j] = (1 - z) * apply(a[1], clipped(pre)) + z * h[j];
          } else {
            const double pi = c.peephole ? p[d * 3 * H + j] : 0, po = c.peephole ? p[d * 3 * H + H + j] : 0,
                         pf = c.peephole ? p[d * 3 * H + 2 * H + j] : 0;
            const double i = apply(a[0], clipped(wx(j, t, b) + rh(j, h) + pi * cell[j]));
            const double f = c.input_forget ? 1 - i
                                            : apply(a[0], clipped(wx(2 * H + j, t, b) + rh(2 * H + j, h) + pf * cell[j]));
            const double g = apply(a[1], clipped(wx(3 * H + j, t, b) + rh(3 * H + j, h)));
            next_c[j] = f * cell[j] + i * g;
            const double o = apply(a[0], clipped(wx(H + j, t, b) + rh(H + j, h) + po * next_c[j]));
            next[j] = o * apply(a[2], next_c[j]);
          }
        }
        h = next;
        if (G == 4) cell = next_c;
        for (int64_t j = 0; j < H; ++j) e.y[yi(t, d, b, j)] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        e.y_h[si(d, b, j)] = h[j];
        e.y_c[si(d, b, j)] = cell[j];
      }
    }
  }
  return e;
}

void expect_near(const Tensor& got, const Shape& shape, const std::vector<double>& want, DType dtype,
                 const std::string& what) {
  ASSERT_EQ(got.dtype(), dtype) << what;
  ASSERT_EQ(got.shape(), shape) << what;
  // Relative past magnitude 1: unbounded activations (Relu, Affine) may grow.
  const double tol = dtype == DType::Float32 ? 2e-5 : 1e-12;
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(element(got, i), want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
}

Node make_node(const Case& c) {
  Node node;
  node.op_type = c.op;
  node.name = "rec";
  node.inputs = {"x", "w", "r", c.bias ? "b" : "", c.lens.empty() ? "" : "lens", c.initial ? "h0" : ""};
  if (c.op == "LSTM") {
    node.inputs.push_back(c.initial ? "c0" : "");
    node.inputs.push_back(c.peephole ? "p" : "");
  }
  node.outputs = c.outputs;
  if (c.op != "LSTM" && node.outputs.size() > 2) node.outputs.resize(2);
  Attributes& at = node.attributes;
  at.set_string("direction", c.direction);
  at.set_int("hidden_size", c.hidden);
  if (c.layout) at.set_int("layout", c.layout);
  if (c.clip > 0) at.set_float("clip", c.clip);
  if (c.op == "GRU") at.set_int("linear_before_reset", c.linear_before_reset);
  if (c.op == "LSTM") at.set_int("input_forget", c.input_forget);
  if (!c.acts.empty()) {
    Attribute names;
    names.kind = Attribute::Kind::Strings;
    std::vector<float> alphas, betas;
    for (const Act& a : c.acts) {
      names.strings.push_back(a.name);
      if (takes_alpha(a.name)) alphas.push_back(a.alpha);
      if (takes_beta(a.name)) betas.push_back(a.beta);
    }
    at.set("activations", names);
    if (!alphas.empty()) at.set_floats("activation_alpha", alphas);
    if (!betas.empty()) at.set_floats("activation_beta", betas);
  }
  return node;
}

// Builds the node and random inputs for `c`, runs it and checks every output.
void check(const Case& c, unsigned seed = 7) {
  const int64_t S = c.seq, B = c.batch, I = c.input, H = c.hidden, G = gates_of(c.op);
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const Shape state = c.layout ? Shape{B, D, H} : Shape{D, B, H};
  std::mt19937 rng(seed);
  std::vector<std::vector<double>> values(8);
  std::vector<Tensor> tensors(8);
  tensors[0] = random_tensor(c.dtype, c.layout ? Shape{B, S, I} : Shape{S, B, I}, rng, values[0]);
  tensors[1] = random_tensor(c.dtype, {D, G * H, I}, rng, values[1]);
  tensors[2] = random_tensor(c.dtype, {D, G * H, H}, rng, values[2]);
  tensors[3] = random_tensor(c.dtype, {D, 2 * G * H}, rng, values[3]);
  tensors[4] = Tensor(DType::Int32, {B});
  for (size_t b = 0; b < c.lens.size(); ++b) tensors[4].data_as<int32_t>()[b] = c.lens[b];
  tensors[5] = random_tensor(c.dtype, state, rng, values[5]);
  tensors[6] = random_tensor(c.dtype, state, rng, values[6]);
  tensors[7] = random_tensor(c.dtype, {D, 3 * H}, rng, values[7]);

  const Node node = make_node(c);
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    inputs.push_back(node.inputs[i].empty() ? nullptr : &tensors[i]);
  const std::vector<Tensor> out = evaluate_node(node, c.opset, inputs);
  const Expected e = reference(c, values);

  const std::string what = c.op + " " + c.direction + " layout " + std::to_string(c.layout) +
                           " " + dtype_name(c.dtype);
  const Shape y_shape = c.layout ? Shape{B, S, D, H} : Shape{S, D, B, H};
  ASSERT_EQ(out.size(), node.outputs.size()) << what;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) {
      EXPECT_TRUE(out[i].empty()) << what << " output " << i << " should be absent";
      continue;
    }
    if (i == 0) expect_near(out[0], y_shape, e.y, c.dtype, what + " Y");
    if (i == 1) expect_near(out[1], state, e.y_h, c.dtype, what + " Y_h");
    if (i == 2) expect_near(out[2], state, e.y_c, c.dtype, what + " Y_c");
  }
}

const char* const kOps[] = {"RNN", "GRU", "LSTM"};
const char* const kDirections[] = {"forward", "reverse", "bidirectional"};

Case make_case(const std::string& op, const std::string& direction = "forward") {
  Case c;
  c.op = op;
  c.direction = direction;
  return c;
}

TEST(Recurrent, EveryOpAndDirectionMatchesReference) {
  for (const char* op : kOps)
    for (const char* dir : kDirections) check(make_case(op, dir));
}

TEST(Recurrent, SequenceLensZeroTheTailAndKeepTheLastValidState) {
  for (const char* op : kOps)
    for (const char* dir : kDirections) {
      Case c = make_case(op, dir);
      c.seq = 6, c.batch = 4, c.lens = {6, 3, 1, 0};
      check(c);
    }
}

TEST(Recurrent, BatchMajorLayoutMatchesReference) {
  for (const char* op : kOps)
    for (const char* dir : kDirections) {
      Case c = make_case(op, dir);
      c.seq = 4, c.batch = 2, c.layout = 1, c.lens = {2, 4};
      check(c);
    }
}

TEST(Recurrent, Float64MatchesReference) {
  for (const char* op : kOps) {
    Case c = make_case(op, "bidirectional");
    c.lens = {5, 2, 4}, c.dtype = DType::Float64, c.peephole = true;
    check(c);
  }
}

TEST(Recurrent, NoBiasNoInitialStateOddSizes) {
  for (const char* op : kOps) {
    Case c = make_case(op, "bidirectional");
    c.seq = 7, c.batch = 5, c.input = 9, c.hidden = 11, c.bias = false, c.initial = false;
    check(c);
  }
}

TEST(Recurrent, GruLinearBeforeReset) {
  for (const char* dir : kDirections) {
    Case c = make_case("GRU", dir);
    c.lens = {5, 4, 1}, c.linear_before_reset = 1;
    check(c);
  }
}

TEST(Recurrent, LstmPeepholesAndInputForget) {
  for (const char* dir : kDirections) {
    Case c = make_case("LSTM", dir);
    c.peephole = true;
    check(c);
    c.input_forget = 1;
    check(c);
  }
}

TEST(Recurrent, ClipBoundsThePreActivations) {
  for (const char* op : kOps) {
    Case c = make_case(op, "bidirectional");
    c.peephole = true, c.clip = 0.3f;  // small, so that it bites on most gates
    check(c);
  }
}

TEST(Recurrent, EveryActivationWithItsAlphaAndBeta) {
  const std::vector<Act> all = {{"Relu"},
                                {"Tanh"},
                                {"Sigmoid"},
                                {"Affine", 0.7f, -0.2f},
                                {"LeakyRelu", 0.3f},
                                {"ThresholdedRelu", 0.1f},
                                {"ScaledTanh", 1.5f, 0.8f},
                                {"HardSigmoid", 0.4f, 0.6f},
                                {"Elu", 0.9f},
                                {"Softsign"},
                                {"Softplus"}};
  // RNN takes one per direction: pair each with the next one for the reverse direction.
  for (size_t k = 0; k < all.size(); ++k) {
    Case c = make_case("RNN", "bidirectional");
    c.acts = {all[k], all[(k + 1) % all.size()]};
    check(c);
  }
  // LSTM takes three per direction, so alpha/beta lists interleave across functions.
  for (size_t k = 0; k < all.size(); k += 3) {
    Case c = make_case("LSTM", "bidirectional");
    c.peephole = true;
    for (size_t m = 0; m < 6; ++m) c.acts.push_back(all[(k + m) % all.size()]);
    check(c);
  }
  Case gru = make_case("GRU");
  gru.acts = {{"HardSigmoid", 0.3f, 0.4f}, {"ScaledTanh", 0.5f, 2.0f}};
  check(gru);
}

TEST(Recurrent, OneDirectionsActivationsServeBoth) {
  Case c = make_case("GRU", "bidirectional");
  c.acts = {{"HardSigmoid", 0.3f, 0.4f}, {"Softsign"}};
  Node node = make_node(c);
  std::mt19937 rng(5);
  std::vector<double> v;
  const Tensor x = random_tensor(DType::Float32, {5, 3, 4}, rng, v);
  const Tensor w = random_tensor(DType::Float32, {2, 9, 4}, rng, v);
  const Tensor r = random_tensor(DType::Float32, {2, 9, 3}, rng, v);
  node.inputs = {"x", "w", "r"};
  const Tensor one = evaluate_node(node, 22, {&x, &w, &r})[0];
  c.acts = {{"HardSigmoid", 0.3f, 0.4f}, {"Softsign"}, {"HardSigmoid", 0.3f, 0.4f}, {"Softsign"}};
  Node both = make_node(c);
  both.inputs = node.inputs;
  const Tensor two = evaluate_node(both, 22, {&x, &w, &r})[0];
  for (int64_t i = 0; i < one.numel(); ++i)
    ASSERT_EQ(one.data_as<float>()[i], two.data_as<float>()[i]) << i;
}

TEST(Recurrent, DefaultAlphaWhenListIsShort) {
  // LeakyRelu without activation_alpha takes the LeakyRelu operator's default 0.01.
  Case c = make_case("RNN");
  c.seq = 2, c.batch = 1, c.input = 2, c.bias = false, c.initial = false;
  c.acts = {{"LeakyRelu", 0.01f}};
  Node node = make_node(c);
  node.attributes.erase("activation_alpha");
  std::mt19937 rng(3);
  std::vector<double> xv, wv, rv;
  const Tensor x = random_tensor(DType::Float32, {2, 1, 2}, rng, xv);
  const Tensor w = random_tensor(DType::Float32, {1, 3, 2}, rng, wv);
  const Tensor r = random_tensor(DType::Float32, {1, 3, 3}, rng, rv);
  node.inputs = {"x", "w", "r"};
  const std::vector<Tensor> out = evaluate_node(node, 14, {&x, &w, &r});
  const Expected e = reference(c, {xv, wv, rv, {}, {}, {}, {}, {}});
  expect_near(out[0], {2, 1, 1, 3}, e.y, DType::Float32, "LeakyRelu default alpha");
}

TEST(Recurrent, OptionalOutputsMayBeAbsent) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"LSTM", {"", "y_h"}}, {"LSTM", {"y", "", "y_c"}}, {"GRU", {"y"}}, {"RNN", {"", "y_h"}}};
  for (const auto& [op, outputs] : cases) {
    Case c = make_case(op, "reverse");
    c.outputs = outputs;
    check(c);
  }
}

TEST(Recurrent, LayoutIsIgnoredBeforeOpset14) {
  // Opset 7 has no layout attribute: the node reads X as [seq, batch, input].
  Case c = make_case("GRU");
  c.opset = 7;
  check(c);
  Node node = make_node(c);
  node.attributes.set_int("layout", 1);
  std::mt19937 rng(1);
  std::vector<double> v;
  const Tensor x = random_tensor(DType::Float32, {5, 3, 4}, rng, v);
  const Tensor w = random_tensor(DType::Float32, {1, 9, 4}, rng, v);
  const Tensor r = random_tensor(DType::Float32, {1, 9, 3}, rng, v);
  node.inputs = {"x", "w", "r"};
  EXPECT_EQ(evaluate_node(node, 7, {&x, &w, &r})[0].shape(), (Shape{5, 1, 3, 3}));
}

TEST(Recurrent, BadInputsRaiseNamingTheNode) {
  Case c = make_case("LSTM");
  c.lens = {5, 9, 1};
  EXPECT_THROW(check(c), Error);  // sequence_lens past seq_length
  c.lens.clear();
  c.acts = {{"Tanh"}, {"Bogus"}, {"Tanh"}};
  EXPECT_THROW(check(c), Error);
  c.acts = {{"Tanh"}, {"Tanh"}};
  EXPECT_THROW(check(c), Error);  // LSTM needs three per direction
  std::mt19937 rng(2);
  std::vector<double> v;
  const Tensor x = random_tensor(DType::Float32, {5, 3, 4}, rng, v);
  const Tensor w = random_tensor(DType::Float32, {1, 12, 5}, rng, v);  // input size 5 != 4
  const Tensor r = random_tensor(DType::Float32, {1, 12, 3}, rng, v);
  Node node = make_node(make_case("LSTM"));
  node.inputs = {"x", "w", "r"};
  try {
    evaluate_node(node, 22, {&x, &w, &r});
    ADD_FAILURE() << "a W of the wrong input size was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rec"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("W"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
