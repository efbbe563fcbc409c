// Placement, copy insertion, memory plan and allocation-free runs, on the CPU and
// the test device, with small ops of a test domain registered here.
#include "engine/src/executor.h"
#include "engine/src/node_decisions.h"
#include "engine/src/planner.h"
#include "ops/registry.h"
#include "test_device.h"

#include <ember/core/error.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <new>
#include <random>

#include "allocation_counter.h"

namespace ember {
namespace {

constexpr const char* kDomain = "test.ops";

template <int Mul, int Add>
void affine(const RunArgs& a) {
  const Tensor& x = *a.inputs[0];
  float* y = a.outputs[0]->data_as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = x.data_as<float>()[i] * Mul + Add;
}

template <int Mul, int Add>
std::unique_ptr<Kernel> make_affine(KernelInit&, std::string*) {
  return std::make_unique<FunctionKernel>(&affine<Mul, Add>);
}

// On the test device the work goes through its stream, so it can be recorded.
template <int Mul, int Add>
void device_affine(const RunArgs& a) {
  testing::TestStream::launch(a, [x = a.inputs[0]->data_as<float>(), y = a.outputs[0]->data_as<float>(),
                                  n = a.inputs[0]->numel()] {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * Mul + Add;
  });
}

template <int Mul, int Add>
std::unique_ptr<Kernel> make_device_affine(KernelInit&, std::string*) {
  return std::make_unique<FunctionKernel>(&device_affine<Mul, Add>);
}

std::unique_ptr<Kernel> refuse(KernelInit&, std::string* why) {
  *why = "the test device lacks this op";
  return nullptr;
}

EMBER_SCHEMA("Scale2", kDomain, infer_same_as_input0);
EMBER_SCHEMA("AddOne", kDomain, infer_same_as_input0);
EMBER_SCHEMA("View", kDomain, infer_same_as_input0);
EMBER_KERNEL("Scale2", kDomain, 1, kMaxOpset, DeviceKind::Cpu, (make_affine<2, 0>));
EMBER_KERNEL("Scale2", kDomain, 1, kMaxOpset, DeviceKind::Test, (make_device_affine<2, 0>));
EMBER_KERNEL("AddOne", kDomain, 1, kMaxOpset, DeviceKind::Cpu, (make_affine<1, 1>));
EMBER_KERNEL("AddOne", kDomain, 1, kMaxOpset, DeviceKind::Test, refuse);
EMBER_KERNEL_FLAGS("View", kDomain, 1, kMaxOpset, DeviceKind::Test, (make_affine<1, 0>),
                   KernelFlags{.output_aliases_input0 = true});

// y = x + 1 on int64, on both devices: shape arithmetic when small.
void int_inc(const RunArgs& a) {
  for (int64_t i = 0; i < a.inputs[0]->numel(); ++i)
    a.outputs[0]->data_as<int64_t>()[i] = a.inputs[0]->data_as<int64_t>()[i] + 1;
}
std::unique_ptr<Kernel> make_int_inc(KernelInit&, std::string*) { return std::make_unique<FunctionKernel>(&int_inc); }
EMBER_SCHEMA("IntInc", kDomain, infer_same_as_input0);
EMBER_KERNEL("IntInc", kDomain, 1, kMaxOpset, DeviceKind::Cpu, make_int_inc);
EMBER_KERNEL("IntInc", kDomain, 1, kMaxOpset, DeviceKind::Test, make_int_inc);

// y = x[:n] with n an int64 input: a shape only the data can tell.
std::vector<TensorType> infer_take(const InferContext& ctx) {
  const int64_t n = *ctx.value(1).data_as<int64_t>();
  return {{ctx.input(0).dtype, {n}}};
}
void take(const RunArgs& a) {
  std::memcpy(a.outputs[0]->data(), a.inputs[0]->data(), a.outputs[0]->nbytes());
}
std::unique_ptr<Kernel> make_take(KernelInit&, std::string*) {
  return std::make_unique<FunctionKernel>(&take);
}
EMBER_SCHEMA("Take", kDomain, infer_take);
EMBER_KERNEL("Take", kDomain, 1, kMaxOpset, DeviceKind::Cpu, make_take);

// y = x + r, written over r where r dies here (as FusedConv's residual sum).
void add_into(const RunArgs& a) {
  for (int64_t i = 0; i < a.inputs[0]->numel(); ++i)
    a.outputs[0]->data_as<float>()[i] = a.inputs[0]->data_as<float>()[i] + a.inputs[1]->data_as<float>()[i];
}
std::unique_ptr<Kernel> make_add_into(KernelInit&, std::string*) { return std::make_unique<FunctionKernel>(&add_into); }
EMBER_SCHEMA("AddInto", kDomain, infer_same_as_input0);
EMBER_KERNEL_FLAGS("AddInto", kDomain, 1, kMaxOpset, DeviceKind::Cpu, make_add_into,
                   KernelFlags{.overwrites_input = 1});

// y = x + s[0], with s a value known at plan time whose Tensor the kernel keeps (as a
// kernel may keep a folded shape or index), read at every run.
class AddKeptScalar final : public Kernel {
 public:
  explicit AddKeptScalar(const Tensor* s) : s_(s) {}
  void run(const RunArgs& a) const override {
    const float s = static_cast<float>(s_->data_as<int64_t>()[0]);
    for (int64_t i = 0; i < a.inputs[0]->numel(); ++i)
      a.outputs[0]->data_as<float>()[i] = a.inputs[0]->data_as<float>()[i] + s;
  }

