// Classifiers with string class labels (classlabels_strings, what skl2onnx writes for a
// scikit-learn classifier fitted on string targets) become the same classifier over the
// labels' positions 0..K-1, its label output read through a Gather of the label strings.
// The classifier kernels keep their one int64 label path, and the strings follow by
// string movement (ops/string_movement.h). ZipMap takes its labels itself.
#include "graph/passes/passes.h"

#include <numeric>
#include <set>
#include <string>

namespace ember {

namespace {

// The attribute each classifier names its int64 labels with.
const char* int_labels_attribute(const Node& node) {
  if (node.domain != "ai.onnx.ml") return nullptr;
  if (node.op_type == "LinearClassifier" || node.op_type == "SVMClassifier") return "classlabels_ints";
  if (node.op_type == "TreeEnsembleClassifier") return "classlabels_int64s";
  return nullptr;
}

// `base` or `base_2`, `base_3`, ...: a name no value of the graph has yet.
std::string fresh_name(const Graph& graph, const std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 2; taken.count(name) || graph.initializers.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

}  // namespace

int lower_string_class_labels(Graph& graph) {
  std::set<std::string> taken;
  for (const Node& n : graph.nodes) taken.insert(n.outputs.begin(), n.outputs.end());
  for (const ValueInfo& v : graph.inputs) taken.insert(v.name);
  int lowered = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const char* ints = int_labels_attribute(graph.nodes[i]);
    if (!ints || !graph.nodes[i].attributes.has("classlabels_strings") || graph.nodes[i].attributes.has(ints)) continue;
    Node& classifier = graph.nodes[i];
    const std::vector<std::string> labels = classifier.attributes.get_strings_or("classlabels_strings", {});
    std::vector<int64_t> positions(labels.size());
    std::iota(positions.begin(), positions.end(), 0);
    classifier.attributes.erase("classlabels_strings");
    classifier.attributes.set_ints(ints, positions);
    if (classifier.outputs.empty() || classifier.outputs[0].empty()) continue;  // the label is not read

    Tensor table(DType::String, {static_cast<int64_t>(labels.size())});
    std::copy(labels.begin(), labels.end(), table.data_as<std::string>());
    const std::string table_name = fresh_name(graph, taken, classifier.outputs[0] + "_class_labels");
    const std::string index_name = fresh_name(graph, taken, classifier.outputs[0] + "_class_index");
    taken.insert({table_name, index_name});
    graph.initializers[table_name] = std::move(table);
    Node gather;
    gather.name = classifier.name + "_string_labels";
    gather.op_type = "Gather";
    gather.inputs = {table_name, index_name};
    gather.outputs = {classifier.outputs[0]};
    classifier.outputs[0] = index_name;
    graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(gather));
    if (graph.opset("") == 0) graph.opset_imports[""] = 13;  // a model of ai.onnx.ml alone
    ++lowered;
  }
  return lowered;
}

}  // namespace ember
