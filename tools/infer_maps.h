// Maps in and out of infer as JSON (a map is no array, so no .npy can hold it): a map
// is an object {"key": value, ...} (int64 keys as their decimal text, as JSON keys are
// text), a sequence of maps an array of such objects. ZipMap's output, for instance:
// [{"0": 0.9, "1": 0.1}, {"0": 0.2, "1": 0.8}].
#pragma once

#include <ember/ember.h>

#include <string>

namespace infer {

// True when `v` is a map or a sequence holding maps.
bool holds_maps(const ember::Value& v);
// `v` (maps, sequences of them, tensors of one element inside) as JSON text.
std::string maps_to_json(const ember::Value& v);
// The input `d` (a map or a sequence of maps, by its declared type) from a .json file;
// raises naming the file and what in it does not fit.
ember::Value read_map_input(const ember::ValueDesc& d, const std::string& path);

}  // namespace infer