 private:
  const Tensor* s_;
};
std::unique_ptr<Kernel> make_add_kept_scalar(KernelInit& init, std::string* why) {
  if (!init.values[1]) {
    *why = "the scalar must be known at plan time";
    return nullptr;
  }
  return std::make_unique<AddKeptScalar>(init.values[1]);
}
EMBER_SCHEMA("AddKeptScalar", kDomain, infer_same_as_input0);
EMBER_KERNEL("AddKeptScalar", kDomain, 1, kMaxOpset, DeviceKind::Cpu, make_add_kept_scalar);

Node node(const char* op, std::vector<std::string> in, std::string out) {
  Node n;
  n.name = out + "_node";
  n.op_type = op;
  n.domain = kDomain;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

// A node of the standard domain.
Node onnx_node(const char* op, std::vector<std::string> in, std::string out) {
  Node n = node(op, std::move(in), std::move(out));
  n.domain = "";
  return n;
}

// x -> Scale2 -> a -> AddOne -> b -> View -> v -> Scale2 -> c ; Scale2(x) -> d
// outputs: c, a, d
Graph mixed_graph() {
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.nodes = {node("Scale2", {"x"}, "a"), node("AddOne", {"a"}, "b"), node("View", {"b"}, "v"),
             node("Scale2", {"v"}, "c"), node("Scale2", {"x"}, "d")};
  for (const char* out : {"c", "a", "d"}) g.outputs.push_back({out, DType::Float32, {}, false});
  return g;
}

struct Fixture {
  testing::TestBackend test_device;
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<Backend*> backends{&test_device, cpu.get()};
  WeightCache weights;
};

TEST(Planner, PlacesEachNodeOnThePreferredDeviceThatHasAKernel) {
  Fixture f;
  Graph g = mixed_graph();
  const std::vector<Shape> shapes = {{5}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  std::map<std::string, std::string> device_of;
  for (const auto& s : plan->steps) device_of[s.node_label] = s.device.to_string();
  EXPECT_EQ(device_of["Scale2 'a_node'"], "test:0");
  EXPECT_EQ(device_of["AddOne 'b_node'"], "cpu");  // the test device refuses it
  EXPECT_EQ(device_of["Scale2 'c_node'"], "test:0");
  EXPECT_EQ(device_of.count("View 'v_node'"), 0u) << "an alias op must not run";
  ASSERT_FALSE(plan->notes.empty());
  EXPECT_NE(plan->notes[0].find("the test device lacks this op"), std::string::npos);
}

TEST(Planner, InsertsOneCopyPerValueAndDevice) {
  Fixture f;
  Graph g = mixed_graph();
  const std::vector<Shape> shapes = {{5}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  std::map<std::string, int> copies;
  for (const auto& s : plan->steps)
    if (s.op_type == "Copy") ++copies[s.node_label];
  // x goes up once though two nodes read it; a comes down once for AddOne and is
  // then copied to its output on the host; b goes up for the View/Scale2; c and d
  // come down straight into their outputs.
  EXPECT_EQ(copies["copy 'x' cpu->test:0"], 1);
  EXPECT_EQ(copies["copy 'a' test:0->cpu"], 1);
  EXPECT_EQ(copies["copy 'a' cpu->output on cpu"], 1);
  EXPECT_EQ(copies["copy 'b' cpu->test:0"], 1);
  EXPECT_EQ(copies["copy 'c' test:0->output on cpu"], 1);
  EXPECT_EQ(copies["copy 'd' test:0->output on cpu"], 1);
  EXPECT_EQ(copies.size(), 6u);
  for (const auto& [label, n] : copies) EXPECT_EQ(n, 1) << label;
}

TEST(Planner, RunsAcrossDevicesWithTheRightResults) {
  Fixture f;
  Graph g = mixed_graph();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2, 2);
  Tensor x(DType::Float32, {7});
  for (int i = 0; i < 7; ++i) x.data_as<float>()[i] = dist(rng);
  const std::vector<Shape> shapes = {{7}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  std::vector<Tensor> outs = {Tensor(DType::Float32, {7}), Tensor(DType::Float32, {7}),
                              Tensor(DType::Float32, {7})};
  RunContext ctx(f.backends);
  ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{});
  for (int i = 0; i < 7; ++i) {
    const float xi = x.data_as<float>()[i];
    EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], (2 * xi + 1) * 2);
    EXPECT_FLOAT_EQ(outs[1].data_as<float>()[i], 2 * xi);
    EXPECT_FLOAT_EQ(outs[2].data_as<float>()[i], 2 * xi);
  }
}

TEST(Planner, InputsAndOutputsOnTheDeviceAreUsedThereWithoutHostCopies) {
  Fixture f;
  Graph g = mixed_graph();
  const Device test{DeviceKind::Test, 0};
  PlannerOptions options;
  options.input_devices = {test};
  options.output_devices = {test, test, test};
  auto plan = build_plan(g, std::vector<Shape>{{6}}, f.backends, f.weights, options);
  std::vector<std::string> copies;
  for (const auto& s : plan->steps)
    if (s.op_type == "Copy") copies.push_back(s.node_label);
  // Only AddOne's detour through the host remains.
  EXPECT_EQ(copies, (std::vector<std::string>{"copy 'a' test:0->cpu", "copy 'b' cpu->test:0"}));

  Tensor x(DType::Float32, {6});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 0.5f * i - 1;
  std::vector<Tensor> storage = {Tensor(DType::Float32, {6}), Tensor(DType::Float32, {6}), Tensor(DType::Float32, {6})};
  std::vector<Tensor> outs;
  for (Tensor& t : storage) outs.push_back(Tensor::view(DType::Float32, {6}, t.data(), test));
  const Tensor x_on_device = Tensor::view(DType::Float32, {6}, x.data(), test);
  RunContext ctx(f.backends);
  ctx.run(*plan, std::span<const Tensor>(&x_on_device, 1), outs, RunSettings{});
  for (int i = 0; i < 6; ++i) {
    const float xi = x.data_as<float>()[i];
    EXPECT_FLOAT_EQ(storage[0].data_as<float>()[i], (2 * xi + 1) * 2);
    EXPECT_FLOAT_EQ(storage[1].data_as<float>()[i], 2 * xi);
    EXPECT_FLOAT_EQ(storage[2].data_as<float>()[i], 2 * xi);
  }
}

// x -> Scale2 -> Scale2 -> Scale2 -> y, all on the device.
Graph device_chain() {
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.nodes = {node("Scale2", {"x"}, "a"), node("Scale2", {"a"}, "b"), node("Scale2", {"b"}, "y")};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(Executor, CapturedDeviceStepsReplayAndAreRecordedAgainWhenCallerBuffersMove) {
  Fixture f;
  Graph g = device_chain();
  auto plan = build_plan(g, std::vector<Shape>{{5}}, f.backends, f.weights, {});
  RunContext ctx(f.backends);
  RunSettings settings;
  settings.capture_graphs = true;
  Tensor x(DType::Float32, {5});
  std::vector<Tensor> outs = {Tensor(DType::Float32, {5})};
  for (int run = 0; run < 3; ++run) {
    for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = static_cast<float>(run * 10 + i);
    ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, settings);
    for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], 8.0f * (run * 10 + i)) << run;
  }
  // The upload and the download touch the host and run each time; the three
  // Scale2 steps between them ran as they are once (warm-up), were recorded on the
  // second run and replayed on the second and third.
  EXPECT_EQ(f.test_device.captures.load(), 1);
  EXPECT_EQ(f.test_device.replays.load(), 2);

