// What infer reads and writes: inputs named on the command line, outputs printed and
// saved as .npy. A model that passes sequences or optionals takes a sequence input as
// a folder of .npy files (0.npy, 1.npy, ... one per element, in order; an empty
// folder is an empty sequence) and an optional input left out as empty, and writes a
// sequence output as such a folder. Maps and sequences of maps (ZipMap's output,
// DictVectorizer's input) are JSON files instead (tools/infer_maps.h).
#pragma once

#include <ember/ember.h>

#include <string>
#include <vector>

namespace infer {

// The file or folder given for each input, in graph order ("" for one not given), from
// infer's arguments: "name=path" binds by name, a bare path takes the next input not
// yet given. Raises naming an unknown or repeated input, or one too many.
std::vector<std::string> input_paths(const ember::Session& session, const std::vector<std::string>& args);

// The .npy files of `paths` (input_paths) as tensors; raises naming a missing input.
std::vector<ember::Tensor> read_tensors(const ember::Session& session, const std::vector<std::string>& paths);

// True when an input or output of the model is a sequence or optional.
bool passes_values(const ember::Session& session);

// The inputs read from `paths` (input_paths), as their declared types say. Raises
// naming the input when its path does not fit its type, or a required one is missing.
std::vector<ember::Value> read_values(const ember::Session& session, const std::vector<std::string>& paths);

// One line per output, and with `output_dir`, DIR/<name>.npy per tensor and
// DIR/<name>/<i>.npy per sequence element (an empty optional writes nothing).
void show_values(const ember::Session& session, const std::vector<ember::Value>& outputs,
                 const std::string& output_dir);

// "[1, 3, batch]".
std::string format_dims(const std::vector<std::string>& dims);
// "float32 [2, 3]  mean ..." for a tensor; infer.cc's one-line summary.
std::string summarize(const ember::Tensor& t);
// An output name as a file name (every byte outside [A-Za-z0-9_-.] escaped as %XX).
std::string escape_file_name(const std::string& name);

}  // namespace infer
