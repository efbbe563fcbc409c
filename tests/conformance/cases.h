// The ONNX backend test cases on disk: discovery, the op each case tests, and scope.
#pragma once

#include <string>
#include <vector>

namespace ember::conformance {

struct Case {
  std::string set;           // "node", "simple", "pytorch-converted", ...
  std::string name;          // "test_abs"
  std::string dir;           // holds model.onnx and test_data_set_*/
  std::string op;            // the op under test ("Conv"; "Conv+Relu" for multi-op models)
  std::string out_of_scope;  // why ember does not aim to pass it; empty when in scope
  std::string non_tensor_io; // "sequence", "optional", "map": a graph input or output
                             // the runner cannot read or compare (tensors only)
  // The op under test draws random values (Bernoulli): the expected outputs are one
  // draw, so the runner checks what a draw must satisfy instead of comparing values.
  bool random_draws = false;
  bool seeded = false;       // every random node of the model has a `seed`

  std::string id() const { return set + "/" + name; }
};

// Every case of `set` under `data_dir`/`set`, sorted by name; name_filter keeps
// the cases whose name contains it. Throws ember::Error when the set is missing.
std::vector<Case> discover_cases(const std::string& data_dir, const std::string& set,
                                 const std::string& name_filter);

}  // namespace ember::conformance