  // Device-side caller buffers: a new input address means a new recording.
  PlannerOptions on_device;
  on_device.input_devices = {Device{DeviceKind::Test, 0}};
  on_device.output_devices = {Device{DeviceKind::Test, 0}};
  auto device_plan = build_plan(g, std::vector<Shape>{{5}}, f.backends, f.weights, on_device);
  Tensor x2(DType::Float32, {5}), y(DType::Float32, {5});
  std::vector<Tensor> device_outs = {Tensor::view(DType::Float32, {5}, y.data(), Device{DeviceKind::Test, 0})};
  for (Tensor* input : {&x, &x, &x2}) {
    for (int i = 0; i < 5; ++i) input->data_as<float>()[i] = static_cast<float>(i + 1) * (input == &x2 ? -1 : 1);
    const Tensor in = Tensor::view(DType::Float32, {5}, input->data(), Device{DeviceKind::Test, 0});
    ctx.run(*device_plan, std::span<const Tensor>(&in, 1), device_outs, settings);
    for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y.data_as<float>()[i], 8.0f * input->data_as<float>()[i]);
  }
  EXPECT_EQ(f.test_device.captures.load(), 3);  // 1 above; x after its warm-up run, then x2
  EXPECT_EQ(f.test_device.replays.load(), 4);
}

