// Tensor data stored beside the model (data_location EXTERNAL). The file name comes
// from the model, i.e. from whoever wrote it: it must stay inside the model's folder.
#include "loader/tensor_proto.h"

#include <ember/core/error.h>

#include <charconv>
#include <filesystem>
#include <fstream>

namespace ember {

namespace fs = std::filesystem;

namespace {

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};

int64_t parse_size(const std::string& text, const std::string& what) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw Error(what + " is '" + text + "', expected a non-negative integer");
  return v;
}

ExternalRef parse_ref(const onnx::TensorProto& p, const std::string& what) {
  ExternalRef ref;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") ref.location = kv.value();
    else if (kv.key() == "offset") ref.offset = parse_size(kv.value(), what + ": external offset");
    else if (kv.key() == "length") ref.length = parse_size(kv.value(), what + ": external length");
  }
  if (ref.location.empty()) throw Error(what + ": external data has no 'location'");
  return ref;
}

bool is_inside(const fs::path& folder, const fs::path& file) {
  auto [f, p] = std::mismatch(folder.begin(), folder.end(), file.begin(), file.end());
  // weakly_canonical keeps a trailing empty element for "dir/"; ignore it.
  return (f == folder.end() || (std::next(f) == folder.end() && f->empty())) && p != file.end();
}

// Resolves the location inside `base_dir`, following symlinks, or raises.
fs::path resolve(const std::string& location, const std::string& base_dir, const std::string& what) {
  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw Error(what + ": external data location '" + location +
                "' is an absolute path; it must be relative to the model's folder");
  if (base_dir.empty())
    throw Error(what + " is stored as external data in '" + location +
                "', but the model was loaded from memory and no base folder for external data was given");
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::absolute(base_dir), ec);
  const fs::path file = ec ? fs::path() : fs::weakly_canonical(folder / rel, ec);
  if (ec) throw Error(what + ": cannot resolve external data location '" + location + "': " + ec.message());
  if (!is_inside(folder, file))
    throw Error(what + ": external data location '" + location +
                "' points outside the model's folder (" + folder.string() + ")");
  return file;
}

}  // namespace

Tensor read_external_tensor(const onnx::TensorProto& p, const std::string& base_dir, DType dtype,
                            Shape shape) {
  const size_t length = dtype_bytes(dtype, shape_numel(shape));
  const std::string what = "tensor '" + p.name() + "'";
  const ExternalRef ref = parse_ref(p, what);
  const fs::path file = resolve(ref.location, base_dir, what);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error(what + ": external data file '" + ref.location + "' does not exist or is not a file");
  const auto size = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec) throw Error(what + ": cannot read external data file '" + ref.location + "'");
  const int64_t available = ref.offset <= size ? size - ref.offset : -1;
  const int64_t want = ref.length < 0 ? available : ref.length;
  if (available < 0 || want > available)
    throw Error(what + ": external data range [" + std::to_string(ref.offset) + ", " +
                std::to_string(ref.offset + std::max<int64_t>(want, 0)) + ") of '" + ref.location +
                "' is past its end (" + std::to_string(size) + " bytes)");
  if (want != static_cast<int64_t>(length))
    throw Error(what + ": external data has " + std::to_string(want) + " bytes, expected " +
                std::to_string(length) + " for its dtype and dims");
  Tensor t(dtype, std::move(shape));
  std::ifstream in(file, std::ios::binary);
  in.seekg(ref.offset);
  if (length && !in.read(t.data_as<char>(), static_cast<std::streamsize>(length)))
    throw Error(what + ": reading external data file '" + ref.location + "' failed");
  return t;
}

}  // namespace ember
