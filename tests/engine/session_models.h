// Small ONNX models for the Session API and stress tests, built as protobuf bytes (what
// Session::from_bytes takes): a Loop that runs as long as asked, an LSTM over a
// sequence of any length, and helpers to compare outputs bit for bit.
#pragma once

#include "loader/helpers.h"  // new_model, add_input, add_node, float_tensor, ...

#include <ember/ember.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace ember::test {

inline std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

inline Tensor random_float_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

inline Tensor int64_scalar(int64_t v) {
  Tensor t(DType::Int64, {});
  *t.data_as<int64_t>() = v;
  return t;
}

// A value of `elem_type` with no shape (a Loop body's inputs and outputs).
inline void add_unshaped(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
                         int elem_type) {
  auto* v = list->Add();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

inline void set_int_attribute(onnx::NodeProto* n, const std::string& name, int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// a_final = Loop M times: acc = (acc + float(i)) * 0.5, from a0 [d]. With `planned`, M
// is the length of the input `steps` [M] (known while planning: the Loop runs as a
// planned body); otherwise M is the int64 input `m` (known only at run time: the Loop
// runs eagerly). Inputs: a0, then steps or m.
inline std::string loop_model(bool planned) {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  g.set_name(planned ? "planned_loop" : "eager_loop");
  add_input(g, "a0", {"d"});
  if (planned) {
    add_input(g, "steps", {"M"});
    auto* zero = g.add_initializer();
    zero->set_name("zero");
    zero->set_data_type(onnx::TensorProto::INT64);
    zero->add_int64_data(0);
    add_node(g, "Shape", {"steps"}, {"steps_shape"});
    add_node(g, "Gather", {"steps_shape", "zero"}, {"m"});
  } else {
    auto* in = g.add_input();
    in->set_name("m");
    set_type(in, onnx::TensorProto::INT64, {});
  }
  add_output(g, "a_final", {"d"});

  onnx::GraphProto body;
  body.set_name("halving");
  add_unshaped(body.mutable_input(), "i", onnx::TensorProto::INT64);
  add_unshaped(body.mutable_input(), "c_in", onnx::TensorProto::BOOL);
  add_unshaped(body.mutable_input(), "acc", onnx::TensorProto::FLOAT);
  *body.add_initializer() = float_tensor("half", {1}, {0.5f});
  set_int_attribute(add_node(body, "Cast", {"i"}, {"fi"}), "to", onnx::TensorProto::FLOAT);
  add_node(body, "Add", {"acc", "fi"}, {"acc1"});
  add_node(body, "Mul", {"acc1", "half"}, {"acc2"});
  add_node(body, "Identity", {"c_in"}, {"c_out"});
  add_unshaped(body.mutable_output(), "c_out", onnx::TensorProto::BOOL);
  add_unshaped(body.mutable_output(), "acc2", onnx::TensorProto::FLOAT);

  auto* loop = add_node(g, "Loop", {"m", "", "a0"}, {"a_final"}, "loop");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  return m.SerializeAsString();
}

// The reference of loop_model after `trips` iterations.
inline Tensor loop_reference(const Tensor& a0, int64_t trips) {
  Tensor acc = a0.clone();
  for (int64_t i = 0; i < trips; ++i)
    for (int64_t k = 0; k < acc.numel(); ++k) {
      float& v = acc.data_as<float>()[k];
      v = (v + static_cast<float>(i)) * 0.5f;
    }
  return acc;
}

// Y_h = LSTM(X [seq, batch, input_size]) with `hidden` units and random weights; seq
// and batch are symbolic.
inline std::string lstm_model(int64_t input_size, int64_t hidden, uint32_t seed = 3) {
  onnx::ModelProto m = new_model(8, 17);
  auto& g = *m.mutable_graph();
  g.set_name("lstm");
  add_input(g, "X", {"seq", "batch", std::to_string(input_size)});
  add_output(g, "Y_h", {"1", "batch", std::to_string(hidden)});
  auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint32_t s) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    const Tensor t = random_float_tensor(Shape(dims.begin(), dims.end()), s);
    *g.add_initializer() = float_tensor(name, dims, std::vector<float>(t.data_as<float>(), t.data_as<float>() + n));
  };
  weights("W", {1, 4 * hidden, input_size}, seed);
  weights("R", {1, 4 * hidden, hidden}, seed + 1);
  weights("B", {1, 8 * hidden}, seed + 2);
  set_int_attribute(add_node(g, "LSTM", {"X", "W", "R", "B"}, {"", "Y_h"}, "lstm"), "hidden_size", hidden);
  return m.SerializeAsString();
}

}  // namespace ember::test