TEST(Planner, SmallIntegerArithmeticOnHostValuesStaysOnTheHost) {
  Fixture f;
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"s", DType::Int64, {{-1, "n"}}, true});
  g.nodes = {node("IntInc", {"s"}, "t")};
  g.outputs.push_back({"t", DType::Int64, {}, false});
  auto small = build_plan(g, std::vector<Shape>{{4}}, f.backends, f.weights, {});
  EXPECT_EQ(small->node_steps_on(Device{}), 1u);
  ASSERT_FALSE(small->notes.empty());
  EXPECT_NE(small->notes[0].find("shape arithmetic stays on the host"), std::string::npos) << small->notes[0];
  // A large integer tensor is data, not a shape: it goes to the preferred device.
  auto large = build_plan(g, std::vector<Shape>{{5000}}, f.backends, f.weights, {});
  EXPECT_EQ(large->node_steps_on(Device{DeviceKind::Test, 0}), 1u);
}

TEST(Planner, ArenaValuesLiveAtTheSameTimeDoNotOverlap) {
  Fixture f;
  Graph g = mixed_graph();
  const std::vector<Shape> shapes = {{1000}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  std::vector<int> first(plan->values.size(), -1), last(plan->values.size(), -1);
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    for (int id : plan->steps[s].outputs)
      if (first[id] < 0) first[id] = static_cast<int>(s);
    for (int id : plan->steps[s].inputs) last[id] = static_cast<int>(s);
  }
  for (size_t i = 0; i < plan->values.size(); ++i)
    for (size_t j = i + 1; j < plan->values.size(); ++j) {
      const auto &a = plan->values[i], &b = plan->values[j];
      if (a.storage != Storage::Arena || b.storage != Storage::Arena || !(a.device == b.device)) continue;
      if (a.alias_of >= 0 || b.alias_of >= 0 || first[i] < 0 || first[j] < 0) continue;
      if (first[i] > std::max(first[j], last[j]) || first[j] > std::max(first[i], last[i])) continue;
      EXPECT_TRUE(a.offset + 4000 <= b.offset || b.offset + 4000 <= a.offset)
          << a.name << " and " << b.name << " share bytes while both alive";
    }
  EXPECT_GT(plan->arena_size(Device{DeviceKind::Test, 0}), 0u);
}

// x -> Scale2 -> a, x -> AddOne -> r, AddInto(a, r) -> s -> Scale2 -> y; with
// `r_read_later`, AddOne(r) -> z as well.
Graph add_into_graph(bool r_read_later) {
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.nodes = {node("Scale2", {"x"}, "a"), node("AddOne", {"x"}, "r"), node("AddInto", {"a", "r"}, "s"),
             node("Scale2", {"s"}, "y")};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  if (r_read_later) {
    g.nodes.push_back(node("AddOne", {"r"}, "z"));
    g.outputs.push_back({"z", DType::Float32, {}, false});
  }
  return g;
}

