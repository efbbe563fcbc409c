#include "conformance/cases.h"

#include <ember/core/error.h>

#include <onnx/onnx.pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace ember::conformance {

namespace {

struct ModelFacts {
  std::vector<std::string> ops;  // distinct op types in graph order
  std::string non_tensor_io;  // "sequence", "optional" or "map" when an input or output is one
  bool seeded = true;  // every node of a random op has a `seed` attribute
};

// Ops whose outputs are random draws, which ember runs (the other random ops are out
// of scope).
bool draws_random_values(const std::string& op) { return op == "Bernoulli" || op == "RandomUniformLike"; }

ModelFacts read_model_facts(const fs::path& model_path) {
  onnx::ModelProto model;
  std::ifstream in(model_path, std::ios::binary);
  if (!in || !model.ParseFromIstream(&in)) return {{"?"}, ""};
  ModelFacts facts;
  for (const auto& node : model.graph().node()) {
    if (std::find(facts.ops.begin(), facts.ops.end(), node.op_type()) == facts.ops.end())
      facts.ops.push_back(node.op_type());
    if (draws_random_values(node.op_type()))
      facts.seeded &= std::any_of(node.attribute().begin(), node.attribute().end(),
                                  [](const onnx::AttributeProto& a) { return a.name() == "seed"; });
  }
  for (const auto* list : {&model.graph().input(), &model.graph().output()})
    for (const auto& v : *list) {
      if (v.type().has_sequence_type()) facts.non_tensor_io = "sequence";
      if (v.type().has_optional_type()) facts.non_tensor_io = "optional";
      if (v.type().has_map_type()) facts.non_tensor_io = "map";
    }
  return facts;
}

// The categories ember does not aim to pass, by the op under test.
const std::map<std::string, std::string>& out_of_scope_ops() {
  static const std::map<std::string, std::string> ops = {
      {"Adagrad", "training op"},        {"Adam", "training op"},
      {"Momentum", "training op"},       {"Gradient", "training op"},
      {"RandomNormal", "random op"},     {"RandomNormalLike", "random op"},
      {"RandomUniform", "random op"},    {"RandomUniformLike", "random op"},
      {"Multinomial", "random op"},
  };
  return ops;
}

// A model is out of scope when any of its ops is (the simple set's Gradient models
// also hold an Add).
std::string scope_of(const std::string& name, const std::vector<std::string>& ops) {
  for (const auto& op : ops)
    if (auto it = out_of_scope_ops().find(op); it != out_of_scope_ops().end()) return it->second;
  if (name.find("training_mode") != std::string::npos) return "training mode";
  if (name.starts_with("test_training_dropout")) return "training mode";
  return "";
}

// "test_x_expanded" and "test_x_expanded_ver18" test the function body of test_x's op.
std::string unexpanded_name(const std::string& name) {
  const size_t at = name.rfind("_expanded");
  return at == std::string::npos ? name : name.substr(0, at);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

std::vector<Case> discover_cases(const std::string& data_dir, const std::string& set,
                                 const std::string& name_filter) {
  const fs::path root = fs::path(data_dir) / set;
  if (!fs::is_directory(root)) throw Error(root.string() + ": no such test set directory");
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());

  // Facts of every case (not only the filtered ones): an expanded case takes its op
  // from the case it expands.
  std::map<std::string, ModelFacts> facts;
  for (const auto& d : dirs) facts[d.filename().string()] = read_model_facts(d / "model.onnx");

  std::vector<Case> cases;
  for (const auto& d : dirs) {
    const std::string name = d.filename().string();
    if (name.find(name_filter) == std::string::npos) continue;
    const ModelFacts& own = facts[name];
    auto base = facts.find(unexpanded_name(name));
    const ModelFacts& tested = base != facts.end() ? base->second : own;
    Case c{set, name, d.string(), join(tested.ops, "+"), "", own.non_tensor_io};
    c.out_of_scope = scope_of(name, tested.ops);
    c.random_draws = std::any_of(tested.ops.begin(), tested.ops.end(), draws_random_values);
    c.seeded = own.seeded;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace ember::conformance
