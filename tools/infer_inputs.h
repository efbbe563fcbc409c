// The inputs infer makes when it is given no .npy files: random values of each input's
// dtype, in shapes the model declares, with its symbolic dims (or whole input shapes)
// set by --shape.
#pragma once

#include <ember/ember.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace infer {

// What --shape said: "batch=8,sequence=128" sets symbolic dims by name;
// "input_ids=1x128" sets one input's whole shape ("scalar" for rank 0).
struct ShapeChoices {
  std::map<std::string, int64_t> dims;
  std::map<std::string, ember::Shape> inputs;
};

// Parses every --shape argument (each a comma-separated list) against the session's
// inputs. Raises ember::Error naming an item that is neither an input nor a symbolic
// dim, or whose value is not a size.
ShapeChoices parse_shape_choices(const std::vector<std::string>& args, const ember::Session& session);

// The shape `input` gets: its --shape, else its declared dims with symbolic ones from
// --shape, the first from `batch` (when > 0), and any other 1; each dim so defaulted
// is added to `defaulted` ("sequence"), for the caller to say.
ember::Shape shape_for(const ember::ValueDesc& input, const ShapeChoices& choices, int batch,
                       std::vector<std::string>* defaulted);

// Random values that fit the input: floats uniform in [-1, 1); integers below the
// table they index (ValueDesc::index_bound), else 0 or 1 (masks, type ids); 8-bit
// integers over their whole range (pixels); booleans either way.
ember::Tensor random_input(const ember::ValueDesc& input, const ember::Shape& shape, std::mt19937& rng);

}  // namespace infer