TEST(Planner, AnOutputTakesTheBytesOfAnInputThatDiesAtItsNode) {
  Fixture f;
  const std::vector<Backend*> cpu_only{f.cpu.get()};
  for (bool r_read_later : {false, true}) {
    SCOPED_TRACE(r_read_later ? "r read later" : "r dies at AddInto");
    auto plan = build_plan(add_into_graph(r_read_later), std::vector<Shape>{{5}}, cpu_only, f.weights, {});
    const PlannedValue *r = nullptr, *s = nullptr;
    for (const PlannedValue& v : plan->values) {
      if (v.name == "r") r = &v;
      if (v.name == "s") s = &v;
    }
    ASSERT_TRUE(r && s);
    EXPECT_EQ(s->offset == r->offset, !r_read_later);
    Tensor x(DType::Float32, {5});
    for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = 0.5f * i - 1;
    std::vector<Tensor> outs;
    for (size_t i = 0; i < plan->output_values.size(); ++i) outs.emplace_back(DType::Float32, Shape{5});
    RunContext ctx(cpu_only);
    ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{});
    for (int i = 0; i < 5; ++i) {
      const float xi = x.data_as<float>()[i];
      EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], 2 * (2 * xi + xi + 1));
      if (r_read_later) EXPECT_FLOAT_EQ(outs[1].data_as<float>()[i], xi + 2) << "r was overwritten";
    }
  }
}

// ResNet's blocks: the residual is read first by the block's own layers, then by the
// sum that ends the block; each sum is its input's last reader, so it writes over it,
// and the next block's sum over that: x -> AddOne -> r, Scale2(r) -> a, AddInto(a, r)
// -> s, Scale2(s) -> b, AddInto(b, s) -> t, Scale2(t) -> y = 18 (x + 1).
TEST(Planner, EachSumOfAResidualChainTakesTheBytesOfTheResidualItReadsLast) {
  Fixture f;
  const std::vector<Backend*> cpu_only{f.cpu.get()};
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.nodes = {node("AddOne", {"x"}, "r"), node("Scale2", {"r"}, "a"), node("AddInto", {"a", "r"}, "s"),
             node("Scale2", {"s"}, "b"), node("AddInto", {"b", "s"}, "t"), node("Scale2", {"t"}, "y")};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  auto plan = build_plan(g, std::vector<Shape>{{5}}, cpu_only, f.weights, {});
  std::map<std::string, size_t> offset;
  for (const PlannedValue& v : plan->values) offset[v.name] = v.offset;
  EXPECT_EQ(offset["s"], offset["r"]);
  EXPECT_EQ(offset["t"], offset["r"]);
  EXPECT_NE(offset["a"], offset["r"]) << "r is read after a is written";
  Tensor x(DType::Float32, {5});
  for (int i = 0; i < 5; ++i) x.data_as<float>()[i] = 0.5f * i - 1;
  std::vector<Tensor> outs{Tensor(DType::Float32, {5})};
  RunContext ctx(cpu_only);
  ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{});
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], 18 * (x.data_as<float>()[i] + 1));
}

// An elementwise Mul writes over whichever input has its shape and dies there: a
// squeeze-excite's Mul(scale, x) takes x's bytes (input 1; input 0 is broadcast), and
// takes nothing while x has a reader after it. x -> AddOne -> r, Mul(s, r) -> m,
// Scale2(m) -> y = 2 s (x + 1); with r also read last by Scale2(r) -> z.
TEST(Planner, AnElementwiseMulWritesOverTheInputOfItsShapeItReadsLast) {
  Fixture f;
  const std::vector<Backend*> cpu_only{f.cpu.get()};
  for (bool r_read_later : {false, true}) {
    SCOPED_TRACE(r_read_later ? "r read later" : "r dies at the Mul");
    Graph g;
    g.opset_imports[kDomain] = 1;
    g.opset_imports[""] = 17;
    g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
    g.inputs.push_back({"s", DType::Float32, {{1, ""}}, true});
    Node mul = node("Mul", {"s", "r"}, "m");
    mul.domain = "";
    g.nodes = {node("AddOne", {"x"}, "r"), mul, node("Scale2", {"m"}, "y")};
    g.outputs.push_back({"y", DType::Float32, {}, false});
    if (r_read_later) {
      g.nodes.push_back(node("Scale2", {"r"}, "z"));
      g.outputs.push_back({"z", DType::Float32, {}, false});
    }
    auto plan = build_plan(g, std::vector<Shape>{{6}, {1}}, cpu_only, f.weights, {});
    std::map<std::string, size_t> offset;
    for (const PlannedValue& v : plan->values) offset[v.name] = v.offset;
    if (r_read_later) EXPECT_NE(offset["m"], offset["r"]) << "r is read after the Mul";
    else EXPECT_EQ(offset["m"], offset["r"]);
    Tensor x(DType::Float32, {6}), scale(DType::Float32, {1});
    for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 0.5f * i - 1;
    scale.data_as<float>()[0] = 3.f;
    std::vector<Tensor> ins{x, scale};
    std::vector<Tensor> outs{Tensor(DType::Float32, {6})};
    if (r_read_later) outs.emplace_back(DType::Float32, Shape{6});
    RunContext ctx(cpu_only);
    ctx.run(*plan, ins, outs, RunSettings{});
    for (int i = 0; i < 6; ++i) {
      const float xi = x.data_as<float>()[i];
      EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], 6 * (xi + 1));
      if (r_read_later) EXPECT_FLOAT_EQ(outs[1].data_as<float>()[i], 2 * (xi + 1)) << "r was overwritten";
    }
  }
}

TEST(Executor, SteadyStateRunAllocatesNothing) {
  Fixture f;
  Graph g = mixed_graph();
  Tensor x(DType::Float32, {64});
  const std::vector<Shape> shapes = {{64}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  std::vector<Tensor> outs = {Tensor(DType::Float32, {64}), Tensor(DType::Float32, {64}),
                              Tensor(DType::Float32, {64})};
  RunContext ctx(f.backends);
  ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{});  // binds: allocates
  const int arenas_before = f.test_device.allocations;
  const int allocations = testing::count_allocations(
      [&] { for (int i = 0; i < 3; ++i) ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{}); });
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(f.test_device.allocations, arenas_before);
}

// A Cast to the type its input has is its input (kToItsOwnType): no step, the same
// bytes. One that changes the type runs, as does one whose output is a graph output.
TEST(Planner, ACastToItsOwnTypeIsItsInput) {
  Fixture f;
  auto cast = [](const char* in, const char* out, DType to) {
    Node n = node("Cast", {in}, out);
    n.domain.clear();
    n.attributes.set_int("to", static_cast<int64_t>(to));
    return n;
  };
  Graph g;
  g.opset_imports[""] = 13;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {{4}}, true});
  g.nodes = {cast("x", "same", DType::Float32), node("Scale2", {"same"}, "c"), cast("c", "wide", DType::Float64),
             cast("x", "out", DType::Float32)};
  for (const char* out : {"c", "wide", "out"}) g.outputs.push_back({out, DType::Undefined, {}, false});
  const std::vector<Shape> shapes = {{4}};
  std::vector<Backend*> cpu_only = {f.cpu.get()};
  auto plan = build_plan(g, shapes, cpu_only, f.weights, {});
  std::vector<std::string> labels;
  for (const auto& s : plan->steps) labels.push_back(s.node_label);
  EXPECT_EQ(labels, (std::vector<std::string>{"Scale2 'c_node'", "Cast 'wide_node'", "Cast 'out_node'"}));

  Tensor x(DType::Float32, {4});
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = 1.5f * i - 2.f;
  std::vector<Tensor> outs = {Tensor(DType::Float32, {4}), Tensor(DType::Float64, {4}), Tensor(DType::Float32, {4})};
  RunContext ctx(cpu_only);
  ctx.run(*plan, std::span<const Tensor>(&x, 1), outs, RunSettings{});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(outs[0].data_as<float>()[i], 2.f * x.data_as<float>()[i]);
    EXPECT_EQ(outs[1].data_as<double>()[i], 2.0 * x.data_as<float>()[i]);
    EXPECT_EQ(outs[2].data_as<float>()[i], x.data_as<float>()[i]);
  }
}

TEST(Planner, UnsupportedOpsAreListedAllAtOnce) {
  Fixture f;
  Graph g = mixed_graph();
  g.source = "m.onnx";
  g.nodes.push_back(node("Mystery", {"x"}, "m1"));
  g.nodes.push_back(node("Enigma", {"x"}, "m2"));
  try {
    check_supported(g, f.backends);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("m.onnx: 2 node(s)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Mystery 'm1_node'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Enigma 'm2_node'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(Planner, NodesAfterADataDependentShapeRunEagerly) {
  Fixture f;
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  g.inputs.push_back({"n", DType::Int64, {}, false});
  g.nodes = {node("Scale2", {"x"}, "a"), node("Take", {"a", "n"}, "t"), node("AddOne", {"t"}, "y")};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  g.outputs.push_back({"a", DType::Float32, {}, false});
  const std::vector<Shape> shapes = {{6}, {}};
  auto plan = build_plan(g, shapes, f.backends, f.weights, {});
  ASSERT_EQ(plan->eager.size(), 2u);
  EXPECT_EQ(plan->eager[0].node->op_type, "Take");
  EXPECT_TRUE(plan->output_is_eager[0]);
  EXPECT_FALSE(plan->output_is_eager[1]);

  Tensor x(DType::Float32, {6}), n(DType::Int64, {});
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 0.5f * i - 1;
  RunContext ctx(f.backends);
  for (int64_t count : {4, 2}) {  // one plan, different data-dependent shapes
    *n.data_as<int64_t>() = count;
    std::vector<Tensor> inputs = {x, n};
    std::vector<Tensor> outs = {Tensor(), Tensor(DType::Float32, {6})};
    ctx.run(*plan, inputs, outs, RunSettings{});
    ASSERT_EQ(outs[0].shape(), (Shape{count}));
    for (int64_t i = 0; i < count; ++i)
      EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], 2 * x.data_as<float>()[i] + 1);
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(outs[1].data_as<float>()[i], 2 * x.data_as<float>()[i]);
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// y = a + b on the test device (it reads a folded value next to a computed one).
void device_add(const RunArgs& a) {
  testing::TestStream::launch(a, [x = a.inputs[0]->data_as<float>(), z = a.inputs[1]->data_as<float>(),
                                  y = a.outputs[0]->data_as<float>(), n = a.outputs[0]->numel()] {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + z[i];
  });
}
std::unique_ptr<Kernel> make_device_add(KernelInit&, std::string*) {
  return std::make_unique<FunctionKernel>(&device_add);
}
EMBER_SCHEMA("AddXY", kDomain, infer_same_as_input0);
EMBER_KERNEL("AddXY", kDomain, 1, kMaxOpset, DeviceKind::Test, make_device_add);

// A value folded at plan time from the input shapes (ConstantOfShape(Shape(x))) and
// read on the device differs from one plan to the next: each plan uploads its own.
TEST(Planner, FoldedValuesReadOnTheDeviceAreUploadedPerPlan) {
  Fixture f;
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.nodes = {onnx_node("Shape", {"x"}, "s"), onnx_node("ConstantOfShape", {"s"}, "zeros"),
             node("AddXY", {"x", "zeros"}, "y")};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  for (int64_t n : {3, 5}) {
    auto plan = build_plan(g, std::vector<Shape>{{n}}, f.backends, f.weights, {});
    bool checked = false;
    for (const PlannedStep& step : plan->steps) {
      if (step.op_type != "AddXY") continue;
      const PlannedValue& v = plan->values[step.inputs[1]];
      ASSERT_EQ(v.device, (Device{DeviceKind::Test, 0}));
      ASSERT_EQ(v.storage, Storage::Constant);
      EXPECT_EQ(v.constant->shape(), (Shape{n}));
      checked = true;
    }
    EXPECT_TRUE(checked);
  }
}

// x [n], y [m]: Scale2(x) -> a; AddKeptScalar(a, s) -> b; Scale2(y) -> c, outputs b
// and c. s = Shape(ConstantOfShape(2048)) = [2048], folded at plan time; the 8 KiB
// zeros it is the shape of make a value too large to key a decision with, so each
// plan folds its own s, while AddKeptScalar's decision (keyed by s's bytes) is shared.
Graph two_input_graph() {
  Graph g;
  g.opset_imports[kDomain] = 1;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {{-1, "n"}}, true});
  g.inputs.push_back({"y", DType::Float32, {{-1, "m"}}, true});
  Tensor length(DType::Int64, {1});
  length.data_as<int64_t>()[0] = 2048;
  g.initializers["length"] = length;
  g.nodes = {onnx_node("ConstantOfShape", {"length"}, "zeros"), onnx_node("Shape", {"zeros"}, "s"),
             node("Scale2", {"x"}, "a"), node("AddKeptScalar", {"a", "s"}, "b"), node("Scale2", {"y"}, "c")};
  for (const char* out : {"b", "c"}) g.outputs.push_back({out, DType::Float32, {}, false});
  return g;
}

const PlannedStep& step_named(const Plan& plan, const std::string& label) {
  for (const PlannedStep& step : plan.steps)
    if (step.node_label == label) return step;
  throw Error("no step " + label);
}

// A new set of input shapes re-plans only the nodes whose inputs changed: the others
// take the earlier plan's kernel objects and folded values.
TEST(Planner, NodesWhoseInputsAreUnchangedShareTheEarlierPlansDecisions) {
  Fixture f;
  Backend* cpu[] = {f.cpu.get()};
  Graph g = two_input_graph();
  NodeDecisions decisions;
  auto first = build_plan(g, std::vector<Shape>{{3}, {4}}, cpu, f.weights, {}, &decisions);
  auto second = build_plan(g, std::vector<Shape>{{3}, {5}}, cpu, f.weights, {}, &decisions);
  auto third = build_plan(g, std::vector<Shape>{{6}, {5}}, cpu, f.weights, {}, &decisions);
  auto kernel = [&](const Plan& p, const char* label) { return step_named(p, label).kernel_impl.get(); };
  EXPECT_EQ(kernel(*first, "Scale2 'a_node'"), kernel(*second, "Scale2 'a_node'"));
  EXPECT_EQ(kernel(*first, "AddKeptScalar 'b_node'"), kernel(*second, "AddKeptScalar 'b_node'"));
  EXPECT_NE(kernel(*first, "Scale2 'c_node'"), kernel(*second, "Scale2 'c_node'")) << "y's shape changed";
  EXPECT_NE(kernel(*second, "AddKeptScalar 'b_node'"), kernel(*third, "AddKeptScalar 'b_node'")) << "x's changed";
  EXPECT_EQ(kernel(*second, "Scale2 'c_node'"), kernel(*third, "Scale2 'c_node'"));
  ASSERT_EQ(first->folded.size(), 2u);  // the zeros, s
  EXPECT_EQ(first->folded[0], second->folded[0]) << "the zeros folded once for both";
  EXPECT_NE(first->folded[1], second->folded[1]) << "s folded per plan (its input makes no key)";

  // The kernel the first plan made keeps the s that plan folded: the second plan, which
  // runs that kernel, keeps it alive once the first is gone. Tensors of s's size made
  // meanwhile would take its freed bytes.
  first.reset();
  decisions.forget_unused();
  std::vector<Tensor> reusing_freed_bytes;
  for (int i = 0; i < 16; ++i) {
    reusing_freed_bytes.emplace_back(DType::Int64, Shape{1});
    reusing_freed_bytes.back().data_as<int64_t>()[0] = -100;
  }
  Tensor x(DType::Float32, {3}), y(DType::Float32, {5});
  for (int i = 0; i < 3; ++i) x.data_as<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 5; ++i) y.data_as<float>()[i] = 0.25f * static_cast<float>(i) + 0.5f;
  const Tensor inputs[] = {x, y};
  std::vector<Tensor> outs = {Tensor(DType::Float32, {3}), Tensor(DType::Float32, {5})};
  RunContext ctx(cpu);
  ctx.run(*second, inputs, outs, RunSettings{});
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(outs[0].data_as<float>()[i], x.data_as<float>()[i] * 2 + 2048);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(outs[1].data_as<float>()[i], y.data_as<float>()[i] * 2);
}

// A decision lives as long as a plan holds it; the memo then forgets it.
TEST(Planner, DecisionsNoPlanHoldsAreForgotten) {
  Fixture f;
  Backend* cpu[] = {f.cpu.get()};
  Graph g = two_input_graph();
  NodeDecisions decisions;
  for (int64_t m = 1; m <= 64; ++m) {
    auto plan = build_plan(g, std::vector<Shape>{{3}, {m}}, cpu, f.weights, {}, &decisions);
    decisions.forget_unused();
  }
  // Each plan died before the next was made: the memo holds at most the last plan's
  // four keyed decisions and what was added since it last walked (it walks once doubled).
  EXPECT_LE(decisions.size(), 8u);
}

}  // namespace
}  // namespace ember
